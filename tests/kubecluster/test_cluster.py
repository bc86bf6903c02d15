"""The test cluster itself: a real API server with RBAC, the simulated kubelet and the fault
proxy do what the driver tests rely on."""

from __future__ import annotations

import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from urllib3.exceptions import ProtocolError

from tests.kubecluster.fixtures import client_from, wait_for

pytestmark = pytest.mark.kubernetes


def _namespace(kube) -> str:
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    kube.core.create_namespace({"metadata": {"name": name}})
    wait_for(lambda: _has_default_sa(kube, name), what="the default ServiceAccount")
    return name


def _has_default_sa(kube, namespace: str) -> bool:
    try:
        kube.core.read_namespaced_service_account("default", namespace)
    except ApiException:
        return False
    return True


def _deployment(name: str) -> dict:
    labels = {"app.kubernetes.io/name": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "example.invalid/c:1"}]}}}}


def test_a_deployment_becomes_ready_through_the_simulated_kubelet(kube_faults):
    kube = kube_faults
    namespace = _namespace(kube)
    kube.apps.create_namespaced_deployment(namespace, _deployment("web"))

    def ready():
        status = kube.apps.read_namespaced_deployment_status("web", namespace).status
        return (status.ready_replicas or 0) == 1

    wait_for(ready, what="the Deployment's ready replica")
    pod = kube.core.list_namespaced_pod(namespace).items[0]
    assert pod.spec.node_name == "sim-node"
    assert pod.status.pod_ip


def test_pods_can_be_held_unready_or_made_to_exit(kube_faults):
    kube = kube_faults
    namespace = _namespace(kube)
    kube.kubelet.hold_unready({"app.kubernetes.io/name": "held"})
    kube.kubelet.exit_container({"app.kubernetes.io/name": "crashing"}, exit_code=3)
    kube.apps.create_namespaced_deployment(namespace, _deployment("held"))
    kube.apps.create_namespaced_deployment(namespace, _deployment("crashing"))

    def pod(name):
        pods = kube.core.list_namespaced_pod(namespace, label_selector=f"app.kubernetes.io/name={name}").items
        return pods[0] if pods and pods[0].status.phase == "Running" else None

    held = wait_for(lambda: pod("held"), what="the held Pod running")
    assert {c.type: c.status for c in held.status.conditions}["Ready"] == "False"
    crashed = wait_for(lambda: pod("crashing"), what="the crashing Pod")
    status = crashed.status.container_statuses[0]
    assert status.last_state.terminated.exit_code == 3
    assert not status.ready
    kube.kubelet.release({"app.kubernetes.io/name": "held"})
    wait_for(lambda: (kube.apps.read_namespaced_deployment_status("held", namespace).status.ready_replicas or 0) == 1,
             what="the released Deployment ready")


def test_the_worker_identity_holds_exactly_the_shipped_rbac(kube_faults):
    kube = kube_faults
    namespace = _namespace(kube)
    with client_from(kube.worker_direct_kubeconfig) as worker:
        core = client.CoreV1Api(worker)
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "allowed"}, "data": {"a": "b"}})
        with pytest.raises(ApiException) as refused:
            client.RbacAuthorizationV1Api(worker).create_namespaced_role_binding(namespace, {
                "metadata": {"name": "escalate"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                "subjects": [{"kind": "User", "name": "someone"}]})
        assert refused.value.status == 403
        with pytest.raises(ApiException) as no_update:
            # The driver patches; `update` (PUT) is not granted.
            core.replace_namespaced_config_map("allowed", namespace, {"metadata": {"name": "allowed"},
                                                                      "data": {"a": "c"}})
        assert no_update.value.status == 403


def test_the_fault_proxy_injects_errors_drops_committed_answers_and_counts(kube_faults):
    kube = kube_faults
    namespace = _namespace(kube)
    with client_from(kube.worker_kubeconfig) as worker:
        core = client.CoreV1Api(worker)
        kube.proxy.fail_next(2, status=503, path="/configmaps")
        for _ in range(2):
            with pytest.raises(ApiException) as unavailable:
                core.list_namespaced_config_map(namespace)
            assert unavailable.value.status == 503
        listed = core.list_namespaced_config_map(namespace).items
        assert [c.metadata.name for c in listed] == ["kube-root-ca.crt"]  # the controller manager's own

        kube.proxy.drop_after_commit(method="POST", path="/configmaps$")
        with pytest.raises(ProtocolError):
            core.create_namespaced_config_map(namespace, {"metadata": {"name": "committed"}})
        # The answer was lost, the write was not.
        assert core.read_namespaced_config_map("committed", namespace).metadata.name == "committed"

        with kube.proxy.counting() as calls:
            core.read_namespaced_config_map("committed", namespace)
            core.list_namespaced_config_map(namespace)
        assert calls.total == 2
        assert calls.writes == []
