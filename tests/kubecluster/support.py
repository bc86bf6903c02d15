"""What the tests of the Kubernetes drivers share on the test cluster (``fixtures``): the compute
driver as one identity of the cluster, a tenant namespace it made ready, a revision prepared.

``kube_driver`` is the driver as the worker or the web process holds it, on its own connection
with short backoff (the machine is loaded; what a test sees is what the server answered):

    with kube_driver(kube.worker_kubeconfig) as driver: ...            # through the fault proxy
    with kube_driver(kube.api_kubeconfig, gateway_port=port) as web: ...
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from occ.drivers.compute.base import NamespaceRef, RevisionContext, RevisionRef
from occ.drivers.kube.api import Connection, Settings
from occ.drivers.kube.compute import KubernetesComputeDriver
from occ.ids import IdPrefix, new_id
from tests.kubecluster.fixtures import wait_for

TEST_IMAGE = "registry.invalid/openclaw:test"
DRIVER_DEFAULTS: dict[str, Any] = {
    "image": TEST_IMAGE,
    "gateway_port": 8080,
    "trusted_proxy_cidrs": ["10.0.0.0/8"],
    "storage_class": "",
    "client_namespace": "occ",
    "client_pod_labels": {"app.kubernetes.io/name": "occ"},
    "ready_timeout": 60,
    "ready_poll": 0.2,
}


@contextlib.contextmanager
def kube_driver(
    kubeconfig: Path, *, attempts: int = 5, max_backoff_seconds: float = 0.5, **options: Any
) -> Iterator[KubernetesComputeDriver]:
    """A ``KubernetesComputeDriver`` as ``kubeconfig``'s identity; ``options`` override the
    driver's test defaults (``DRIVER_DEFAULTS``). Its connection is closed afterwards."""
    connection = Connection(
        Settings(
            kubeconfig_path=str(kubeconfig),
            read_timeout=15,
            attempts=attempts,
            backoff_seconds=0.05,
            max_backoff_seconds=max_backoff_seconds,
        )
    )
    try:
        yield KubernetesComputeDriver(connection=connection, **{**DRIVER_DEFAULTS, **options})
    finally:
        connection.close()


def ready_namespace(driver: KubernetesComputeDriver, name: str = "team") -> NamespaceRef:
    """A new OCC Namespace whose tenant namespace the driver observed ready."""
    namespace = NamespaceRef(id=new_id(IdPrefix.NAMESPACE), name=name)
    wait_for(lambda: driver.ensure_namespace(namespace).done, timeout=60, what="the tenant namespace ready")
    return namespace


def prepared(driver: KubernetesComputeDriver, revision: RevisionRef, ctx: RevisionContext) -> bool:
    """Prepare until ready (a first prepare waits for its Pod behind the inactive selector)."""
    return wait_for(
        lambda: driver.prepare_revision(revision, ctx).ready,
        timeout=90,
        interval=0.3,
        what=f"prepare of revision {revision.number} ready",
    )
