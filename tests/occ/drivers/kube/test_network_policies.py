"""What the tenant's NetworkPolicies and the gateway Service select, asked of the real API
server and controller manager (tests/kubecluster) about the gateway Pod the Deployment controller
made from the driver's template: every policy's podSelector is evaluated by the server
(``label_selector``), and the Service's Endpoints come from the endpoints controller.

The test cluster does not enforce NetworkPolicies (no network plugin); what it proves is that the
policies select the Pods they are written for, on the port the container serves.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from occ.drivers.kube import names
from occ.drivers.kube.api import Connection, Settings
from occ.drivers.kube.compute import KubernetesComputeDriver
from tests.kubecluster.fixtures import wait_for
from tests.kubecluster.support import DOCUMENT, deployable, prepared, ready_namespace
from tests.occ.drivers.compute.local_support import context, new_agent, revision_ref, stored_secret
from tests.occ.drivers.compute.test_kubernetes import driver  # noqa: F401 - a fixture

pytestmark = [pytest.mark.kubernetes, pytest.mark.usefixtures("memory_secrets")]


def selector_string(selector: client.V1LabelSelector) -> str:
    assert not selector.match_expressions, "the driver writes matchLabels only"
    return ",".join(f"{key}={value}" for key, value in sorted((selector.match_labels or {}).items()))


def endpoint_pods(kube, name: str, kube_namespace: str) -> list[str]:
    endpoints = kube.core.read_namespaced_endpoints(name, kube_namespace)
    return sorted(address.target_ref.name for subset in endpoints.subsets or [] for address in subset.addresses or [])


def test_every_policy_and_the_service_select_the_gateway_pod_they_are_written_for(kube_faults, driver):  # noqa: F811
    kube = kube_faults
    namespace, kube_namespace, agent, ctx = deployable(driver)
    revision = revision_ref(agent, 1, DOCUMENT)
    prepared(driver, revision, ctx)
    gateway = names.gateway_name(agent.id)
    (pod,) = driver.gateway_pods(revision)
    # Ready behind the inactive selector: the Service has a Pod to route to, and routes to none.
    assert wait_for(lambda: kube.core.read_namespaced_endpoints(gateway, kube_namespace), what="the Endpoints")
    assert endpoint_pods(kube, gateway, kube_namespace) == []

    assert driver.activate_revision(revision, ctx).ready
    wait_for(lambda: endpoint_pods(kube, gateway, kube_namespace) == [pod.metadata.name], timeout=60,
             what="the Service's Endpoints on the gateway Pod")

    (container,) = pod.spec.containers
    serving_port = container.ports[0].container_port
    service = kube.core.read_namespaced_service(gateway, kube_namespace)
    assert [(p.port, p.target_port) for p in service.spec.ports] == [(serving_port, serving_port)]
    assert f"port:{serving_port}," in container.readiness_probe.var_exec.command[2]

    policies = {p.metadata.name: p for p in kube.networking.list_namespaced_network_policy(kube_namespace).items}
    assert set(policies) == {"default-deny", "allow-dns", "allow-gateway-clients", names.runtime_policy_name(agent.id)}
    for name, policy in policies.items():
        selected = kube.core.list_namespaced_pod(kube_namespace,
                                                 label_selector=selector_string(policy.spec.pod_selector)).items
        assert pod.metadata.name in [p.metadata.name for p in selected], f"{name} does not select the gateway"
    (ingress,) = policies["allow-gateway-clients"].spec.ingress
    assert [(p.protocol, p.port) for p in ingress.ports] == [("TCP", serving_port)]
    (egress,) = policies[names.runtime_policy_name(agent.id)].spec.egress
    assert [(p.protocol, p.port) for p in egress.ports] == [("TCP", 443)]
    assert egress.to[0].ip_block.cidr == "0.0.0.0/0"
    assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"} <= set(egress.to[0].ip_block._except)

    # Another Agent's gateway is not selected by this Agent's runtime policy.
    other = new_agent(namespace.id)
    driver.provision_runtime_credentials(other)
    other_revision = revision_ref(other, 1, DOCUMENT)
    prepared(driver, other_revision, context(other, stored_secret("sk-model")))
    runtime = policies[names.runtime_policy_name(agent.id)]
    selected = kube.core.list_namespaced_pod(kube_namespace, label_selector=selector_string(runtime.spec.pod_selector))
    assert [p.metadata.name for p in selected.items] == [pod.metadata.name]


def clients_ingress(kube, kube_namespace):
    (ingress,) = kube.networking.read_namespaced_network_policy("allow-gateway-clients", kube_namespace).spec.ingress
    return ingress


def test_with_the_service_proxy_route_the_control_plane_joins_the_gateway_clients(kube_faults, driver):  # noqa: F811
    """OCC_KUBERNETES_CONTROL_PLANE_CIDRS: the API server dials the gateway Pods when it proxies
    (route ``serviceProxy``), so a cluster enforcing the tenant policies must admit its address.
    The CIDRs become ipBlock peers of the gateway-client ingress, on the gateway port only,
    stored by the real API server (which validates them); a changed setting is written to an
    existing namespace on its next ensure, an unchanged one writes nothing; with ``serviceDns``
    the API server never dials a gateway and no ipBlock is written."""
    kube = kube_faults
    proxied = KubernetesComputeDriver(
        connection=driver.connection, image=driver.image, gateway_port=8080, trusted_proxy_cidrs=["10.0.0.0/8"],
        storage_class="", client_namespace="occ", client_pod_labels={"app.kubernetes.io/name": "occ"},
        control_plane_cidrs=["10.96.0.1/32", "192.168.10.0/28"])
    namespace = ready_namespace(proxied)
    kube_namespace = names.tenant_namespace(namespace.id)
    ingress = clients_ingress(kube, kube_namespace)
    assert [(p.protocol, p.port) for p in ingress.ports] == [("TCP", 8080)]
    (web, *blocks) = ingress._from
    assert web.pod_selector.match_labels == {"app.kubernetes.io/name": "occ"}
    assert web.ip_block is None
    assert [(b.ip_block.cidr, b.ip_block._except, b.pod_selector, b.namespace_selector) for b in blocks] == [
        ("10.96.0.1/32", None, None, None), ("192.168.10.0/28", None, None, None)]
    with kube.proxy.counting() as calls:
        assert proxied.ensure_namespace(namespace).done
    assert calls.writes == []

    # The setting changed (the control plane moved): the next ensure rewrites the ingress.
    proxied.control_plane_cidrs = ["10.96.0.2/32"]
    assert proxied.ensure_namespace(namespace).done
    (_, block) = clients_ingress(kube, kube_namespace)._from
    assert block.ip_block.cidr == "10.96.0.2/32"

    # The cluster-DNS route: only OCC's own gateway clients, the ipBlock goes on the next ensure.
    dns = KubernetesComputeDriver(
        connection=Connection(Settings(kubeconfig_path=str(kube.worker_kubeconfig), gateway_route="serviceDns")),
        image=driver.image, gateway_port=8080, trusted_proxy_cidrs=["10.0.0.0/8"], storage_class="",
        client_namespace="occ", client_pod_labels={"app.kubernetes.io/name": "occ"},
        control_plane_cidrs=["10.96.0.2/32"])
    try:
        assert dns.ensure_namespace(namespace).done
        (only,) = clients_ingress(kube, kube_namespace)._from
        assert only.ip_block is None
        assert only.pod_selector.match_labels == {"app.kubernetes.io/name": "occ"}
    finally:
        dns.connection.close()
    wait_for(lambda: proxied.delete_namespace(namespace).done, timeout=120, what="the tenant namespace gone")
