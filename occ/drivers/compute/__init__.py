"""ComputeDriver selection: ``OCC_COMPUTE_DRIVER`` names the driver every process uses.

One driver object per process and configuration: drivers hold no OCC state, but the fake
keeps its scripted world (a file under the data directory, or memory) and the local driver
its process supervision.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from occ.driver_registry import DriverRegistry, UnknownDriver
from occ.drivers.compute.base import (
    CHAT_GATEWAY_NOT_RUNNING,
    CHAT_MODEL_REFUSED,
    CHAT_TIMEOUT,
    CHAT_UNSUPPORTED,
    RUNTIME_CRASH_LOOP,
    VERIFY_CODES,
    AgentRef,
    CandidateVerdict,
    ChatMessage,
    ComputeDriver,
    ComputeError,
    ComputeUnknownOutcome,
    CredentialObservation,
    DiagnosticCheck,
    NamespaceRef,
    NamespaceResult,
    Readiness,
    RestartDue,
    RevisionContext,
    RevisionRef,
    SecretReference,
    SmokeConversation,
)
from occ.errors import DependencyUnavailable

COMPUTE_DRIVERS: DriverRegistry[ComputeDriver] = DriverRegistry({
    "fake": "occ.drivers.compute.fake.FakeCompute",
    "local": "occ.drivers.compute.local.LocalComputeDriver",
    "kubernetes": "occ.drivers.kube.compute.KubernetesComputeDriver",
})


class ComputeUnavailable(DependencyUnavailable):
    default_message = "The compute backend is unavailable. Try again shortly."


# The value of OCC_FAKE_COMPUTE_STATE that keeps the fake's world in process memory.
FAKE_STATE_IN_MEMORY = "memory"
FAKE_STATE_DEFAULT = "fake-compute.json"


def _fake_state_file() -> Path | None:
    """Where the fake keeps its world: a file under the data directory unless the setting
    says ``memory``. Durable by default, so a killed worker's successor knows what it made."""
    configured = getattr(settings, "OCC_FAKE_COMPUTE_STATE", "") or FAKE_STATE_DEFAULT
    if configured == FAKE_STATE_IN_MEMORY:
        return None
    path = Path(configured)
    return path if path.is_absolute() else Path(settings.OCC_DATA_DIR) / path


def get_compute_driver(driver_id: str | None = None) -> ComputeDriver:
    """The driver named ``driver_id``, or the configured one."""
    chosen = driver_id or settings.OCC_COMPUTE_DRIVER
    arguments = {"state_file": _fake_state_file()} if chosen == "fake" else {}
    try:
        return COMPUTE_DRIVERS.get(chosen, **arguments)
    except UnknownDriver:
        raise ComputeUnavailable(f"The compute driver {chosen} is not available in this installation.") from None
    except ImportError as exc:
        raise ComputeUnavailable() from exc


def forget_compute_drivers() -> None:
    """Drop the cached driver objects (tests that switch drivers or state files)."""
    COMPUTE_DRIVERS.forget()


__all__ = [
    "CHAT_GATEWAY_NOT_RUNNING",
    "CHAT_MODEL_REFUSED",
    "CHAT_TIMEOUT",
    "CHAT_UNSUPPORTED",
    "COMPUTE_DRIVERS",
    "FAKE_STATE_IN_MEMORY",
    "RUNTIME_CRASH_LOOP",
    "VERIFY_CODES",
    "AgentRef",
    "CandidateVerdict",
    "ChatMessage",
    "ComputeDriver",
    "ComputeError",
    "ComputeUnavailable",
    "ComputeUnknownOutcome",
    "CredentialObservation",
    "DiagnosticCheck",
    "NamespaceRef",
    "NamespaceResult",
    "Readiness",
    "RestartDue",
    "RevisionContext",
    "RevisionRef",
    "SecretReference",
    "SmokeConversation",
    "forget_compute_drivers",
    "get_compute_driver",
]
