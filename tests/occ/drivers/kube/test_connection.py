"""``occ.drivers.kube.api.Connection`` against the real test cluster (tests/kubecluster): its
timeouts are bounded, a hung answer is cut and settled the way the module docstring says, and
the in-cluster ServiceAccount mode reaches the server as the worker's least-privilege identity.

The hung answers come from the fault proxy's ``delay``: it holds a request before forwarding
it, so the server sees it (and commits it) only after the client has given up.
"""

from __future__ import annotations

import base64
import time

import pytest
from kubernetes.client.rest import ApiException
from kubernetes.config import incluster_config

from occ.drivers.compute.base import AgentRef
from occ.drivers.kube import configured_connection, names
from occ.drivers.kube.api import Connection, KubeUnavailable, Settings, forget_connections
from occ.drivers.kube.compute import KubernetesComputeDriver
from occ.drivers.kube.secrets import KubernetesSecretDriver
from occ.ids import IdPrefix, new_id
from tests.kubecluster.fixtures import wait_for

pytestmark = pytest.mark.kubernetes

READ_TIMEOUT = 2.0
HELD = 8.0  # well past READ_TIMEOUT, so a loaded machine cannot blur the two


@pytest.fixture
def connection(kube_faults):
    connection = Connection(Settings(kubeconfig_path=str(kube_faults.worker_kubeconfig), read_timeout=READ_TIMEOUT,
                                     attempts=3, backoff_seconds=0.05, max_backoff_seconds=0.2))
    yield connection
    connection.close()


def test_a_read_whose_answer_hangs_is_cut_at_the_read_timeout_and_sent_again(kube_faults, connection, tenant):
    _, kube_namespace = tenant
    kube_faults.proxy.delay(HELD, times=1, method="GET", path=f"/namespaces/{kube_namespace}$")
    started = time.monotonic()
    with kube_faults.proxy.counting() as calls:
        found = connection.call(connection.core.read_namespace, kube_namespace)
    elapsed = time.monotonic() - started
    assert found.metadata.name == kube_namespace
    assert [m for m, p in calls.seen if p.endswith(f"/namespaces/{kube_namespace}")] == ["GET", "GET"]
    assert elapsed < HELD, f"the held read was waited out ({elapsed:.1f} s), not cut at {READ_TIMEOUT} s"


def test_a_server_that_never_answers_fails_within_a_bound(kube_faults, connection, tenant):
    _, kube_namespace = tenant
    kube_faults.proxy.delay(HELD, times=3, method="GET", path=f"/namespaces/{kube_namespace}$")
    started = time.monotonic()
    with pytest.raises(KubeUnavailable) as unavailable:
        connection.call(connection.core.read_namespace, kube_namespace)
    elapsed = time.monotonic() - started
    assert unavailable.value.code == "KUBERNETES_API_UNAVAILABLE"
    # Three attempts of READ_TIMEOUT each and short pauses: bounded by the settings, not the server.
    assert elapsed < 3 * READ_TIMEOUT + 4, f"{elapsed:.1f} s"


def test_a_create_whose_answer_hangs_is_read_back_before_it_is_sent_again(kube_faults, connection, tenant):
    namespace_id, kube_namespace = tenant
    driver = KubernetesSecretDriver(connection)
    secret_id = new_id(IdPrefix.SECRET)
    backend = driver.backend_name(secret_id, namespace_id=namespace_id)
    name = names.occ_secret_name(secret_id)
    kube_faults.proxy.delay(HELD, times=1, method="POST", path=f"/namespaces/{kube_namespace}/secrets$")
    released = time.monotonic() + HELD
    with kube_faults.proxy.counting() as calls:
        driver.put(backend, "value-after-a-hung-create")
    # Looked (absent), created (held, given up), looked again (still absent), created.
    assert [m for m, p in calls.seen if "/secrets" in p] == ["GET", "POST", "GET", "POST"]
    # The held create reaches the server afterwards and is refused there (the name is taken):
    # exactly one Secret, with the value.
    wait_for(lambda: time.monotonic() > released + 1, timeout=HELD + 5, what="the held create forwarded")
    found = [s for s in kube_faults.core.list_namespaced_secret(kube_namespace).items if s.metadata.name == name]
    assert len(found) == 1
    assert base64.b64decode(found[0].data["value"]).decode() == "value-after-a-hung-create"
    assert driver.with_value(backend, lambda value: value) == "value-after-a-hung-create"


def test_in_cluster_mode_uses_the_pods_service_account_token(kube_faults, tenant, tmp_path, monkeypatch, settings):
    """What ``OCC_KUBERNETES_AUTH=inCluster`` does in a Pod, here with the worker's token and the
    cluster's CA where the kubelet would mount them."""
    _, kube_namespace = tenant
    cluster = kube_faults.cluster
    token = tmp_path / "token"
    token.write_text(cluster.worker_token)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(cluster.ca_file))
    host, port = cluster.url.removeprefix("https://").rsplit(":", 1)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    settings.OCC_KUBERNETES_AUTH = "inCluster"
    settings.OCC_KUBERNETES_KUBECONFIG = ""
    forget_connections()
    connection = configured_connection()
    try:
        assert connection.api_client.configuration.host == cluster.url
        assert connection.call(connection.core.read_namespace, kube_namespace).metadata.name == kube_namespace
        # The worker's identity, not an administrator's: worker-rbac.yaml grants nothing on Nodes.
        with pytest.raises(ApiException) as forbidden:
            connection.call(connection.core.list_node)
        assert forbidden.value.status == 403
        assert "system:serviceaccount:occ:occ-worker" in forbidden.value.body
    finally:
        forget_connections()


def test_an_agents_teardown_deletes_only_what_carries_our_ownership_labels(kube_faults, connection):
    """Objects are found by the Agent's label and deleted only with the managed-by label too: an
    object someone else labelled with the Agent is left alone."""
    kube = kube_faults
    namespace_id, agent_id = new_id(IdPrefix.NAMESPACE), new_id(IdPrefix.AGENT)
    kube_namespace = names.tenant_namespace(namespace_id)
    kube.core.create_namespace({"metadata": {"name": kube_namespace, "labels": names.owner_labels(namespace_id)}})
    ours = names.owner_labels(namespace_id, agent_id=agent_id)
    theirs = {names.NAMESPACE_LABEL: namespace_id, names.AGENT_LABEL: agent_id}
    for name, labels in (("ours", ours), ("theirs", theirs)):
        kube.core.create_namespaced_config_map(kube_namespace, {"metadata": {"name": name, "labels": labels}})
        kube.core.create_namespaced_secret(kube_namespace, {"metadata": {"name": name, "labels": labels}})
    driver = KubernetesComputeDriver(connection=connection, image="registry.invalid/openclaw:test",
                                     trusted_proxy_cidrs=["10.0.0.0/8"], storage_class="")
    driver.delete_runtime_credentials(AgentRef(id=agent_id, namespace_id=namespace_id, name="agent",
                                               runtime_credentials={}))
    selector = f"{names.AGENT_LABEL}={agent_id}"
    left = {(kind, item.metadata.name)
            for kind, items in (("configmap", kube.core.list_namespaced_config_map(kube_namespace,
                                                                                   label_selector=selector).items),
                                ("secret", kube.core.list_namespaced_secret(kube_namespace,
                                                                            label_selector=selector).items))
            for item in items if item.metadata.deletion_timestamp is None}
    assert left == {("configmap", "theirs"), ("secret", "theirs")}
    kube.core.delete_namespace(kube_namespace)
