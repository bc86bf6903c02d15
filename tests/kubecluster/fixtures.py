"""The ``kube`` fixture: one real test cluster per session (see ``cluster``), with the simulated
kubelet, the fault proxy, the worker's least-privilege identity bound by
``deploy/kubernetes/worker-rbac.yaml`` and the web process's bound by
``deploy/kubernetes/api-rbac.yaml``, exactly as shipped.

Tests marked ``kubernetes`` use it. Without the binaries (``make kube``) they skip with that
reason, and fail in CI (``OCC_REQUIRE_SERVICES=1``).

``real_node`` adds a real node to that cluster (``tests.kubecluster.node``: containerd, runc, the
CNI bridge and the kubelet), once per session (``real_nodes``), for tests marked ``kubelet``; they
skip (fail in CI) likewise where containerd, runc or the kubelet are missing or cannot start. When
it stops it puts the machine back as it found it (``node.host``, ``node.after``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config, utils
from kubernetes.client.rest import ApiException

from tests.kubecluster import cluster as cluster_module
from tests.kubecluster import node as node_module
from tests.kubecluster.faultproxy import FaultProxy
from tests.kubecluster.kubelet import SimulatedKubelet


@dataclass
class Kube:
    cluster: cluster_module.Cluster
    proxy: FaultProxy
    kubelet: SimulatedKubelet
    admin: client.ApiClient  # system:masters, straight to the API server
    worker_kubeconfig: Path  # the worker's identity, through the fault proxy
    worker_direct_kubeconfig: Path  # the worker's identity, straight to the API server
    api_kubeconfig: Path  # the web process's identity, straight to the API server

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.admin)

    @property
    def apps(self) -> client.AppsV1Api:
        return client.AppsV1Api(self.admin)

    @property
    def networking(self) -> client.NetworkingV1Api:
        return client.NetworkingV1Api(self.admin)

    def reset_faults(self) -> None:
        self.proxy.clear()
        self.kubelet.release()


def admin_client(cluster: cluster_module.Cluster) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = cluster.url
    configuration.ssl_ca_cert = str(cluster.ca_file)
    configuration.api_key = {"authorization": cluster.admin_token}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(configuration)


def client_from(kubeconfig: Path) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.retries = False  # what a test sees is what the server (or the proxy) answered
    return client.ApiClient(configuration)


def apply_rbac(api: client.ApiClient) -> None:
    """``deploy/kubernetes/worker-rbac.yaml`` and ``api-rbac.yaml`` as shipped, in their namespace ``occ``."""
    core = client.CoreV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": "occ"}})
    except ApiException as exc:
        if exc.status != 409:
            raise
    for path in (cluster_module.WORKER_RBAC, cluster_module.API_RBAC):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                utils.create_from_dict(api, document)


def _service_missing(reason: str) -> None:
    if os.environ.get("OCC_REQUIRE_SERVICES") == "1":
        pytest.fail(f"required service missing in CI: {reason}", pytrace=False)
    pytest.skip(reason)


_failure: str | None = None


@pytest.fixture(scope="session")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    global _failure
    if _failure is not None:
        _service_missing(_failure)
    try:
        running = cluster_module.start()
    except cluster_module.ClusterUnavailable as exc:
        _failure = f"the Kubernetes test cluster is unavailable: {exc}"
        _service_missing(_failure)
        raise
    proxy = FaultProxy(running.url, ca_file=str(running.ca_file)).start()
    admin = admin_client(running)
    kubelet = SimulatedKubelet(admin)
    try:
        apply_rbac(admin)
        kubelet.start()
        folder = tmp_path_factory.mktemp("kube")
        worker = running.kubeconfig(folder / "worker.kubeconfig", token=running.worker_token, server=proxy.url)
        direct = running.kubeconfig(folder / "worker-direct.kubeconfig", token=running.worker_token)
        web = running.kubeconfig(folder / "api.kubeconfig", token=running.api_token)
        yield Kube(cluster=running, proxy=proxy, kubelet=kubelet, admin=admin, worker_kubeconfig=worker,
                   worker_direct_kubeconfig=direct, api_kubeconfig=web)
    finally:
        kubelet.stop()
        proxy.stop()
        admin.close()
        running.stop()


class Nodes:
    """The session's real node, started when a test first asks for it and again after a test
    stopped it (``stop``: the test of what stopping puts back)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.current: node_module.RealNode | None = None
        self.failure: str | None = None

    def get(self) -> node_module.RealNode:
        if self.failure is not None:
            _service_missing(self.failure)
        if self.current is None:
            try:
                self.current = node_module.start(self.kube.cluster, self.kube.core)
            except node_module.NodeUnavailable as exc:
                self.failure = f"the real node is unavailable: {exc}"
                _service_missing(self.failure)
                raise
        return self.current

    def stop(self) -> node_module.RealNode | None:
        """Stop the running node (its Pods deleted, the host restored); it, or None."""
        stopped, self.current = self.current, None
        if stopped is not None:
            stopped.stop(self.kube.core)
        return stopped


@pytest.fixture(scope="session")
def real_nodes(kube: Kube) -> Iterator[Nodes]:
    nodes = Nodes(kube)
    try:
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture
def real_node(real_nodes: Nodes) -> node_module.RealNode:
    """A real kubelet registered as Node ``occ-node`` in the session's cluster."""
    return real_nodes.get()


@pytest.fixture
def kube_faults(kube: Kube) -> Iterator[Kube]:
    """The session's cluster with no fault rule or kubelet hold left over from another test."""
    kube.reset_faults()
    yield kube
    kube.reset_faults()


def wait_for(check, *, timeout: float = 60.0, interval: float = 0.2, what: str = "condition"):
    """Poll ``check`` until it returns something truthy; generous bounds for a loaded machine."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
