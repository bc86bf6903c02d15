"""Sessions, transcripts and the approvals inbox through the JSON API, against loopback stand-ins
of two Agents' gateway RPC (real WebSockets): a person with ``read_conversations`` on one Agent
sees that Agent's sessions and not the other's; a transcript, its search and its Markdown export;
approvals listed, decided once (409 the second time)."""

from __future__ import annotations

import time

import pytest

from occ.models import AuditEvent
from occ.services.agent_sessions import TRANSCRIPT_READ, agent_sessions_refresh
from occ.services.approvals import DECIDED
from tests.conftest import ApiClient
from tests.factories import NamespaceFactory, grant, key_for, service_principal
from tests.fakes.fake_gateway_rpc import FakeGateway, fake_gateways, running_agent  # noqa: F401

PASSWORD = "stand-in-gateway-password-40aa"
NOW_MS = int(time.time() * 1000)


def sessions(prefix: str, count: int) -> list[dict]:
    return [{"key": f"agent:main:{prefix}-{n}", "channel": "webchat" if n % 2 else "slack",
             "updatedAt": NOW_MS - n * 1000, "totalTokens": 10 * n, "origin": {"label": f"{prefix} person {n}"}}
            for n in range(count)]


HISTORY = [{"role": "user", "content": "hello there"},
           {"role": "assistant", "content": [{"type": "text", "text": "Hi! Running a tool."},
                                             {"type": "toolCall", "name": "read", "arguments": {"path": "a.md"}}]},
           {"role": "assistant", "content": "Done."}]
APPROVAL = {"id": "e-77", "createdAtMs": NOW_MS, "expiresAtMs": NOW_MS + 60_000,
            "request": {"command": "rm -rf build", "commandArgv": ["rm", "-rf", "build"],
                        "sessionKey": "agent:main:a-1"}}


@pytest.fixture
def world(db, fake_compute, fake_gateways):  # noqa: F811
    namespace = NamespaceFactory()
    one = FakeGateway(PASSWORD, sessions=sessions("a", 3), histories={"agent:main:a-1": HISTORY},
                      approvals={"exec": [APPROVAL], "plugin": []}).start()
    two = FakeGateway(PASSWORD, sessions=sessions("b", 2)).start()
    fake_gateways.extend([one, two])
    first, second = running_agent(namespace, one, fake_compute), running_agent(namespace, two, fake_compute)
    for agent in (first, second):
        agent_sessions_refresh(agent_id=agent.id)
    reader = service_principal("reader")
    grant(reader, "read_conversations:agent", "decide_approvals:agent", namespace=namespace, resource_kind="agent",
          resource_id=first.id)
    chatter = service_principal("chatter")
    grant(chatter, "read:agent", "invoke:agent", namespace=namespace)
    return {"ns": namespace, "first": first, "second": second, "one": one, "reader": ApiClient(key_for(reader)),
            "chatter": ApiClient(key_for(chatter))}


def test_the_fleet_list_shows_only_the_agents_whose_conversations_the_caller_may_read(world):
    page = world["reader"].get("/sessions?limit=2")
    assert page.status == 200
    assert [row["key"] for row in page.data["sessions"]] == ["agent:main:a-0", "agent:main:a-1"]
    rest = world["reader"].get(f"/sessions?limit=2&cursor={page.data['nextCursor']}").data
    assert [row["key"] for row in rest["sessions"]] == ["agent:main:a-2"]
    assert rest["nextCursor"] is None
    assert {row["agentId"] for row in page.data["sessions"]} == {world["first"].id}
    assert world["chatter"].get("/sessions").data["sessions"] == []
    filtered = world["reader"].get("/sessions?channel=webchat&person=person%201").data["sessions"]
    assert [(row["key"], row["person"], row["totalTokens"]) for row in filtered] == [
        ("agent:main:a-1", "a person 1", 10)]
    assert world["reader"].get("/sessions?cursor=nonsense").status == 400


def test_one_agents_sessions_need_the_permission_on_it(world):
    ns, first, second = world["ns"].id, world["first"].id, world["second"].id
    assert len(world["reader"].get(f"/namespaces/{ns}/agents/{first}/sessions").data["sessions"]) == 3
    assert world["reader"].get(f"/namespaces/{ns}/agents/{second}/sessions").status == 403
    assert world["chatter"].get(f"/namespaces/{ns}/agents/{first}/sessions").status == 403


def test_a_transcript_its_search_and_its_markdown_export(world):
    ns, first = world["ns"].id, world["first"].id
    session_id = next(row["id"] for row in world["reader"].get("/sessions").data["sessions"]
                      if row["key"] == "agent:main:a-1")
    path = f"/namespaces/{ns}/agents/{first}/sessions/{session_id}"
    transcript = world["reader"].get(path)
    assert transcript.status == 200
    entries = transcript.data["entries"]
    assert [e["role"] for e in entries] == ["user", "assistant", "assistant"]
    assert entries[1]["toolCalls"] == [{"name": "read", "arguments": '{"path":"a.md"}'}]
    assert [e["text"] for e in world["reader"].get(f"{path}?q=DONE").data["entries"]] == ["Done."]
    exported = world["reader"].client.get(f"{path}?format=markdown", headers={"x-api-key": world["reader"].key})
    assert exported.status_code == 200
    assert exported["Content-Type"].startswith("text/markdown")
    assert "attachment" in exported["Content-Disposition"]
    markdown = exported.content.decode()
    assert "hello there" in markdown
    assert "tool call `read`" in markdown
    reads = AuditEvent.objects.filter(action=TRANSCRIPT_READ).order_by("occurred_at")
    assert [event.details["purpose"] for event in reads] == ["view", "view", "export"]
    assert all("hello" not in str(event.details) for event in reads)
    assert world["chatter"].get(path).status == 403


def test_approvals_listed_and_decided_once(world):
    ns, first = world["ns"].id, world["first"].id
    inbox = world["reader"].get("/approvals").data
    assert [(a["id"], a["agentId"], a["command"], a["sessionKey"]) for a in inbox["approvals"]] == [
        ("e-77", first, "rm -rf build", "agent:main:a-1")]
    assert world["chatter"].get("/approvals").data["approvals"] == []
    path = f"/namespaces/{ns}/agents/{first}/approvals/exec/e-77"
    assert world["chatter"].post(path, {"decision": "approve"}).status == 403
    decided = world["reader"].post(path, {"decision": "deny"})
    assert decided.status == 200
    assert decided.data["decision"] == "deny"
    again = world["reader"].post(path, {"decision": "approve"})
    assert (again.status, again.error_code) == (409, "APPROVAL_ALREADY_DECIDED")
    assert world["one"].calls("exec.approval.resolve") == [{"id": "e-77", "decision": "deny"}]
    assert AuditEvent.objects.filter(action=DECIDED, resource_id=first).count() == 1
    assert world["reader"].post(path, {"decision": "maybe"}).status == 400
