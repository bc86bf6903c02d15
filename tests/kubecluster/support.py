"""What the tests of the Kubernetes drivers share on the test cluster (``fixtures``): the compute
driver as one identity of the cluster, a tenant namespace it made ready, a revision prepared.

``kube_driver`` is the driver as the worker or the web process holds it, on its own connection
with short backoff (the machine is loaded; what a test sees is what the server answered):

    with kube_driver(kube.worker_kubeconfig) as driver: ...            # through the fault proxy
    with kube_driver(kube.api_kubeconfig, gateway_port=port) as web: ...

``kube_compute`` (a fixture, registered in tests/conftest.py) is the process's own driver
(``OCC_COMPUTE_DRIVER=kubernetes``), for tests of the worker's jobs and of the console;
``use_kubernetes_compute`` switches it to another identity (the web process's).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from occ.drivers.compute import forget_compute_drivers, get_compute_driver
from occ.drivers.compute.base import AgentRef, NamespaceRef, RevisionContext, RevisionRef
from occ.drivers.kube import names
from occ.drivers.kube.api import Connection, Settings, forget_connections
from occ.drivers.kube.compute import KubernetesComputeDriver
from occ.ids import IdPrefix, new_id
from occ.models import ControllerWork, WorkState
from provisioning import queue
from tests.kubecluster.fixtures import Kube, wait_for
from tests.occ.drivers.compute.local_support import context, new_agent, stored_secret

TEST_IMAGE = "registry.invalid/openclaw:test"
DOCUMENT = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}
SECOND = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5-mini"}}}}
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


def sharing_connection(driver: KubernetesComputeDriver, **options: Any) -> KubernetesComputeDriver:
    """Another driver on ``driver``'s connection (closed with it), ``options`` over the test
    defaults: a shorter ``ready_timeout`` or ``prepare_wait`` for one step of a test."""
    return KubernetesComputeDriver(connection=driver.connection, **{**DRIVER_DEFAULTS, **options})


def ready_namespace(driver: KubernetesComputeDriver, name: str = "team") -> NamespaceRef:
    """A new OCC Namespace whose tenant namespace the driver observed ready."""
    namespace = NamespaceRef(id=new_id(IdPrefix.NAMESPACE), name=name)
    wait_for(lambda: driver.ensure_namespace(namespace).done, timeout=60, what="the tenant namespace ready")
    return namespace


class Deployable(NamedTuple):
    """An Agent in a ready tenant namespace, its runtime credentials provisioned."""

    namespace: NamespaceRef
    kube_namespace: str
    agent: AgentRef
    ctx: RevisionContext


def deployable(driver: KubernetesComputeDriver, *, model_key: str = "sk-model") -> Deployable:
    """A new Namespace made ready and an Agent in it whose model key (in the ``memory_secrets``
    fixture's SecretDriver, tests/occ/drivers/conftest.py)
    is ``model_key``, its gateway password copied into the cluster: what a first prepare needs."""
    namespace = ready_namespace(driver)
    agent = new_agent(namespace.id)
    ctx = context(agent, stored_secret(model_key))
    driver.provision_runtime_credentials(agent)
    return Deployable(namespace, names.tenant_namespace(namespace.id), agent, ctx)


def prepared(driver: KubernetesComputeDriver, revision: RevisionRef, ctx: RevisionContext) -> bool:
    """Prepare until ready (a first prepare waits for its Pod behind the inactive selector)."""
    return wait_for(
        lambda: driver.prepare_revision(revision, ctx).ready,
        timeout=90,
        interval=0.3,
        what=f"prepare of revision {revision.number} ready",
    )


@pytest.fixture
def tenant(kube_faults: Kube) -> Iterator[tuple[str, str]]:
    """(an OCC Namespace id, its tenant namespace), the namespace created bare by the
    administrator and deleted afterwards."""
    namespace_id = new_id(IdPrefix.NAMESPACE)
    name = names.tenant_namespace(namespace_id)
    kube_faults.core.create_namespace({"metadata": {"name": name}})
    yield namespace_id, name
    kube_faults.core.delete_namespace(name)


def use_kubernetes_compute(settings: Any, kubeconfig: Path) -> KubernetesComputeDriver:
    """``OCC_COMPUTE_DRIVER=kubernetes`` as ``kubeconfig``'s identity: the process's driver and
    connection made anew from the settings, as a worker or web process would make them."""
    settings.OCC_COMPUTE_DRIVER = "kubernetes"
    settings.OCC_KUBERNETES_KUBECONFIG = str(kubeconfig)
    forget_compute_drivers()
    forget_connections()
    driver = get_compute_driver()
    assert isinstance(driver, KubernetesComputeDriver)
    return driver


@pytest.fixture
def kube_compute(settings: Any, kube_faults: Kube) -> Iterator[KubernetesComputeDriver]:
    """The process's compute driver on the test cluster as the worker's identity (through the
    fault proxy), with a short convergence deadline."""
    settings.OCC_KUBERNETES_GATEWAY_IMAGE = TEST_IMAGE
    settings.OCC_KUBERNETES_READY_TIMEOUT_SECONDS = 20
    yield use_kubernetes_compute(settings, kube_faults.worker_kubeconfig)
    forget_compute_drivers()
    forget_connections()


def run_until_settled(key: str, *, timeout: float = 120) -> ControllerWork:
    """Run the work ``key`` through the real queue until it succeeded or failed for good
    (a prepare whose Pod is not Ready yet defers; it is run again once due)."""

    def settled() -> ControllerWork | None:
        queue.run_work(key)
        row = ControllerWork.objects.get(idempotency_key=key)
        return row if row.state in (WorkState.SUCCEEDED, WorkState.FAILED_PERMANENT) else None

    return wait_for(settled, timeout=timeout, interval=0.5, what=f"{key} settled")
