"""Revision work, run through the real queue claim with the fake compute driver."""

from __future__ import annotations

import pytest
from django.db import transaction

from occ.drivers.compute.fake import LOST, RAISE, error, pending
from occ.models import (
    AccessBinding,
    Agent,
    AuditEvent,
    AuditKind,
    ControllerWork,
    Secret,
    SecretBinding,
    WorkJob,
    WorkState,
)
from occ.services.agent_lifecycle import agent_stop
from occ.services.work import work_enqueue
from provisioning import queue
from tests.agents_support import make_revision
from tests.factories import actor, grant, service_principal
from tests.fakes.compute import run_job_twice, run_work
from tests.provisioning.jobs.conftest import code_of, deploy, events, key_of, work

DEPLOYER_PERMISSIONS = ("deploy:agent", "operate:agent", "read:agent", "read:configuration", "operate:secret")


@pytest.fixture
def deployer(db):
    principal = service_principal("deployer")
    binding = grant(principal, *DEPLOYER_PERMISSIONS)
    return actor(principal), binding


def agent_now(agent: Agent) -> Agent:
    return Agent.objects.get(id=agent.id)


# --- the happy path ---------------------------------------------------------------------------


def test_first_deploy_activates_and_completes_once(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)

    outcome = run_work(key_of(revision))

    assert code_of(outcome) == ("Complete", "REVISION_ACTIVATED")
    row = work(key_of(revision))
    assert (row.state, row.reason_code, row.result_data) == (WorkState.SUCCEEDED, "REVISION_ACTIVATED",
                                                             {"warnings": []})
    current = agent_now(agent)
    assert current.active_revision_id == revision.id
    assert current.initial_workspace_files == {}, "staged files are cleared on activation"
    assert fake_compute.serving(agent.id) == revision.id
    gateway = fake_compute.gateway(agent.id)
    assert (gateway["starts"], gateway["workspace_files"]) == (1, ["AGENTS.md"])
    assert fake_compute.calls_to("prepare_revision") == [revision.id]
    assert fake_compute.calls_to("activate_revision") == [revision.id]
    assert fake_compute.calls_to("provision_runtime_credentials") == [agent.id]
    activation = events("openclaw.agents.revision.activate")
    assert len(activation) == 1
    assert activation[0].kind == AuditKind.LIFECYCLE
    assert activation[0].actor_id == admin_actor.id
    assert activation[0].details["revisionId"] == revision.id
    assert activation[0].details["previousRevisionId"] is None
    [finalized] = events("openclaw.agents.revision.finalize")
    assert (finalized.actor_id, finalized.details["revisionId"]) == (admin_actor.id, revision.id)
    assert finalized.details["reasonCode"] == "REVISION_ACTIVATED"


def test_replacement_activates_the_new_revision_and_retires_the_old(admin_actor, agent, fake_compute):
    first = deploy(admin_actor, agent)
    run_work(key_of(first))
    second = deploy(admin_actor, agent)

    outcome = run_work(key_of(second))

    assert code_of(outcome) == ("Complete", "REVISION_ACTIVATED")
    assert agent_now(agent).active_revision_id == second.id
    assert fake_compute.serving(agent.id) == second.id
    assert fake_compute.calls_to("retire_revision") == [first.id]
    assert fake_compute.gateway(agent.id)["staged"] == [second.id]
    assert work(key_of(first)).reason_code == "REVISION_ACTIVATED", "a finished outcome is never rewritten"
    assert events("openclaw.agents.revision.activate")[-1].details["previousRevisionId"] == first.id
    assert events("openclaw.agents.revision.finalize")[-1].details["retiredRevisionIds"] == [first.id]


def test_pending_prepare_defers_with_the_progress_code_and_refunds_the_attempt(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)
    fake_compute.script("prepare_revision", revision.id, [pending("REVISION_INCOMPLETE"), pending()])

    for _ in range(2):
        outcome = run_work(key_of(revision))
        assert code_of(outcome) == ("Defer", "REVISION_INCOMPLETE")
        row = work(key_of(revision))
        assert (row.state, row.attempt_count, row.last_attempt_code) == (WorkState.QUEUED, 0, "REVISION_INCOMPLETE")
        assert agent_now(agent).active_revision_id is None
        ControllerWork.objects.filter(pk=row.pk).update(available_at=row.created_at)

    assert run_work(key_of(revision)).reason_code == "REVISION_ACTIVATED"
    assert fake_compute.calls_to("prepare_revision") == [revision.id] * 3
    assert fake_compute.calls_to("activate_revision") == [revision.id]


# --- superseded and stopped -----------------------------------------------------------------


@pytest.mark.parametrize("order", [pytest.param("older-first", id="older-first"),
                                   pytest.param("newer-first", id="newer-first")])
def test_two_deploys_end_with_the_newest_active_and_the_older_superseded(admin_actor, agent, fake_compute, order):
    older = deploy(admin_actor, agent)
    newer = deploy(admin_actor, agent)
    assert (older.number, newer.number) == (1, 2)
    keys = [key_of(older), key_of(newer)]
    for key in keys if order == "older-first" else reversed(keys):
        run_work(key)

    assert agent_now(agent).active_revision_id == newer.id
    assert work(key_of(older)).reason_code == "REVISION_SUPERSEDED"
    assert work(key_of(newer)).reason_code == "REVISION_ACTIVATED"
    assert older.id not in fake_compute.calls_to("prepare_revision"), "a superseded revision never reaches compute"
    assert older.id not in fake_compute.calls_to("activate_revision")
    assert fake_compute.serving(agent.id) == newer.id
    assert len(events("openclaw.agents.revision.activate")) == 1


def test_older_revision_never_replaces_a_newer_active_one(admin_actor, agent, fake_compute):
    older = deploy(admin_actor, agent)
    newer = deploy(admin_actor, agent)
    run_work(key_of(newer))
    calls = len(fake_compute.calls)

    outcome = run_work(key_of(older))

    assert code_of(outcome) == ("Complete", "REVISION_SUPERSEDED")
    assert len(fake_compute.calls) == calls, "no driver call"
    assert agent_now(agent).active_revision_id == newer.id


def test_stop_overlapping_a_deploy_stops_the_candidate(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)
    agent_stop(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)

    outcome = run_work(key_of(revision))

    assert code_of(outcome) == ("Complete", "REVISION_STOPPED")
    assert fake_compute.calls_to("deactivate_revision") == [revision.id]
    assert fake_compute.calls_to("prepare_revision") == []
    assert agent_now(agent).active_revision_id is None


def test_stop_between_prepare_and_publication_is_not_activated(admin_actor, agent, fake_compute, monkeypatch):
    revision = deploy(admin_actor, agent)
    original = fake_compute.prepare_revision

    def prepare_then_stop(ref, context):
        readiness = original(ref, context)
        Agent.objects.filter(id=agent.id).update(desired_runtime_state="stopped")
        return readiness

    monkeypatch.setattr(fake_compute, "prepare_revision", prepare_then_stop)
    outcome = run_work(key_of(revision))

    assert code_of(outcome) == ("Complete", "REVISION_STOPPED")
    assert agent_now(agent).active_revision_id is None
    assert fake_compute.calls_to("deactivate_revision") == [revision.id]
    assert fake_compute.calls_to("activate_revision") == []


# --- compare-and-set and finalization ---------------------------------------------------------


def test_active_pointer_changed_while_preparing_retries(admin_actor, agent, fake_compute, monkeypatch):
    first = deploy(admin_actor, agent)
    run_work(key_of(first))
    second = deploy(admin_actor, agent)
    original = fake_compute.prepare_revision

    def prepare_while_someone_moves_the_pointer(ref, context):
        Agent.objects.filter(id=agent.id).update(active_revision=None)
        return original(ref, context)

    monkeypatch.setattr(fake_compute, "prepare_revision", prepare_while_someone_moves_the_pointer)
    outcome = run_work(key_of(second))

    assert code_of(outcome) == ("Retry", "ACTIVE_REVISION_CHANGED")
    row = work(key_of(second))
    assert (row.state, row.attempt_count, row.last_attempt_code) == (WorkState.QUEUED, 1, "ACTIVE_REVISION_CHANGED")
    assert agent_now(agent).active_revision_id is None
    assert fake_compute.calls_to("activate_revision") == [first.id]


@pytest.mark.parametrize(("method", "step", "code"), [
    # The runtime did not come up: the row says why (the Agent shows its gateway is down).
    pytest.param("activate_revision", error("AGENT_GATEWAY_UNAVAILABLE"), "AGENT_GATEWAY_UNAVAILABLE",
                 id="activate-fails"),
    pytest.param("activate_revision", RAISE, "REVISION_FINALIZATION_INCOMPLETE", id="activate-crashes"),
    pytest.param("activate_revision", LOST, "REVISION_FINALIZATION_INCOMPLETE",
                 id="activate-commits-then-loses-response"),
    pytest.param("retire_revision", error("AGENT_GATEWAY_UNAVAILABLE", retryable=False),
                 "REVISION_FINALIZATION_INCOMPLETE", id="retire-fails"),
    pytest.param("retire_revision", LOST, "REVISION_FINALIZATION_INCOMPLETE", id="retire-commits-then-loses-response"),
])
def test_failure_after_publication_finishes_as_already_active(admin_actor, agent, fake_compute, method, step, code):
    first = deploy(admin_actor, agent)
    run_work(key_of(first))
    second = deploy(admin_actor, agent)
    fake_compute.script(method, "*", [step])

    outcome = run_work(key_of(second))

    assert code_of(outcome) == ("Retry", code)
    assert agent_now(agent).active_revision_id == second.id, "published before the failure"
    assert work(key_of(second)).state == WorkState.QUEUED
    # The pointer moved with its audit event; only the finalization is still to come.
    assert [e.details["revisionId"] for e in events("openclaw.agents.revision.activate")] == [first.id, second.id]
    assert [e.details["revisionId"] for e in events("openclaw.agents.revision.finalize")] == [first.id]
    ControllerWork.objects.filter(pk=key_of(second)).update(available_at=work(key_of(second)).created_at)

    outcome = run_work(key_of(second))

    assert code_of(outcome) == ("Complete", "REVISION_ALREADY_ACTIVE")
    assert fake_compute.serving(agent.id) == second.id
    assert first.id not in fake_compute.gateway(agent.id)["staged"]
    assert fake_compute.calls_to("prepare_revision").count(second.id) == 1, "not prepared again"
    activations = [e for e in events("openclaw.agents.revision.activate") if e.details["revisionId"] == second.id]
    assert len(activations) == 1, "the retry moved no pointer and wrote no second activation"
    finalized = [e for e in events("openclaw.agents.revision.finalize") if e.details["revisionId"] == second.id]
    assert [e.details["reasonCode"] for e in finalized] == ["REVISION_ALREADY_ACTIVE"]


def test_each_job_run_twice_is_harmless(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)

    first, applied = run_job_twice(key_of(revision))

    assert code_of(first) == ("Complete", "REVISION_ACTIVATED")
    assert code_of(applied) == ("Complete", "REVISION_ALREADY_ACTIVE")
    assert agent_now(agent).active_revision_id == revision.id
    assert fake_compute.gateway(agent.id)["starts"] == 1
    assert len(events("openclaw.agents.revision.activate")) == 1
    assert run_work(key_of(revision)) is None, "a finished row is not claimed again"


# --- refusals ----------------------------------------------------------------------------------


def test_revoked_actor_fails_permanently_without_a_driver_call(deployer, agent, fake_compute):
    deployer_actor, binding = deployer
    revision = deploy(deployer_actor, agent)
    fake_compute.clear_calls()
    binding.delete()

    outcome = run_work(key_of(revision))

    assert code_of(outcome) == ("Fail", "AUTHORIZATION_DENIED")
    row = work(key_of(revision))
    assert (row.state, row.reason_code) == (WorkState.FAILED_PERMANENT, "AUTHORIZATION_DENIED")
    assert fake_compute.calls == []
    denial = AuditEvent.objects.get(kind=AuditKind.AUTHORIZATION_DENIAL)
    assert (denial.actor_id, denial.outcome, denial.resource_id) == (deployer_actor.id, "denied", agent.id)
    assert denial.details["workKey"] == key_of(revision)
    assert denial.details["permission"] == "deploy:agent"


def test_agent_principal_losing_secret_operate_fails_the_work(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)
    fake_compute.clear_calls()
    AccessBinding.objects.filter(principal=agent.service_principal).delete()

    outcome = run_work(key_of(revision))

    assert code_of(outcome) == ("Fail", "AUTHORIZATION_DENIED")
    assert fake_compute.calls == []
    denial = AuditEvent.objects.get(kind=AuditKind.AUTHORIZATION_DENIAL)
    assert denial.details["subject"] == "agent_service_principal"
    assert denial.details["permission"] == "operate:secret"


def test_revocation_after_prepare_stops_before_publication(deployer, agent, fake_compute, monkeypatch):
    deployer_actor, binding = deployer
    revision = deploy(deployer_actor, agent)
    original = fake_compute.prepare_revision

    def prepare_then_revoke(ref, context):
        readiness = original(ref, context)
        AccessBinding.objects.filter(pk=binding.pk).delete()
        return readiness

    monkeypatch.setattr(fake_compute, "prepare_revision", prepare_then_revoke)
    outcome = run_work(key_of(revision))

    assert code_of(outcome) == ("Fail", "AUTHORIZATION_DENIED")
    assert agent_now(agent).active_revision_id is None
    assert fake_compute.calls_to("activate_revision") == []


def test_a_deleted_delivered_secret_fails_the_work(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)
    binding = SecretBinding.objects.get(configuration=agent.configuration)
    secret_id = binding.secret_id
    binding.delete()
    AccessBinding.objects.filter(resource_id=secret_id).delete()
    Secret.objects.filter(id=secret_id).delete()
    grant(agent.service_principal, "operate:secret", namespace=agent.namespace, resource_kind="secret",
          resource_id=secret_id)  # still authorized: the failure is the missing Secret

    outcome = run_work(key_of(revision))

    assert code_of(outcome) == ("Fail", "SECRET_UNAVAILABLE")
    assert fake_compute.calls_to("prepare_revision") == []


def test_a_revision_pinned_to_another_compute_driver_fails(admin_actor, agent, fake_compute):
    revision = make_revision(agent, 1, compute={"id": "kubernetes", "implementation": "kubernetes"})
    with transaction.atomic():
        work_enqueue(key=key_of(revision), job=WorkJob.REVISION, namespace_id=agent.namespace_id,
                     actor_id=admin_actor.id, agent_id=agent.id, revision_id=revision.id)
    Agent.objects.filter(id=agent.id).update(desired_runtime_state="running")

    outcome = run_work(key_of(revision))

    assert code_of(outcome) == ("Fail", "COMPUTE_DRIVER_CHANGED")
    assert fake_compute.calls == []


def test_a_retryable_prepare_error_consumes_an_attempt(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)
    fake_compute.script("prepare_revision", revision.id, [error("KUBERNETES_API_UNAVAILABLE")])

    outcome = run_work(key_of(revision))

    assert code_of(outcome) == ("Retry", "KUBERNETES_API_UNAVAILABLE")
    row = work(key_of(revision))
    assert (row.state, row.attempt_count) == (WorkState.QUEUED, 1)
    assert agent_now(agent).active_revision_id is None


def test_claim_lost_before_publication_publishes_nothing(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)
    claim = queue.claim(key_of(revision))
    ControllerWork.objects.filter(pk=claim.key).update(claim_token="someone-else")
    from provisioning.jobs import job_for
    from provisioning.outcomes import ClaimLost

    with pytest.raises(ClaimLost):
        job_for(claim.work)(claim)
    assert agent_now(agent).active_revision_id is None
    assert fake_compute.calls_to("prepare_revision") == [], "the lease renewal before the effect failed first"


# --- runtime credentials the worker keeps for the driver -------------------------------------


def test_the_worker_creates_the_drivers_runtime_credentials_and_hands_over_references(admin_actor, agent,
                                                                                         fake_compute, monkeypatch):
    monkeypatch.setattr(fake_compute, "runtime_credential_purposes", ("gateway-password",))
    handed, contexts = [], []
    provision, prepare = fake_compute.provision_runtime_credentials, fake_compute.prepare_revision
    monkeypatch.setattr(fake_compute, "provision_runtime_credentials", lambda ref: (handed.append(ref), provision(ref)))
    monkeypatch.setattr(fake_compute, "prepare_revision", lambda ref, ctx: (contexts.append(ctx), prepare(ref, ctx))[1])
    revision = deploy(admin_actor, agent)

    assert code_of(run_work(key_of(revision))) == ("Complete", "REVISION_ACTIVATED")

    password = Secret.objects.get(owner_agent=agent, purpose="gateway-password")
    assert [ref.runtime_credentials["gateway-password"].secret_id for ref in handed] == [password.id]
    assert {ctx.gateway_password.secret_id for ctx in contexts} == {password.id}
    assert AuditEvent.objects.filter(action="openclaw.agents.runtime_credentials.create").count() == 1
    again = deploy(admin_actor, agent)
    assert code_of(run_work(key_of(again))) == ("Complete", "REVISION_ACTIVATED")
    assert Secret.objects.filter(owner_agent=agent).count() == 1, "an existing credential is kept"


def test_a_driver_without_runtime_credential_purposes_gets_no_secret(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)

    assert code_of(run_work(key_of(revision))) == ("Complete", "REVISION_ACTIVATED")

    assert not Secret.objects.filter(owner_agent=agent).exists()
