"""ComputeDriver selection: ``OCC_COMPUTE_DRIVER`` names the driver every process uses.

One driver object per process and configuration: drivers hold no OCC state, but the fake
keeps its scripted world (a file under the data directory, or memory) and the local driver
its process supervision.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from pathlib import Path

from django.conf import settings

from occ.drivers.compute.base import (
    CHAT_GATEWAY_NOT_RUNNING,
    CHAT_MODEL_REFUSED,
    CHAT_TIMEOUT,
    CHAT_UNSUPPORTED,
    AgentRef,
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
)
from occ.errors import DependencyUnavailable

# Driver id -> the module that defines it (imported only when selected).
DRIVER_MODULES: dict[str, str] = {
    "fake": "occ.drivers.compute.fake",
    "local": "occ.drivers.compute.local",
    "kubernetes": "occ.drivers.kube.compute",
}

_instances: dict[tuple[str, str], ComputeDriver] = {}
_lock = threading.Lock()


class ComputeUnavailable(DependencyUnavailable):
    default_message = "The compute backend is unavailable. Try again shortly."


def _driver_class(driver_id: str) -> type[ComputeDriver]:
    """The one concrete ComputeDriver defined in the driver's module."""
    module_name = DRIVER_MODULES.get(driver_id)
    if module_name is None:
        raise ComputeUnavailable(f"The compute driver {driver_id} is not available in this installation.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ComputeUnavailable() from exc
    found = [
        obj for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, ComputeDriver) and not inspect.isabstract(obj)
        and obj.__module__ == module.__name__ and getattr(obj, "driver_id", None) == driver_id
    ]
    if len(found) != 1:
        raise ComputeUnavailable()
    return found[0]


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
    state_file = _fake_state_file() if chosen == "fake" else None
    cache_key = (chosen, str(state_file or ""))
    with _lock:
        driver = _instances.get(cache_key)
        if driver is None:
            driver_class = _driver_class(chosen)
            driver = driver_class(state_file=state_file) if state_file else driver_class()  # type: ignore[call-arg]
            _instances[cache_key] = driver
    return driver


def forget_compute_drivers() -> None:
    """Drop the cached driver objects (tests that switch drivers or state files)."""
    with _lock:
        _instances.clear()


__all__ = [
    "CHAT_GATEWAY_NOT_RUNNING",
    "CHAT_MODEL_REFUSED",
    "CHAT_TIMEOUT",
    "CHAT_UNSUPPORTED",
    "DRIVER_MODULES",
    "FAKE_STATE_IN_MEMORY",
    "AgentRef",
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
    "forget_compute_drivers",
    "get_compute_driver",
]
