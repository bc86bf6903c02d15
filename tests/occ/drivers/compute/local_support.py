"""Shared helpers for the local ComputeDriver tests: Secret values in memory (the driver needs
no database), an Agent's refs, revision references, cleanup of every gateway process a test
started (by PID, verified), and the gateways' port range (tests/ports.py)."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from occ.documents import RevisionSpec
from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE, AgentRef, RevisionContext, RevisionRef, SecretReference
from occ.drivers.compute.files import GATEWAY_TITLES, GatewayRecord
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.secrets import SecretDriver, SecretValueMissing, backend_name_for
from occ.ids import IdPrefix, new_id
from occ.runtime import Runtime
from tests.ports import port_range  # noqa: F401 - the gateways' ports, imported from here by the tests

T = TypeVar("T")

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


class MemorySecretDriver(SecretDriver):
    """A SecretDriver keeping values in this process (registered as ``memory`` by the tests'
    ``memory_secrets`` fixture): what the driver reads, without a database."""

    driver_id = "memory"
    values: ClassVar[dict[str, str]] = {}

    def put(self, backend_name: str, value: str) -> None:
        self.values[backend_name] = value

    def delete(self, backend_name: str) -> None:
        self.values.pop(backend_name, None)

    def with_value(self, backend_name: str, consumer: Callable[[str], T]) -> T:
        if backend_name not in self.values:
            raise SecretValueMissing()
        return consumer(self.values[backend_name])


def stored_secret(value: str) -> SecretReference:
    """A Secret whose value is in the memory driver."""
    secret_id = new_id(IdPrefix.SECRET)
    reference = SecretReference(secret_id=secret_id, driver_id="memory", backend_name=backend_name_for(secret_id))
    MemorySecretDriver().put(reference.backend_name, value)
    return reference


def value_of(reference: SecretReference) -> str:
    return MemorySecretDriver().with_value(reference.backend_name, str)


def new_agent(namespace_id: str | None = None, *, password: str | None = "gateway-password-never-on-disk-5b"
              ) -> AgentRef:
    """An Agent's ref with its gateway password (a runtime credential the worker would keep)."""
    credentials = {GATEWAY_PASSWORD_PURPOSE: stored_secret(password)} if password else {}
    return AgentRef(id=new_id(IdPrefix.AGENT), namespace_id=namespace_id or new_id(IdPrefix.NAMESPACE),
                    name="agent", runtime_credentials=credentials)


def revision_ref(agent: Any, number: int, document: dict[str, Any], *, revision_id: str | None = None,
                 files: dict[str, str] | None = None) -> RevisionRef:
    return RevisionRef(id=revision_id or new_id(IdPrefix.REVISION), namespace_id=agent.namespace_id,
                       agent_id=agent.id, number=number, spec=RevisionSpec(configuration=document),
                       initial_workspace_files=files or {})


def context(agent: AgentRef, harness: SecretReference | None,
            bindings: dict[str, SecretReference] | None = None) -> RevisionContext:
    return RevisionContext(
        harness_auth_method="api_key" if harness else None,
        harness_secret=harness,
        secret_environment=dict(bindings or {}),
        gateway_password=agent.runtime_credentials.get(GATEWAY_PASSWORD_PURPOSE),
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
