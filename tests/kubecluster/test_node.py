"""The real node (tests/kubecluster/node.py): a Pod runs on the kubelet for real, it has no route
off this machine, and stopping the node puts the machine back as it was."""

from __future__ import annotations

import ipaddress
import subprocess
import time
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.kubecluster import node as node_module
from tests.kubecluster.fixtures import wait_for

pytestmark = [pytest.mark.kubernetes, pytest.mark.kubelet]


def _namespace(kube) -> str:
    """A fresh namespace whose default ServiceAccount has its token Secret: on 1.20 the API server
    refuses a Pod that mounts the account's token until the token controller has created that
    Secret and named it in the account (500 "No API token found …, retry after …")."""
    name = f"node-{uuid.uuid4().hex[:8]}"
    kube.core.create_namespace({"metadata": {"name": name}})

    def tokened() -> bool:
        accounts = kube.core.list_namespaced_service_account(name, field_selector="metadata.name=default").items
        listed = [secret.name for account in accounts for secret in account.secrets or []]
        return any(secret.type == "kubernetes.io/service-account-token"
                   for secret in kube.core.list_namespaced_secret(name).items if secret.metadata.name in listed)

    wait_for(tokened, what="the default ServiceAccount with its token Secret")
    return name


def _create_pod(kube, namespace: str, body: dict) -> None:
    """Create the Pod, again after the "retry after" the API server asks for while its admission's
    view of the token Secret catches up (only that answer is retried, for at most 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            kube.core.create_namespaced_pod(namespace, body)
            return
        except ApiException as exc:
            if exc.status != 500 or "retry after the token" not in (exc.body or "") or time.monotonic() > deadline:
                raise
        time.sleep(1)


def _pod(name: str, image: str, command: list[str], *, token: bool = False) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node_module.NODE_NAME, "terminationGracePeriodSeconds": 1,
                     "automountServiceAccountToken": token,
                     "containers": [{"name": "main", "image": image, "imagePullPolicy": "Never",
                                     "command": command}]}}


def _running(kube, namespace: str, name: str) -> client.V1Pod | None:
    pod = kube.core.read_namespaced_pod(name, namespace)
    statuses = pod.status.container_statuses or []
    if pod.status.phase == "Running" and statuses and statuses[0].state.running is not None:
        return pod
    return None


def _exec(kube, real_node, namespace: str, pod: str, *command: str) -> str:
    """``kubectl exec`` through the API server to the kubelet (by its address) and containerd."""
    kubeconfig = kube.cluster.kubeconfig(real_node.root / "admin.kubeconfig", token=kube.cluster.admin_token)
    result = subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace, "exec", pod, "--", *command],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_pod_runs_on_the_real_kubelet(kube, real_node):
    namespace = _namespace(kube)
    _create_pod(kube, namespace, _pod("sleeper", real_node.busybox, ["sleep", "3600"]))
    pod = wait_for(lambda: _running(kube, namespace, "sleeper"), timeout=120, interval=0.5,
                   what=f"the Pod Running on the real kubelet\n{real_node.log('kubelet')}")
    assert pod.spec.node_name == node_module.NODE_NAME
    assert pod.status.host_ip == real_node.address
    assert ipaddress.ip_address(pod.status.pod_ip) in ipaddress.ip_network(node_module.POD_SUBNET)
    status = pod.status.container_statuses[0]
    assert status.container_id.startswith("containerd://")
    # The container runs for real: its process answers through exec, its PID 1 is the command.
    assert _exec(kube, real_node, namespace, "sleeper", "cat", "/proc/1/cmdline").split("\0")[:2] == ["sleep", "3600"]
    kube.core.delete_namespace(namespace)


def test_a_pod_has_no_route_off_this_machine(kube, real_node):
    """The Pod's routing table, read inside it: only its own subnet, no default route; and its
    DNS server its own loopback (nothing is asked of the machine's resolver). Nothing is sent."""
    namespace = _namespace(kube)
    _create_pod(kube, namespace, _pod("routes", real_node.busybox, ["sleep", "3600"]))
    pod = wait_for(lambda: _running(kube, namespace, "routes"), timeout=120, interval=0.5,
                   what=f"the Pod Running\n{real_node.log('kubelet')}")
    routes = [line.split() for line in _exec(kube, real_node, namespace, "routes", "ip", "route", "show").splitlines()]
    assert routes, "the Pod has its subnet's route"
    subnet = ipaddress.ip_network(node_module.POD_SUBNET)
    for route in routes:
        assert route[0] != "default", routes
        assert ipaddress.ip_network(route[0], strict=False).subnet_of(subnet), routes
    every_table = _exec(kube, real_node, namespace, "routes", "ip", "route", "show", "table", "all")
    assert "default" not in every_table.split(), every_table
    addresses = _exec(kube, real_node, namespace, "routes", "ip", "-4", "-o", "addr", "show")
    assert pod.status.pod_ip in addresses
    resolv = _exec(kube, real_node, namespace, "routes", "cat", "/etc/resolv.conf")
    servers = [line.split()[1] for line in resolv.splitlines() if line.startswith("nameserver")]
    assert servers, resolv
    assert all(ipaddress.ip_address(server).is_loopback for server in servers), resolv
    kube.core.delete_namespace(namespace)


def test_stopping_the_node_puts_the_machine_back(kube, real_nodes):
    """Sysctls, iptables rules, mounts, links, routes, cgroups and the fixed folders are as they
    were before the node started, after a Pod ran on it and the node stopped."""
    running = real_nodes.get()
    namespace = _namespace(kube)
    # With its ServiceAccount token: a secret volume, a tmpfs the kubelet mounts on this machine.
    _create_pod(kube, namespace, _pod("brief", running.busybox, ["sleep", "3600"], token=True))
    wait_for(lambda: _running(kube, namespace, "brief"), timeout=120, interval=0.5, what="the Pod Running")
    changed = node_module.HostState.record()
    assert running.host.differences(changed), "a running node changes the machine (else this proves nothing)"
    stopped = real_nodes.stop()
    assert stopped is not None
    assert stopped.after is not None
    assert stopped.restore_problems == []
    assert stopped.host.differences(stopped.after) == []
    kube.core.delete_namespace(namespace)
