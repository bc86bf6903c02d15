"""Chat with an Agent on the Kubernetes ComputeDriver: the web process's driver (the identity
``deploy/kubernetes/api-rbac.yaml`` binds, straight to the real test API server) reaches the
gateway Service through the API server's service proxy, and the kube-controller-manager's
endpoints controller has filled the Service's Endpoints from the Ready gateway Pod.

The one stand-in is the gateway process itself (there is no kubelet, so no container runs): the
simulated kubelet gives the gateway Pod a non-loopback address of this machine (the API server
refuses to proxy to loopback), and there the loopback fake model server listens, admitting only
what the gateway's rendered ``openclaw.json`` (read from its ConfigMap) admits: a caller from a
trusted proxy address that names an identity of ``identityScopes`` in the trusted-proxy header and
a client the gateway can attribute the request to (``attributed``, the gateway's own rule; the
real gateway Pod in test_kubernetes_real_gateway.py is what found it missing).
"""

from __future__ import annotations

import ipaddress
import json
import socket

import psutil
import pytest

from occ.drivers.compute.base import CHAT_GATEWAY_NOT_RUNNING, ChatMessage, ComputeError
from occ.drivers.kube import names
from occ.drivers.kube.compute import KubernetesComputeDriver
from occ.ids import IdPrefix, new_id
from occ.services.agent_chat import chat_failure_message as plain_failure
from tests.fakes.fake_openai import REPLY, FakeOpenAI
from tests.kubecluster.fixtures import wait_for
from tests.kubecluster.support import DOCUMENT, kube_driver, ready_namespace, sharing_connection
from tests.occ.drivers.compute.local_support import context, new_agent, revision_ref, stored_secret

pytestmark = pytest.mark.kubernetes

TURNS = [ChatMessage(role="user", content="hello through the cluster")]


def host_address() -> str:
    """A non-loopback, non-link-local IPv4 address of this machine (the gateway Pod's address)."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family != socket.AF_INET:
                continue
            ip = ipaddress.ip_address(address.address)
            if not (ip.is_loopback or ip.is_link_local):
                return str(ip)
    pytest.skip("this machine has no non-loopback IPv4 address for the gateway Pod")


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def trusted_proxy_admission(config: dict):
    """What the gateway's rendered config lets in from off the Pod (trusted-proxy auth)."""
    gateway = config["gateway"]
    networks = [ipaddress.ip_network(cidr) for cidr in gateway["trustedProxies"]]
    header = gateway["auth"]["trustedProxy"]["userHeader"].lower()
    identities = set(gateway["auth"]["identityScopes"])
    assert gateway["auth"]["mode"] == "trusted-proxy"
    real_ip_fallback = gateway.get("allowRealIpFallback") is True

    def trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return any(address in network for network in networks)

    def attributed(headers: dict[str, str]) -> bool:
        """The gateway's attribution of a trusted proxy's request: the ``X-Forwarded-For`` hops
        from the right, loopback and trusted ones skipped, the first other one the client; else
        (``allowRealIpFallback``) ``X-Real-IP``; a loopback client is none."""
        for hop in reversed(headers.get("x-forwarded-for", "").split(",")):
            try:
                address = ipaddress.ip_address(hop.strip())
            except ValueError:
                continue
            if not (address.is_loopback or trusted(address)):
                return True
        try:
            real = ipaddress.ip_address(headers.get("x-real-ip", "").strip())
        except ValueError:
            return False
        return real_ip_fallback and not real.is_loopback

    def admit(client: str, headers: dict[str, str]) -> bool:
        lowered = {key.lower(): value for key, value in headers.items()}
        return trusted(ipaddress.ip_address(client)) and lowered.get(header) in identities and attributed(lowered)

    return admit


@pytest.fixture
def address():
    ip = host_address()
    return ip, free_port(ip)


def deploy_agent(kube, worker: KubernetesComputeDriver, ip: str, port: int):
    """An Agent whose first revision is active, its gateway Pod at ``ip``, where the stand-in
    gateway listens (admitting what the revision's rendered config admits) and the Service's
    Endpoints name it."""
    namespace = ready_namespace(worker)
    agent = new_agent(namespace.id)
    revision = revision_ref(agent, 1, DOCUMENT)
    ctx = context(agent, stored_secret("sk-chat-model-key"))
    kube.kubelet.assign_address({names.AGENT_LABEL: agent.id}, ip)
    worker.provision_runtime_credentials(agent)
    wait_for(lambda: worker.prepare_revision(revision, ctx).ready, timeout=90, interval=0.3, what="prepare ready")
    assert worker.activate_revision(revision, ctx).ready
    kube_namespace = names.tenant_namespace(namespace.id)
    config_map = kube.core.read_namespaced_config_map(names.config_map_name(agent.id, revision.id), kube_namespace)
    config = json.loads(config_map.data["openclaw.json"])
    gateway = FakeOpenAI(port=port, host=ip, admit=trusted_proxy_admission(config)).start()

    def endpoint_ready():
        endpoints = kube.core.read_namespaced_endpoints(names.gateway_name(agent.id), kube_namespace)
        return any(subset.addresses for subset in endpoints.subsets or [])

    wait_for(endpoint_ready, timeout=60, what="the gateway Service's Endpoints filled by the controller")
    return agent, revision, gateway


@pytest.fixture
def drivers(kube_faults, memory_secrets, address, request):
    """The worker's driver (through the fault proxy) and the web process's (its own identity),
    their gateways trusting ``request.param`` or the default range plus the Pod's address."""
    ip, port = address
    trusted = getattr(request, "param", None) or ["10.0.0.0/8", f"{ip}/32"]
    options = {"gateway_port": port, "trusted_proxy_cidrs": trusted,
               "client_pod_labels": {"app.kubernetes.io/name": "occ-api"}}
    with kube_driver(kube_faults.worker_kubeconfig, **options) as worker, \
            kube_driver(kube_faults.api_kubeconfig, **options) as web:
        yield worker, web


@pytest.fixture
def deployed(kube_faults, drivers, address):
    worker, web = drivers
    agent, revision, gateway = deploy_agent(kube_faults, worker, *address)
    try:
        yield kube_faults, worker, web, agent, revision, gateway
    finally:
        gateway.stop()


PERSON = "192.0.2.10"  # the address of the person OCC chats for (TEST-NET-1; only a header here)


def chat(web: KubernetesComputeDriver, agent, revision, client_address: str | None = PERSON) -> str:
    return "".join(web.chat(namespace_id=agent.namespace_id, agent_id=agent.id, revision_id=revision.id,
                            gateway_password=None, messages=TURNS, timeout=30, client_address=client_address))


def test_a_chat_streams_through_the_service_proxy_as_the_trusted_proxy(deployed, address):
    _kube, _worker, web, agent, revision, gateway = deployed
    ip, _port = address
    assert chat(web, agent, revision) == REPLY
    request = gateway.requests[-1]
    assert request["path"] == "/v1/chat/completions"
    assert request["stream"]
    assert request["identity"] == "occ-workspace-files"
    assert request["client"] == ip  # the API server dialled the Pod's address
    assert request["real_ip"] == PERSON  # the client OCC speaks for, named to the gateway
    # The API server passed on neither OCC's Kubernetes token nor any other Authorization.
    assert request["authorized"] is False


def test_a_gateway_that_stopped_answering_is_the_plain_words_not_running(deployed):
    _kube, _worker, web, agent, revision, gateway = deployed
    gateway.stop()  # the Pod still reads Ready, but nothing listens at its address
    with pytest.raises(ComputeError) as failed:
        chat(web, agent, revision)
    assert failed.value.code == CHAT_GATEWAY_NOT_RUNNING
    assert plain_failure(failed.value).startswith("The Agent's gateway is not running.")


def test_a_stopped_agent_or_another_revision_is_not_running(deployed):
    _kube, worker, web, agent, revision, _gateway = deployed
    with pytest.raises(ComputeError) as other:
        "".join(web.chat(namespace_id=agent.namespace_id, agent_id=agent.id, revision_id=new_id(IdPrefix.REVISION),
                         gateway_password=None, messages=TURNS, timeout=30))
    assert other.value.code == CHAT_GATEWAY_NOT_RUNNING
    worker.stop_revision(revision)
    with pytest.raises(ComputeError) as stopped:
        chat(web, agent, revision)
    assert stopped.value.code == CHAT_GATEWAY_NOT_RUNNING


def test_an_identity_without_services_proxy_is_refused_by_the_api_server(deployed):
    """The worker's RBAC (deploy/kubernetes/worker-rbac.yaml) has no services/proxy: the API
    server refuses its chat before anything reaches the gateway."""
    _kube, worker, _web, agent, revision, gateway = deployed
    with pytest.raises(ComputeError) as refused:
        chat(worker, agent, revision)
    assert refused.value.code == CHAT_GATEWAY_NOT_RUNNING
    assert "may not reach the gateway" in str(refused.value)
    assert gateway.requests == []


@pytest.mark.parametrize("drivers", [["10.0.0.0/8"]], indirect=True)
def test_a_caller_the_gateway_does_not_trust_is_refused(deployed):
    """The stand-in enforces the rendered config: gateways that trust another range than the
    API server's address refuse what it proxies, and chat says not running."""
    _kube, _worker, web, agent, revision, gateway = deployed
    with pytest.raises(ComputeError) as refused:
        chat(web, agent, revision)
    assert refused.value.code == CHAT_GATEWAY_NOT_RUNNING
    assert gateway.requests[-1]["identity"] == "occ-workspace-files"


@pytest.mark.parametrize("person", [None, "127.0.0.1", "not an address"])
def test_without_an_attributable_client_the_gateway_refuses_and_own_address_stands_in(deployed, person):
    """A person on OCC's host (loopback) or unknown: OCC names no client of its own unless it has
    an address (``OCC_KUBERNETES_CLIENT_ADDRESS``); the API server's hop (loopback here) is none,
    so the gateway refuses. With OCC's own address the same chat is answered, attributed to it."""
    _kube, _worker, web, agent, revision, gateway = deployed
    with pytest.raises(ComputeError) as refused:
        chat(web, agent, revision, client_address=person)
    assert refused.value.code == CHAT_GATEWAY_NOT_RUNNING
    assert gateway.requests[-1]["real_ip"] is None
    own = sharing_connection(web, client_address="198.51.100.7", gateway_port=web.port,
                             trusted_proxy_cidrs=web.trusted_proxy_cidrs)
    assert chat(own, agent, revision, client_address=person) == REPLY
    assert gateway.requests[-1]["real_ip"] == "198.51.100.7"
