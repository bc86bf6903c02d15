"""Issue 28, verify before cutover (worker side, fake driver): a candidate refused by one of
its checks ends the deployment with the check's code and redacted evidence; the serving
revision keeps serving, the active pointer never moves, the candidate's files are retired,
and the refusal is audited. A first deploy (nothing serving) is not verified; a passing
candidate is activated as before. Real gateways: tests/occ/drivers/compute/test_local_candidate_gateway.py."""

from __future__ import annotations

import pytest

from occ.commands.secrets import SecretCreate
from occ.drivers.compute import VERIFY_CODES
from occ.drivers.compute.fake import error
from occ.models import Agent, AuditEvent, ControllerWork, Secret, WorkState
from occ.models.work import revision_reconcile_key
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from tests.fakes.compute import deployable_agent, run_work

MODEL_KEY = "sk-candidate-key-never-shown-8c1f"


@pytest.fixture
def agent(admin_actor, ready_namespace, fake_compute) -> Agent:
    harness = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                            command=SecretCreate(name="model-key", value=MODEL_KEY))
    return deployable_agent(ready_namespace, harness_secret=Secret.objects.get(id=harness.id))


def agent_url(agent: Agent, *rest: str) -> str:
    return "/".join([f"/namespaces/{agent.namespace_id}/agents/{agent.id}", *rest])


def serving_v1(admin_actor, agent, fake_compute):
    first = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    run_work(revision_reconcile_key(first.id))
    assert fake_compute.serving(agent.id) == first.id
    assert fake_compute.calls_to("verify_candidate") == [], "nothing serves yet: the first deploy is not verified"
    return first


@pytest.mark.parametrize(("code", "check"), [
    ("RUNTIME_CONFIG_REFUSED", "config"), ("RUNTIME_START_FAILED", "start"),
    ("MODEL_CREDENTIAL_REFUSED", "model"), ("MODEL_UNREACHABLE", "model"), ("SMOKE_TEST_FAILED", "smoke"),
])
def test_a_refused_candidate_fails_with_its_code_and_v1_keeps_serving(api, admin_actor, agent, fake_compute,
                                                                      code, check):
    first = serving_v1(admin_actor, agent, fake_compute)
    key = MODEL_KEY
    fake_compute.refuse_candidate("*", code, check=check,
                                  evidence=["provider said: 401 Unauthorized", f"sent key {key}"])
    second = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)

    run_work(revision_reconcile_key(second.id))

    work = ControllerWork.objects.get(pk=revision_reconcile_key(second.id))
    assert (work.state, work.reason_code) == (WorkState.FAILED_PERMANENT, code)
    agent.refresh_from_db()
    assert agent.active_revision_id == first.id, "the active pointer never moves"
    assert fake_compute.serving(agent.id) == first.id, "the serving gateway is untouched"
    assert fake_compute.calls_to("activate_revision") == [first.id]
    assert second.id in fake_compute.calls_to("retire_revision"), "the candidate's staged files are removed"
    assert fake_compute.calls_to("verify_candidate") == [second.id]

    deployment = api.get(agent_url(agent, "deployments", second.id)).data
    assert deployment["status"] == "failed"
    assert deployment["error"]["code"] == code
    assert "previous revision keeps serving" in deployment["error"]["message"]
    verification = deployment["error"]["data"]["verification"]
    assert verification["check"] == check
    assert verification["evidence"] == ["provider said: 401 Unauthorized", "sent key [redacted]"]
    assert key not in str(deployment)
    runtime = api.get(agent_url(agent)).data["runtime"]
    assert (runtime["state"], runtime["revisionId"]) == ("running", first.id)

    event = AuditEvent.objects.get(action="openclaw.agents.revision.refuse")
    assert event.outcome == "failed"
    assert event.details["reasonCode"] == code
    assert event.details["revisionId"] == second.id
    assert key not in str(event.details)


def test_a_passing_candidate_is_activated(admin_actor, agent, fake_compute):
    first = serving_v1(admin_actor, agent, fake_compute)
    second = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)

    run_work(revision_reconcile_key(second.id))

    agent.refresh_from_db()
    assert agent.active_revision_id == second.id
    assert fake_compute.calls_to("verify_candidate") == [second.id]
    assert fake_compute.calls_to("activate_revision") == [first.id, second.id]


def test_a_verification_that_cannot_run_is_retried_without_moving_the_pointer(admin_actor, agent, fake_compute):
    first = serving_v1(admin_actor, agent, fake_compute)
    fake_compute.script("verify_candidate", "*", [error("NO_FREE_GATEWAY_PORT")])
    second = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)

    run_work(revision_reconcile_key(second.id))

    work = ControllerWork.objects.get(pk=revision_reconcile_key(second.id))
    assert (work.state, work.last_attempt_code) == (WorkState.QUEUED, "NO_FREE_GATEWAY_PORT")
    agent.refresh_from_db()
    assert agent.active_revision_id == first.id


def test_the_codes_are_the_issues():
    issue = {"RUNTIME_CONFIG_REFUSED", "RUNTIME_START_FAILED", "MODEL_CREDENTIAL_REFUSED", "MODEL_UNREACHABLE",
             "SMOKE_TEST_FAILED"}
    assert issue == VERIFY_CODES


def test_the_agents_smoke_conversations_are_frozen_into_the_revision_and_checked(api, admin_actor, agent,
                                                                                 fake_compute):
    first = serving_v1(admin_actor, agent, fake_compute)
    conversations = [{"prompt": "What is 2+2?", "expect": r"\b4\b"}, {"prompt": "Say hi", "expect": "(?i)hi"}]
    patched = api.patch(agent_url(agent), {"configurationId": agent.configuration_id,
                                           "smokeConversations": conversations})
    assert patched.status == 200, patched.body
    assert patched.data["smokeConversations"] == conversations

    second = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    run_work(revision_reconcile_key(second.id))

    assert fake_compute.smoke_prompts(agent.id) == ["What is 2+2?", "Say hi"]
    assert [c.expect for c in second.spec.smoke_conversations or []] == [r"\b4\b", "(?i)hi"]
    assert "smokeConversations" not in first.snapshot, "a spec without them keeps its old shape"
    revision = api.get(agent_url(agent, "revisions", second.id)).data
    assert revision["smokeConversations"] == conversations
    diff = api.get(agent_url(agent, "revisions", second.id, "diff")).data
    assert {"section": "runtime", "op": "added", "path": "/smokeConversations",
            "after": conversations} in diff["changes"]
