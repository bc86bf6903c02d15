"""Chat with the Agent's model endpoint down (issue 27, item 2): the gateway retries for a minute
or more and then only says "the model returned an error". OCC asks the endpoint itself while the
gateway works, so a refused connection, an address that does not resolve, a timeout or a
rejected key is said as soon as it is known, in those words, and the waiting gateway is
abandoned. The fake compute driver plays a gateway that takes its time; the model endpoint is
a real loopback server (or a port nothing listens on)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from devtools.fake_openai import FakeOpenAI
from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.configurations import ConfigurationCreate
from occ.commands.secrets import SecretCreate
from occ.drivers.compute import CHAT_MODEL_REFUSED
from occ.drivers.compute.fake import FAKE_CHAT_REPLY, error, sleep
from occ.models import Agent
from occ.models.work import revision_reconcile_key
from occ.services import agent_chat as chat_service
from occ.services.agent_chat import CHAT_FAILURE_MESSAGES as PLAIN_FAILURES
from occ.services.agent_chat import (
    CHAT_MODEL_ENDPOINT_REFUSED,
    CHAT_MODEL_ENDPOINT_TIMEOUT,
    CHAT_MODEL_ENDPOINT_UNREACHABLE,
    CHAT_MODEL_KEY_REJECTED,
)
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.configurations import configuration_create
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from tests.console.test_agent_chat import events, reply_of, send
from tests.fakes.compute import run_work

MODEL_KEY = "sk-probe-model-key-9d2c"
GATEWAY_RETRYING_SECONDS = 30  # what a gateway spends retrying a dead endpoint (71 s were measured)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join(timeout=2)
    for connection in accepted:
        connection.close()
    listener.close()


@pytest.fixture
def model_server() -> Iterator[FakeOpenAI]:
    def admit(_client: str, headers: dict[str, str]) -> bool:
        return {name.lower(): value for name, value in headers.items()}.get("authorization") == f"Bearer {MODEL_KEY}"

    server = FakeOpenAI(admit=admit).start()
    yield server
    server.stop()


@pytest.fixture
def rejecting_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(admit=lambda _client, _headers: False).start()
    yield server
    server.stop()


def deployed(actor, namespace_id: str, base_url: str) -> Agent:
    """An Agent whose primary model is an OpenAI-compatible endpoint at ``base_url``, deployed
    on the fake compute driver, its model key in a Secret as the Create Agent page leaves it."""
    key = secret_create(actor=actor, namespace_id=namespace_id, command=SecretCreate(name="model-key", value=MODEL_KEY))
    values = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "compatible/echo-model"}}},
              "models": {"mode": "merge", "providers": {"compatible": {
                  "baseUrl": base_url, "api": "openai-completions",
                  "apiKey": "${OCC_MODEL_API_KEY}", "models": [{"id": "echo-model", "name": "echo-model"}]}}}}
    configuration = configuration_create(actor=actor, namespace_id=namespace_id,
                                         command=ConfigurationCreate(kind="agent", values=values))
    agent = agent_create(actor=actor, namespace_id=namespace_id, command=AgentCreate(
        name="Prober", configuration_id=configuration.id, harness_auth={
            "method": "api_key", "source": {"kind": "secret", "namespaceId": namespace_id, "id": key.id}}))
    agent_secret_access_grant(actor=actor, namespace_id=namespace_id, agent_id=agent.id,
                              command=AgentSecretAccess(secret_ids=[key.id]))
    revision = agent_deploy(actor=actor, namespace_id=namespace_id, agent_id=agent.id)
    run_work(revision_reconcile_key(revision.id))
    agent.refresh_from_db()
    assert agent.active_revision_id == revision.id
    return agent


def timed_send(console, agent: Agent) -> tuple[list, float]:
    began = time.monotonic()
    found = events(send(console, agent, "hello"))
    return found, time.monotonic() - began


@pytest.mark.parametrize(("endpoint", "code"), [
    pytest.param("refused", CHAT_MODEL_ENDPOINT_REFUSED, id="connection-refused"),
    pytest.param("unresolvable", CHAT_MODEL_ENDPOINT_UNREACHABLE, id="name-does-not-resolve"),
    pytest.param("silent", CHAT_MODEL_ENDPOINT_TIMEOUT, id="timed-out"),
    pytest.param("rejecting", CHAT_MODEL_KEY_REJECTED, id="key-rejected"),
])
def test_a_dead_model_endpoint_is_named_at_once_not_after_the_gateway_gives_up(
        console, console_actor, ready_namespace, fake_compute, monkeypatch, request, endpoint, code):
    monkeypatch.setattr(chat_service, "PROBE_TIMEOUT_SECONDS", 1.0)
    base_url = {
        "refused": lambda: f"http://127.0.0.1:{closed_port()}/v1",
        "unresolvable": lambda: "http://model-endpoint.invalid/v1",
        "silent": lambda: request.getfixturevalue("silent_endpoint"),
        "rejecting": lambda: request.getfixturevalue("rejecting_server").base_url,
    }[endpoint]()
    agent = deployed(console_actor, ready_namespace.id, base_url)
    fake_compute.script("chat", agent.active_revision_id, [sleep(GATEWAY_RETRYING_SECONDS)])
    found, elapsed = timed_send(console, agent)
    assert found[-1] == ("error", {"code": code, "message": PLAIN_FAILURES[code]})
    assert elapsed < 8, f"the cause took {elapsed:.1f} s to say"
    assert reply_of(found) == ""
    text = str(found)
    assert MODEL_KEY not in text
    assert base_url not in text
    assert "127.0.0.1" not in text


def test_the_gateway_failure_is_named_by_the_endpoint_when_it_is_at_fault(
        console, console_actor, ready_namespace, fake_compute):
    agent = deployed(console_actor, ready_namespace.id, f"http://127.0.0.1:{closed_port()}/v1")
    fake_compute.script("chat", agent.active_revision_id, [error(CHAT_MODEL_REFUSED, retryable=False)])
    found = events(send(console, agent, "hello"))
    assert found[-1][1]["code"] == CHAT_MODEL_ENDPOINT_REFUSED
    assert "refused the connection" in found[-1][1]["message"]
    assert "refused to answer" not in found[-1][1]["message"]


def test_a_healthy_endpoint_and_the_right_key_leave_the_reply_alone(
        console, console_actor, ready_namespace, fake_compute, model_server):
    agent = deployed(console_actor, ready_namespace.id, model_server.base_url)
    fake_compute.script("chat", agent.active_revision_id, [sleep(1.5)])  # the probe answers first
    found = events(send(console, agent, "hello"))
    assert found[-1] == ("done", {})
    assert reply_of(found) == f"{FAKE_CHAT_REPLY} hello"
    probes = [r for r in model_server.requests if r["method"] == "GET"]
    assert probes
    assert all(r["path"] == "/v1/models" and r["authorized"] for r in probes)


def test_a_gateway_that_fails_on_its_own_keeps_its_own_words(
        console, console_actor, ready_namespace, fake_compute, model_server):
    agent = deployed(console_actor, ready_namespace.id, model_server.base_url)
    fake_compute.script("chat", agent.active_revision_id, [error(CHAT_MODEL_REFUSED, retryable=False)])
    found = events(send(console, agent, "hello"))
    assert found[-1] == ("error", {"code": CHAT_MODEL_REFUSED, "message": PLAIN_FAILURES[CHAT_MODEL_REFUSED]})
