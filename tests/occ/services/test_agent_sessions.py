"""The session index and transcripts against loopback stand-ins of the gateway RPC (real
WebSockets): the worker's refresh (metadata only, twice harmless, a down gateway costs only its
bound), and a transcript read (authorized, audited without its text, redacted, never stored)."""

from __future__ import annotations

import time

import pytest

from occ.drivers.secrets import get_secret_driver
from occ.errors import Forbidden
from occ.iam.actor import Actor, Source
from occ.models import AgentSession, AuditEvent
from occ.services.agent_sessions import TRANSCRIPT_READ, agent_sessions_refresh, agent_transcript_read
from tests.factories import NamespaceFactory, SecretFactory, grant, human
from tests.fakes.fake_gateway_rpc import FakeGateway, fake_gateways, running_agent  # noqa: F401

PASSWORD = "stand-in-gateway-password-7d1e"
CANARY = "sk-transcript-canary-55aa"
NOW_MS = int(time.time() * 1000)

SESSIONS = [
    {"key": "agent:main:main", "kind": "direct", "channel": "webchat", "displayName": "Main", "updatedAt": NOW_MS,
     "lastActivityAt": NOW_MS, "inputTokens": 120, "outputTokens": 30, "totalTokens": 150,
     "origin": {"provider": "webchat", "label": "Ada"}},
    {"key": "agent:main:slack:dm:u1", "channel": "slack", "updatedAt": NOW_MS - 60_000,
     "origin": {"provider": "slack", "from": "slack:U1"}},
]
HISTORY = [
    {"role": "user", "content": [{"type": "text", "text": "list my files"}], "timestamp": NOW_MS - 5000},
    {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                      {"type": "toolCall", "id": "c1", "name": "exec",
                                       "arguments": {"command": f"ls --token {CANARY}", "cwd": "/w"}}]},
    {"role": "toolResult", "toolCallId": "c1", "toolName": "exec",
     "content": [{"type": "text", "text": "a.txt\nb.txt"}], "isError": False},
    {"role": "assistant", "content": "Two files: a.txt and b.txt."},
]


@pytest.fixture
def gateway(fake_gateways):  # noqa: F811
    stand_in = FakeGateway(PASSWORD, sessions=[dict(s) for s in SESSIONS],
                           histories={"agent:main:main": HISTORY}).start()
    fake_gateways.append(stand_in)
    return stand_in


def test_the_refresh_indexes_what_the_gateway_lists_and_twice_is_harmless(db, fake_compute, gateway):
    agent = running_agent(NamespaceFactory(), gateway, fake_compute)
    assert agent_sessions_refresh(agent_id=agent.id) == 2
    assert agent_sessions_refresh(agent_id=agent.id) == 2
    rows = {row.key: row for row in AgentSession.objects.filter(agent=agent)}
    assert set(rows) == {"agent:main:main", "agent:main:slack:dm:u1"}
    main = rows["agent:main:main"]
    assert (main.channel, main.person, main.title, main.total_tokens, main.input_tokens) == (
        "webchat", "Ada", "Main", 150, 120)
    assert rows["agent:main:slack:dm:u1"].person == "slack:U1"
    assert (main.message_count, rows["agent:main:slack:dm:u1"].message_count) == (4, 0)
    assert gateway.calls("chat.history")[0] == {"sessionKey": "agent:main:main", "limit": 1, "maxChars": 1}
    assert len(gateway.calls("chat.history")) == 2, "the second refresh asks no count: nothing changed"
    assert abs(main.last_activity_at.timestamp() * 1000 - NOW_MS) < 2
    connect, listed = gateway.requests[0], gateway.calls("sessions.list")[0]
    assert connect["params"]["scopes"] == ["operator.read"]
    assert listed["sortBy"] == "activity"
    gateway.sessions.pop()  # gone from the gateway: gone from the index
    agent_sessions_refresh(agent_id=agent.id)
    assert list(AgentSession.objects.filter(agent=agent).values_list("key", flat=True)) == ["agent:main:main"]


def test_a_gateway_that_does_not_answer_costs_its_bound_and_keeps_the_index(db, fake_compute, gateway, settings,
                                                                             fake_gateways):  # noqa: F811
    settings.OCC_GATEWAY_RPC_TIMEOUT_SECONDS = 0.5
    agent = running_agent(NamespaceFactory(), gateway, fake_compute)
    agent_sessions_refresh(agent_id=agent.id)
    silent = FakeGateway(PASSWORD, silent=True).start()
    fake_gateways.append(silent)
    fake_compute.serve_gateway_at(agent.id, silent.url)
    started = time.monotonic()
    assert agent_sessions_refresh(agent_id=agent.id) is None
    assert time.monotonic() - started < 2.0
    assert AgentSession.objects.filter(agent=agent).count() == 2


def test_a_stopped_agent_is_not_asked(db, fake_compute, gateway):
    agent = running_agent(NamespaceFactory(), gateway, fake_compute)
    agent.desired_runtime_state = "stopped"
    agent.save(update_fields=["desired_runtime_state"])
    assert agent_sessions_refresh(agent_id=agent.id) is None
    assert gateway.requests == []


def test_a_transcript_is_authorized_audited_without_text_redacted_and_compact(db, fake_compute, gateway):
    namespace = NamespaceFactory()
    model_key = SecretFactory(namespace=namespace)
    get_secret_driver().put(model_key.backend_name, CANARY)
    agent = running_agent(namespace, gateway, fake_compute, harness_secret_id=model_key.id)
    agent_sessions_refresh(agent_id=agent.id)
    session = AgentSession.objects.get(agent=agent, key="agent:main:main")
    reader, chatter = human("reader"), human("chatter")
    grant(reader, "read_conversations:agent", namespace=namespace, resource_kind="agent", resource_id=agent.id)
    grant(chatter, "read:agent", "invoke:agent", namespace=namespace)

    counted = len(gateway.calls("chat.history"))
    with pytest.raises(Forbidden):
        agent_transcript_read(actor=Actor(principal=chatter, source=Source.CONSOLE), namespace_id=namespace.id,
                              agent_id=agent.id, session_id=session.id)
    assert len(gateway.calls("chat.history")) == counted

    transcript = agent_transcript_read(actor=Actor(principal=reader, source=Source.CONSOLE),
                                       namespace_id=namespace.id, agent_id=agent.id, session_id=session.id)
    roles = [entry.role for entry in transcript.entries]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = transcript.entries[1].tool_calls[0]
    assert call.name == "exec"
    assert "ls --token" in call.arguments
    assert CANARY not in call.arguments
    assert transcript.entries[2].tool_name == "exec"
    assert transcript.entries[2].text == "a.txt b.txt"
    assert [e.text for e in transcript.searched("two files")] == ["Two files: a.txt and b.txt."]
    assert gateway.calls("chat.history")[-1] == {"sessionKey": "agent:main:main", "limit": 1000}
    event = AuditEvent.objects.get(action=TRANSCRIPT_READ)
    assert (event.actor_id, event.resource_id, event.kind) == (reader.id, agent.id, "access")
    assert event.details["sessionId"] == session.id
    assert "files" not in str(event.details)
    assert CANARY not in str(event.details)
