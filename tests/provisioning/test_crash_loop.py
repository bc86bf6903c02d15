"""Issue 28, crash loops (worker side, fake driver): an activation the driver reports as
``RUNTIME_CRASH_LOOP`` fails the deployment at once (not at its convergence deadline) with the
gateway's last exit status and its last log lines, redacted. Real gateways:
tests/occ/drivers/compute/test_local_crash_loop_gateway.py."""

from __future__ import annotations

import pytest

from occ.commands.secrets import SecretCreate
from occ.drivers.compute.fake import error
from occ.models import Agent, AuditEvent, ControllerWork, Secret, WorkState
from occ.models.work import revision_reconcile_key
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from tests.fakes.compute import deployable_agent, run_work

MODEL_KEY = "sk-crash-loop-key-never-shown-51d0"


@pytest.fixture
def agent(admin_actor, ready_namespace, fake_compute) -> Agent:
    harness = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                            command=SecretCreate(name="model-key", value=MODEL_KEY))
    return deployable_agent(ready_namespace, harness_secret=Secret.objects.get(id=harness.id))


def test_a_crash_loop_fails_the_deployment_at_once_with_its_evidence(api, admin_actor, agent, fake_compute):
    revision = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    fake_compute.print_log(agent.id, f"fatal: cannot start with key {MODEL_KEY}\nexiting")
    fake_compute.script("activate_revision", revision.id, [error("RUNTIME_CRASH_LOOP", retryable=False)])

    run_work(revision_reconcile_key(revision.id))

    work = ControllerWork.objects.get(pk=revision_reconcile_key(revision.id))
    assert (work.state, work.reason_code, work.attempt_count) == (WorkState.FAILED_PERMANENT, "RUNTIME_CRASH_LOOP", 1)
    deployment = api.get(f"/namespaces/{agent.namespace_id}/agents/{agent.id}/deployments/{revision.id}").data
    assert deployment["status"] == "failed"
    assert deployment["error"]["code"] == "RUNTIME_CRASH_LOOP"
    assert "crash loop" in deployment["error"]["message"]
    crash = deployment["error"]["data"]["crashLoop"]
    assert set(crash) == {"exitStatus", "restarts", "evidence"}
    assert "fatal: cannot start with key [redacted]" in crash["evidence"]
    assert MODEL_KEY not in str(deployment)
    runtime = api.get(f"/namespaces/{agent.namespace_id}/agents/{agent.id}").data["runtime"]
    assert "RUNTIME_CRASH_LOOP" in str(runtime)


# --- rollback after cutover ---------------------------------------------------------------------------


def deployed(admin_actor, agent):
    revision = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    return revision


@pytest.mark.parametrize("code", ["RUNTIME_CRASH_LOOP", "GATEWAY_START_TIMEOUT"])
def test_a_revision_that_does_not_come_up_after_cutover_is_rolled_back(api, admin_actor, agent, fake_compute, code):
    first = deployed(admin_actor, agent)
    run_work(revision_reconcile_key(first.id))
    second = deployed(admin_actor, agent)
    fake_compute.script("activate_revision", second.id, [error(code, retryable=False)])

    run_work(revision_reconcile_key(second.id))

    work = ControllerWork.objects.get(pk=revision_reconcile_key(second.id))
    assert (work.state, work.reason_code) == (WorkState.FAILED_PERMANENT, "ROLLED_BACK")
    agent.refresh_from_db()
    assert agent.active_revision_id == first.id, "the pointer is back on v1"
    assert fake_compute.serving(agent.id) == first.id, "v1's gateway serves again"
    assert fake_compute.calls_to("activate_revision") == [first.id, second.id, first.id]
    event = AuditEvent.objects.get(action="openclaw.agents.revision.rollback")
    assert (event.details["reasonCode"], event.details["revisionId"], event.details["restoredRevisionId"]) == (
        code, second.id, first.id)
    deployment = api.get(f"/namespaces/{agent.namespace_id}/agents/{agent.id}/deployments/{second.id}").data
    assert deployment["status"] == "failed"
    assert deployment["error"]["code"] == "ROLLED_BACK"
    rollback = deployment["error"]["data"]["rollback"]
    assert rollback == {"reason": code, "restoredRevisionId": first.id, "restoredRevision": 1}
    assert ("crashLoop" in deployment["error"]["data"]) is (code == "RUNTIME_CRASH_LOOP")


def test_an_agent_that_opted_out_keeps_the_failed_revision(api, admin_actor, agent, fake_compute):
    patched = api.patch(f"/namespaces/{agent.namespace_id}/agents/{agent.id}",
                        {"configurationId": agent.configuration_id, "rollbackOnFailure": False})
    assert patched.status == 200, patched.body
    assert patched.data["rollbackOnFailure"] is False
    first = deployed(admin_actor, agent)
    run_work(revision_reconcile_key(first.id))
    second = deployed(admin_actor, agent)
    fake_compute.script("activate_revision", second.id, [error("RUNTIME_CRASH_LOOP", retryable=False)])

    run_work(revision_reconcile_key(second.id))

    work = ControllerWork.objects.get(pk=revision_reconcile_key(second.id))
    assert (work.state, work.reason_code) == (WorkState.FAILED_PERMANENT, "RUNTIME_CRASH_LOOP")
    agent.refresh_from_db()
    assert agent.active_revision_id == second.id
    assert not AuditEvent.objects.filter(action="openclaw.agents.revision.rollback").exists()


def test_a_first_revision_has_nothing_to_roll_back_to(admin_actor, agent, fake_compute):
    first = deployed(admin_actor, agent)
    fake_compute.script("activate_revision", first.id, [error("GATEWAY_START_TIMEOUT", retryable=False)])

    run_work(revision_reconcile_key(first.id))

    work = ControllerWork.objects.get(pk=revision_reconcile_key(first.id))
    assert (work.state, work.reason_code) == (WorkState.FAILED_PERMANENT, "GATEWAY_START_TIMEOUT")


def test_a_rollback_never_overrides_a_pointer_that_moved_meanwhile(admin_actor, agent, fake_compute, monkeypatch):
    first = deployed(admin_actor, agent)
    run_work(revision_reconcile_key(first.id))
    second = deployed(admin_actor, agent)
    fake_compute.script("activate_revision", second.id, [error("RUNTIME_CRASH_LOOP", retryable=False)])
    activate = type(fake_compute).activate_revision

    def newer_deploy_wins(self, revision, context):
        if revision.id == first.id:  # the rollback starting v1: meanwhile the pointer moved on
            Agent.objects.filter(id=agent.id).update(active_revision_id=first.id)
        return activate(self, revision, context)

    monkeypatch.setattr(type(fake_compute), "activate_revision", newer_deploy_wins)

    run_work(revision_reconcile_key(second.id))

    work = ControllerWork.objects.get(pk=revision_reconcile_key(second.id))
    assert work.reason_code != "ROLLED_BACK"
    assert not AuditEvent.objects.filter(action="openclaw.agents.revision.rollback").exists(), \
        "the compare-and-set from v2 found another pointer: nothing is moved or audited"
