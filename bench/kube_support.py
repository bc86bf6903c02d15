"""What the Kubernetes benchmarks share (bench/kubernetes_driver.py, bench/real_gateway.py): the
Kubernetes ComputeDriver as the worker builds it, a tenant namespace made through it, a new
Agent's references (its revision carrying a given Configuration document), and a SecretDriver in
memory that holds the values those references name."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from occ.documents import RevisionSpec
from occ.drivers.compute.base import (
    GATEWAY_PASSWORD_PURPOSE,
    AgentRef,
    NamespaceRef,
    RevisionContext,
    RevisionRef,
    SecretReference,
)
from occ.drivers.kube import names
from occ.drivers.kube.api import Connection, Settings
from occ.drivers.kube.compute import KubernetesComputeDriver
from occ.drivers.secrets.base import (
    SECRET_DRIVERS,
    SecretDriver,
    SecretValueMissing,
    backend_name_for,
    get_secret_driver,
)
from occ.ids import IdPrefix, new_id

T = TypeVar("T")
POLL = 0.1
BENCH_IMAGE = "registry.invalid/openclaw:bench"


class BenchSecrets(SecretDriver):
    driver_id = "bench-memory"
    values: ClassVar[dict[str, str]] = {}

    def put(self, backend_name: str, value: str) -> None:
        self.values[backend_name] = value

    def delete(self, backend_name: str) -> None:
        self.values.pop(backend_name, None)

    def with_value(self, backend_name: str, consumer: Callable[[str], T]) -> T:
        if backend_name not in self.values:
            raise SecretValueMissing()
        return consumer(self.values[backend_name])


def register_bench_secrets() -> None:
    """Make ``BenchSecrets`` the SecretDriver the references of ``stored`` name."""
    SECRET_DRIVERS.classes[BenchSecrets.driver_id] = f"{__name__}.BenchSecrets"


def stored(value: str) -> SecretReference:
    secret_id = new_id(IdPrefix.SECRET)
    reference = SecretReference(secret_id=secret_id, driver_id=BenchSecrets.driver_id,
                                backend_name=backend_name_for(secret_id))
    get_secret_driver(BenchSecrets.driver_id).put(reference.backend_name, value)
    return reference


def new_agent(namespace_id: str, document: Mapping[str, Any]) -> tuple[AgentRef, RevisionRef, RevisionContext]:
    """A new Agent of the Namespace, its first revision (of ``document``) and that revision's
    context: a gateway password and a model key, both stored in ``BenchSecrets``."""
    password = stored("bench-gateway-password")
    agent = AgentRef(id=new_id(IdPrefix.AGENT), namespace_id=namespace_id, name="bench",
                     runtime_credentials={GATEWAY_PASSWORD_PURPOSE: password})
    revision = RevisionRef(id=new_id(IdPrefix.REVISION), namespace_id=namespace_id, agent_id=agent.id, number=1,
                           spec=RevisionSpec(configuration=dict(document)))
    ctx = RevisionContext(harness_auth_method="api_key", harness_secret=stored("sk-bench-model"),
                          gateway_password=password)
    return agent, revision, ctx


def make_driver(kubeconfig: Path, *, image: str = BENCH_IMAGE, ready_timeout: float = 120,
                prepare_wait: float | None = None, ready_poll: float = POLL) -> KubernetesComputeDriver:
    connection = Connection(Settings(kubeconfig_path=str(kubeconfig), read_timeout=30))
    return KubernetesComputeDriver(connection=connection, image=image, gateway_port=8080,
                                   trusted_proxy_cidrs=["10.0.0.0/8"], storage_class="", client_namespace="occ",
                                   client_pod_labels={"app.kubernetes.io/name": "occ"}, ready_timeout=ready_timeout,
                                   prepare_wait=prepare_wait, ready_poll=ready_poll, quota_pods="1000")


def ready_namespace(driver: KubernetesComputeDriver) -> tuple[NamespaceRef, str]:
    """A new tenant namespace, once the driver has made it; its Kubernetes name."""
    namespace = NamespaceRef(id=new_id(IdPrefix.NAMESPACE), name="bench")
    while not driver.ensure_namespace(namespace).done:
        time.sleep(POLL)
    return namespace, names.tenant_namespace(namespace.id)
