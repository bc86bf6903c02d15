"""The approvals inbox against loopback stand-ins of the gateway RPC (real WebSockets): pending
exec and plugin approvals of the Agents a person may answer for, redacted; one decision, the
second refused (409), audited with who decided; a down gateway named, never waited on."""

from __future__ import annotations

import time

import pytest

from occ.drivers.secrets import get_secret_driver
from occ.errors import Forbidden, NotFound
from occ.iam.actor import Actor, Source
from occ.models import ApprovalDecision, AuditEvent
from occ.services.approvals import DECIDED, AlreadyDecided, approval_decide, approvals_pending
from tests.factories import NamespaceFactory, SecretFactory, grant, human
from tests.fakes.fake_gateway_rpc import FakeGateway, fake_gateways, running_agent  # noqa: F401

PASSWORD = "stand-in-gateway-password-2b9c"
CANARY = "sk-approval-canary-9f3e"
NOW_MS = int(time.time() * 1000)


def exec_request(approval_id: str) -> dict:
    return {"id": approval_id, "createdAtMs": NOW_MS, "expiresAtMs": NOW_MS + 120_000, "request": {
        "command": f"curl -H 'Authorization: Bearer {CANARY}' https://example.test",
        "commandArgv": ["curl", "-H", f"Authorization: Bearer {CANARY}", "https://example.test"],
        "cwd": "/workspace", "agentId": "main", "sessionKey": "agent:main:main", "host": "gateway",
        "env": {"API_TOKEN": "env-value-never-shown-61"}}}


PLUGIN = {"id": "plugin:p1", "createdAtMs": NOW_MS, "expiresAtMs": NOW_MS + 60_000, "request": {
    "pluginId": "github", "title": "Merge pull request", "description": "Merge #12 into main", "toolName": "gh_merge",
    "agentId": "main", "sessionKey": "agent:main:slack:dm:u1"}}


@pytest.fixture
def world(db, fake_compute, fake_gateways):  # noqa: F811
    namespace = NamespaceFactory()
    model_key = SecretFactory(namespace=namespace)
    get_secret_driver().put(model_key.backend_name, CANARY)
    gateway = FakeGateway(PASSWORD, approvals={"exec": [exec_request("e1")], "plugin": [PLUGIN]}).start()
    down = FakeGateway(PASSWORD).start()
    fake_gateways.extend([gateway, down])
    agent = running_agent(namespace, gateway, fake_compute, harness_secret_id=model_key.id)
    other = running_agent(namespace, down, fake_compute)
    down.stop()  # nothing listens there any more
    fake_gateways.remove(down)
    decider, reader = human("decider"), human("reader")
    grant(decider, "decide_approvals:agent", namespace=namespace)
    grant(reader, "read:agent", "read_conversations:agent", namespace=namespace)
    return {"ns": namespace, "agent": agent, "other": other, "gateway": gateway,
            "decider": Actor(principal=decider, source=Source.API),
            "reader": Actor(principal=reader, source=Source.API)}


def test_the_inbox_lists_both_kinds_redacted_and_names_the_gateway_that_did_not_answer(world):
    inbox = approvals_pending(actor=world["decider"])
    assert [(a.kind, a.id, a.agent.id) for a in inbox.approvals] == [
        ("plugin", "plugin:p1", world["agent"].id), ("exec", "e1", world["agent"].id)]  # soonest expiry first
    plugin, command = inbox.approvals
    assert (plugin.command, plugin.arguments, plugin.session_key) == (
        "gh_merge: Merge pull request", "Merge #12 into main", "agent:main:slack:dm:u1")
    assert command.command.startswith("curl -H")
    assert CANARY not in command.command + command.arguments
    assert "env-value-never-shown-61" not in str(inbox)
    assert command.cwd == "/workspace"
    assert command.expires_at is not None
    assert [agent.id for agent in inbox.unreachable] == [world["other"].id]
    assert world["gateway"].requests[0]["params"]["scopes"] == ["operator.approvals"]
    assert approvals_pending(actor=world["reader"]).approvals == []


def test_one_decision_then_a_clean_409_audited_with_who_decided(world):
    agent, ns = world["agent"], world["ns"]
    decided = approval_decide(actor=world["decider"], namespace_id=ns.id, agent_id=agent.id, kind="exec",
                              approval_id="e1", decision="approve")
    assert decided.state == "decided"
    assert world["gateway"].calls("exec.approval.resolve") == [{"id": "e1", "decision": "allow-once"}]
    with pytest.raises(AlreadyDecided):
        approval_decide(actor=world["decider"], namespace_id=ns.id, agent_id=agent.id, kind="exec",
                        approval_id="e1", decision="deny")
    assert len(world["gateway"].calls("exec.approval.resolve")) == 1
    event = AuditEvent.objects.get(action=DECIDED)
    assert (event.actor_id, event.resource_id) == (world["decider"].id, agent.id)
    assert (event.details["approvalId"], event.details["decision"]) == ("e1", "approve")
    assert approvals_pending(actor=world["decider"]).approvals[0].id == "plugin:p1"


def test_answered_elsewhere_is_409_unknown_is_404_and_neither_keeps_a_claim(world):
    agent, ns, gateway = world["agent"], world["ns"], world["gateway"]
    gateway.resolved["plugin:p1"] = "allow-once"  # answered in a channel meanwhile
    with pytest.raises(AlreadyDecided):
        approval_decide(actor=world["decider"], namespace_id=ns.id, agent_id=agent.id, kind="plugin",
                        approval_id="plugin:p1", decision="deny")
    with pytest.raises(NotFound):
        approval_decide(actor=world["decider"], namespace_id=ns.id, agent_id=agent.id, kind="exec",
                        approval_id="nope", decision="deny")
    assert ApprovalDecision.objects.count() == 0
    assert not AuditEvent.objects.filter(action=DECIDED).exists()


def test_deciding_needs_the_permission(world):
    with pytest.raises(Forbidden):
        approval_decide(actor=world["reader"], namespace_id=world["ns"].id, agent_id=world["agent"].id,
                        kind="exec", approval_id="e1", decision="approve")
    assert world["gateway"].calls("exec.approval.resolve") == []


@pytest.mark.parametrize("approval_id", [pytest.param("x" * 201, id="too-long"), pytest.param("a\x00b", id="nul")])
def test_an_id_no_approval_can_have_is_not_found_before_anything_is_asked(world, approval_id):
    with pytest.raises(NotFound):
        approval_decide(actor=world["decider"], namespace_id=world["ns"].id, agent_id=world["agent"].id,
                        kind="exec", approval_id=approval_id, decision="approve")
    assert world["gateway"].calls("exec.approval.resolve") == []
