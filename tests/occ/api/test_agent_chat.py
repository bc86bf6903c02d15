"""POST …/agents/{agt}/chat: the console's Chat tab through the API. The same service
(``occ.services.agent_chat``), the same ``invoke:agent`` on the exact Agent, the same one
audit event per conversation; the reply streams as server-sent events. The ``occ chat`` end to
end through gunicorn is in tests/cli/test_cli_end_to_end.py."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from occ.drivers.compute import CHAT_GATEWAY_NOT_RUNNING
from occ.drivers.compute.fake import FAKE_CHAT_REPLY, error
from occ.models import Agent, AuditEvent
from occ.models.work import revision_reconcile_key
from occ.services.agent_chat import CHAT_FAILURE_MESSAGES, CONVERSATION_STARTED
from tests.agents_support import after_one_denial, caller, state
from tests.fakes.compute import deployable_agent, run_work
from tests.occ.api.test_agent_lifecycle import latest, url

WORDS = "the-words-of-an-api-message-5d2"


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace, bound=1)


@pytest.fixture
def running(api, agent) -> Agent:
    revision = api.post(url(agent, "deploy")).data["id"]
    run_work(revision_reconcile_key(revision))
    agent.refresh_from_db()
    assert agent.active_revision_id == revision
    return agent


def chat(key: str, agent: Agent, text: str, *, history=(), conversation_id=None):
    body = {"messages": [*history, {"role": "user", "content": text}]}
    if conversation_id is not None:
        body["conversationId"] = conversation_id
    return Client().post(url(agent, "chat"), json.dumps(body), content_type="application/json",
                         headers={"x-api-key": key})


def events(response) -> list[tuple[str, dict]]:
    assert response.status_code == 200, response.content[:400]
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-store"
    raw = b"".join(response.streaming_content).decode()
    found = []
    for block in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def reply_of(found) -> str:
    return "".join(data["text"] for name, data in found if name == "token")


def started(agent: Agent):
    return AuditEvent.objects.filter(action=CONVERSATION_STARTED, resource_id=agent.id)


def test_the_reply_streams_and_a_conversation_is_audited_once(api, running, fake_compute):
    first = events(chat(api.key, running, f"hello {WORDS}"))
    assert first[0][0] == "conversation"
    assert first[-1] == ("done", {})
    assert len([name for name, _ in first if name == "token"]) > 3, "the reply arrives in pieces"
    assert reply_of(first) == f"{FAKE_CHAT_REPLY} hello {WORDS}"
    conversation_id = first[0][1]["id"]

    history = [{"role": "user", "content": f"hello {WORDS}"}, {"role": "assistant", "content": reply_of(first)}]
    second = events(chat(api.key, running, "again", history=history, conversation_id=conversation_id))
    assert second[0] == ("conversation", {"id": conversation_id})
    assert reply_of(second) == f"{FAKE_CHAT_REPLY} again"

    event = started(running).get()
    assert (event.kind, event.details["conversationId"], event.details["revisionId"]) == (
        "access", conversation_id, running.active_revision_id)
    assert WORDS not in json.dumps(event.details), "the audit never holds a message's text"
    assert fake_compute.calls_to("chat") == [running.active_revision_id] * 2


def test_a_conversation_id_the_caller_did_not_start_starts_and_audits_a_new_one(api, running, fake_compute):
    made_up = "cnv_00000000-0000-4000-8000-000000000000"
    found = events(chat(api.key, running, "hi", conversation_id=made_up))
    assert found[0][1]["id"] != made_up
    assert started(running).count() == 1

    # Someone else's conversation with the same Agent is not theirs to go on with unaudited.
    _, other = caller("read:agent", "invoke:agent", namespace=running.namespace)
    theirs = events(chat(other.key, running, "hi", conversation_id=found[0][1]["id"]))[0][1]["id"]
    assert theirs != found[0][1]["id"]
    assert started(running).count() == 2


def test_invoke_on_this_agent_is_needed_and_the_denial_audited(running, fake_compute):
    _, reader = caller("read:namespace", "read:agent", "operate:agent", namespace=running.namespace)
    before = state()
    response = chat(reader.key, running, "hello")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "FORBIDDEN"
    assert state() == after_one_denial(before)
    assert fake_compute.calls_to("chat") == []

    _, invoker = caller("invoke:agent", namespace=running.namespace, resource_kind="agent", resource_id=running.id)
    assert reply_of(events(chat(invoker.key, running, "hello"))) == f"{FAKE_CHAT_REPLY} hello"


def test_an_agent_never_deployed_is_a_409_and_nothing_is_audited(api, agent, fake_compute):
    response = chat(api.key, agent, "hello")
    assert response.status_code == 409
    body = response.json()["error"]
    assert body["code"] == "AGENT_NOT_RUNNING"
    assert "not been deployed" in body["message"]
    assert not started(agent).exists()


def test_a_stopped_agent_is_told_to_start_not_to_deploy(api, running, fake_compute):
    assert api.post(url(running, "stop")).status == 202
    run_work(latest(running, "stopped").pk)
    response = chat(api.key, running, "hello")
    assert response.status_code == 409
    assert response.json()["error"]["message"] == "The Agent is stopped. Start it to talk to it."


@pytest.mark.parametrize("body", [
    pytest.param({"messages": []}, id="no-message"),
    pytest.param({"messages": [{"role": "assistant", "content": "hi"}]}, id="last-not-the-person"),
    pytest.param({"messages": [{"role": "user", "content": "   "}]}, id="blank"),
    pytest.param({"messages": [{"role": "user", "content": "hi"}], "conversationId": "nope"}, id="bad-id"),
])
def test_a_bad_turn_is_a_400_and_reaches_no_gateway(api, running, fake_compute, body):
    response = api.post(url(running, "chat"), body)
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert fake_compute.calls_to("chat") == []
    assert not started(running).exists()


def test_a_gateway_that_fails_mid_turn_ends_the_stream_with_an_error_in_plain_words(api, running, fake_compute):
    fake_compute.script("chat", running.active_revision_id, [error(CHAT_GATEWAY_NOT_RUNNING, retryable=False)])
    found = events(chat(api.key, running, "hello"))
    assert found[0][0] == "conversation"
    assert found[-1] == ("error", {"code": CHAT_GATEWAY_NOT_RUNNING,
                                   "message": CHAT_FAILURE_MESSAGES[CHAT_GATEWAY_NOT_RUNNING]})


def test_the_chat_route_is_documented_as_a_stream(db):
    document = Client().get("/api/openapi.json").json()
    operation = document["paths"]["/namespaces/{namespace_id}/agents/{agent_id}/chat"]["post"]
    assert list(operation["responses"]["200"]["content"]) == ["text/event-stream"]
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/AgentChat")
    assert operation["responses"]["409"]["content"]["application/json"]
