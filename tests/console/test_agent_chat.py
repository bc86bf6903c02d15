"""The Agent page's Chat tab (console.views.agent_chat): the partial, the streamed reply through
the compute driver (the fake's here; the real gateway's in tests/browser/test_chat_gateway.py),
errors in plain words, ``invoke:agent`` on the exact Agent, one audit event per conversation."""

from __future__ import annotations

import json

import pytest

from occ.commands.agents import AgentCreate
from occ.drivers.compute import CHAT_GATEWAY_NOT_RUNNING, CHAT_MODEL_REFUSED, CHAT_TIMEOUT
from occ.drivers.compute.fake import FAKE_CHAT_REPLY, error
from occ.models import Agent, AuditEvent
from occ.services.agent_chat import CHAT_FAILURE_MESSAGES as PLAIN_FAILURES
from occ.services.agent_chat import CONVERSATION_STARTED
from occ.services.agents import agent_create
from tests.console.conftest import ConsoleClient, agent_with_secrets, fragment_root
from tests.factories import grant, human

MODEL_CANARY = "sk-canary-chat-model-4e1f"
SECRET_WORDS = "the-words-of-a-private-message-71c"


@pytest.fixture
def agent(ready_namespace, console_actor, fake_compute) -> Agent:
    return agent_with_secrets(console_actor, ready_namespace.id, name="Chatty", model_key=MODEL_CANARY)


def page(agent: Agent) -> str:
    return f"/console/namespaces/{agent.namespace_id}/agents/{agent.id}"


def send(client: ConsoleClient, agent: Agent, text: str, *, history=(), conversation_id=None):
    body = {"conversationId": conversation_id, "messages": [*history, {"role": "user", "content": text}]}
    return client.generic("POST", f"{page(agent)}/chat", json.dumps(body), content_type="application/json",
                          headers={"X-CSRFToken": client.token(), "Accept": "text/event-stream"})


def events(response) -> list[tuple[str, dict]]:
    assert response["Content-Type"].startswith("text/event-stream"), response.content[:300]
    raw = b"".join(response.streaming_content).decode()
    found = []
    for block in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def reply_of(found: list[tuple[str, dict]]) -> str:
    return "".join(data["text"] for name, data in found if name == "token")


def started(agent: Agent):
    return AuditEvent.objects.filter(action=CONVERSATION_STARTED, resource_id=agent.id)


# --- the tab ---------------------------------------------------------------------------------------


def test_the_chat_tab_is_a_partial_with_the_form_and_no_gateway_address(console, running, fake_compute):
    response = console.hx_get(page(running), {"tab": "chat"})
    assert response.status_code == 200
    text = response.content.decode()
    assert fragment_root(text) == "div#agent-tabs"
    assert 'id="agent-chat"' in text
    assert 'id="chat-form"' in text
    assert f'data-chat-url="{page(running)}/chat"' in text
    assert 'aria-current="page">Chat</a>' in text
    assert "New conversation" in text
    assert "hx-trigger" not in text.split('id="agent-chat"')[0], "the chat tab must not re-read itself"
    assert "ws://" not in text
    assert "127.0.0.1" not in text
    assert MODEL_CANARY not in text
    full = console.get(page(running), {"tab": "chat"}).content.decode()
    assert "console/chat.js" in full
    assert "<script>" not in full


def test_an_agent_never_deployed_says_so_and_refuses_a_message(console, agent):
    text = console.hx_get(page(agent), {"tab": "chat"}).content.decode()
    assert "has not been deployed yet" in text
    assert 'id="chat-form"' not in text
    response = send(console, agent, "hello")
    assert response.status_code == 409
    assert "not been deployed" in response.json()["message"]
    assert not started(agent).exists()


# --- a conversation ------------------------------------------------------------------------------


def test_the_reply_streams_token_by_token_and_the_conversation_is_audited_once(console, running, fake_compute):
    first = events(send(console, running, f"hello {SECRET_WORDS}"))
    assert first[0][0] == "conversation"
    assert first[-1][0] == "done"
    assert len([name for name, _ in first if name == "token"]) > 3, "the reply arrives in pieces"
    assert reply_of(first) == f"{FAKE_CHAT_REPLY} hello {SECRET_WORDS}"
    conversation_id = first[0][1]["id"]
    assert conversation_id.startswith("cnv_")

    history = [{"role": "user", "content": f"hello {SECRET_WORDS}"}, {"role": "assistant", "content": reply_of(first)}]
    second = events(send(console, running, "again", history=history, conversation_id=conversation_id))
    assert second[0] == ("conversation", {"id": conversation_id})
    assert reply_of(second) == f"{FAKE_CHAT_REPLY} again"

    event = started(running).get()
    assert event.kind == "access"
    assert event.details["conversationId"] == conversation_id
    assert event.details["revisionId"] == running.active_revision_id
    assert SECRET_WORDS not in json.dumps(event.details), "the audit never holds a message's text"
    assert fake_compute.calls_to("chat") == [running.active_revision_id] * 2

    # New conversation: the empty tab again, and the next message starts (and audits) another.
    fresh = console.hx_post(f"{page(running)}/chat/new")
    assert fresh.status_code == 200
    assert fragment_root(fresh.content.decode()) == "section#agent-chat"
    third = events(send(console, running, "hi", conversation_id=conversation_id))
    assert third[0][1]["id"] != conversation_id
    assert started(running).count() == 2


def test_a_stopped_gateway_is_said_in_plain_words(console, running, fake_compute):
    with fake_compute._store.edit() as state:  # the gateway died; OCC still thinks it runs
        state["gateways"][running.id]["running"] = False
    found = events(send(console, running, "hello"))
    assert found[-1] == ("error", {"code": CHAT_GATEWAY_NOT_RUNNING,
                                   "message": PLAIN_FAILURES[CHAT_GATEWAY_NOT_RUNNING]})
    assert "not running" in found[-1][1]["message"]
    assert reply_of(found) == ""


@pytest.mark.parametrize("code", [CHAT_TIMEOUT, CHAT_MODEL_REFUSED])
def test_a_timeout_or_a_refusal_is_said_in_plain_words(console, running, fake_compute, code):
    fake_compute.script("chat", running.active_revision_id, [error(code, retryable=False)])
    found = events(send(console, running, "hello"))
    assert found[-1] == ("error", {"code": code, "message": PLAIN_FAILURES[code]})


def test_a_malformed_turn_is_refused_before_anything_is_sent(console, running, fake_compute):
    response = send(console, running, "   ")
    assert response.status_code == 400
    bad = console.generic("POST", f"{page(running)}/chat", "not json", content_type="application/json",
                          headers={"X-CSRFToken": console.token()})
    assert bad.status_code == 400
    assert bad.json()["title"] == "Message not sent"
    assert fake_compute.calls_to("chat") == []


def test_without_csrf_the_post_is_refused(console, running, fake_compute):
    response = console.generic("POST", f"{page(running)}/chat",
                               json.dumps({"messages": [{"role": "user", "content": "hi"}]}),
                               content_type="application/json")
    assert response.status_code == 403
    assert fake_compute.calls_to("chat") == []


# --- authorization -------------------------------------------------------------------------------


def test_without_invoke_agent_the_tab_says_so_and_a_message_is_refused_and_audited(running, fake_compute):
    reader = human("reader")
    grant(reader, "read:namespace", "read:agent", namespace=running.namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    text = client.hx_get(page(running), {"tab": "chat"}).content.decode()
    assert "You can see this Agent but not chat with it." in text
    assert 'id="chat-form"' not in text
    assert "New conversation" not in text

    response = send(client, running, "hello")
    assert response.status_code == 403
    assert response.json()["title"] == "You may not talk to this Agent"
    denial = AuditEvent.objects.get(kind="authorization_denial", actor_id=reader.id)
    assert denial.details["permission"] == "invoke:agent"
    assert denial.resource_id == running.id
    assert fake_compute.calls_to("chat") == []
    assert not started(running).exists()


def test_invoke_on_another_agent_does_not_reach_this_one(running, fake_compute, console_actor):
    other = agent_create(actor=console_actor, namespace_id=running.namespace_id, command=AgentCreate(
        name="Other", configuration_id=running.configuration_id,
        harness_auth={"method": "api_key", "source": {"kind": "secret", "namespaceId": running.namespace_id,
                                                       "id": running.harness_secret_id}}))
    person = human("person")
    grant(person, "read:namespace", "read:agent", namespace=running.namespace)
    grant(person, "invoke:agent", namespace=running.namespace, resource_kind="agent", resource_id=other.id)
    client = ConsoleClient()
    client.sign_in("person", "a-long-test-password")
    assert send(client, running, "hello").status_code == 403
    grant(person, "invoke:agent", namespace=running.namespace, resource_kind="agent", resource_id=running.id)
    assert reply_of(events(send(client, running, "hello"))) == f"{FAKE_CHAT_REPLY} hello"
