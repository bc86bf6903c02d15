"""Fixtures the drivers' tests share: ``memory_secrets`` (the ``memory`` SecretDriver, values in
this process) and, for the Kubernetes drivers, ``tenant`` (tests/kubecluster/support.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from occ.drivers.secrets.base import SECRET_DRIVERS
from tests.kubecluster.support import tenant  # noqa: F401 - a bare tenant namespace on the test cluster
from tests.occ.drivers.compute.local_support import MemorySecretDriver


@pytest.fixture
def memory_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """``MemorySecretDriver`` registered as ``memory``: what a driver reads, without a database."""
    monkeypatch.setitem(SECRET_DRIVERS.classes, "memory",
                        f"{MemorySecretDriver.__module__}.{MemorySecretDriver.__name__}")
    MemorySecretDriver.values.clear()
    yield MemorySecretDriver.values
    MemorySecretDriver.values.clear()
