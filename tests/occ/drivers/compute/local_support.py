"""Shared helpers for the local ComputeDriver tests: a world of Secrets and an Agent, revision
references, and cleanup of every gateway process a test started (by PID, verified)."""

from __future__ import annotations

import hashlib
import os
import random
import sys
from pathlib import Path
from typing import Any

from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.base import RevisionContext, RevisionRef, SecretReference
from occ.drivers.compute.local import GATEWAY_TITLES, GatewayRecord, LocalComputeDriver
from occ.ids import IdPrefix, new_id
from occ.models import Secret
from occ.runtime import Runtime

STUB = Path(__file__).with_name("stub_gateway.py")
MODEL_KEY = "sk-model-key-never-on-disk-7f3a"
TOOL_TOKEN = "tool-token-never-on-disk-91c2"


class StubRuntime(Runtime):
    """The driver's runtime, with ``stub_gateway.py`` run by this Python in place of openclaw."""

    def require(self) -> tuple[Path, Path]:
        return Path(sys.executable), STUB

    def bin_path(self) -> str:
        return os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])

    def is_installed(self) -> bool:
        return True


def port_range(width: int = 1200) -> str:
    """A random slice of high ports, so concurrent test runs rarely meet."""
    first = random.randrange(30000, 60000 - width, 120)
    return f"{first}-{first + width}"


def reference(secret: Secret) -> SecretReference:
    return SecretReference(secret_id=secret.id, driver_id=secret.driver_id, backend_name=secret.backend_name)


def revision_ref(agent: Any, number: int, document: dict[str, Any], *, revision_id: str | None = None,
                 files: dict[str, str] | None = None) -> RevisionRef:
    return RevisionRef(id=revision_id or new_id(IdPrefix.REVISION), namespace_id=agent.namespace_id,
                       agent_id=agent.id, number=number, snapshot={"configuration": document},
                       initial_workspace_files=files or {})


def context(harness: Secret | None, bindings: dict[str, Secret] | None = None) -> RevisionContext:
    return RevisionContext(
        harness_auth_method="api_key" if harness else None,
        harness_secret=reference(harness) if harness else None,
        secret_environment={name: reference(secret) for name, secret in (bindings or {}).items()},
    )


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def files_containing(root: Path, needles: list[str]) -> list[str]:
    """Every file under ``root`` holding one of ``needles`` (as bytes)."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found.extend(f"{path}: {needle[:4]}…" for needle in needles if needle.encode() in data)
    return found


def stop_every_gateway(driver: LocalComputeDriver) -> None:
    """Test cleanup: stop each recorded gateway (verified PID) and whatever it left."""
    for record_path in (driver.data_dir / "agents").glob("*/gateway.json"):
        record = GatewayRecord.read(record_path)
        if record is not None and record.process is not None:
            supervisor.stop(record.process, grace=5.0, titles=GATEWAY_TITLES)
