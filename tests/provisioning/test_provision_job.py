"""The provisioning job through the real queue claim, with the fake compute driver: phases,
reruns, effects and receipts, re-authorization, Stop/Delete cancellation and the guards."""

from __future__ import annotations

import json
import logging
import time
import uuid
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from occ.commands.secrets import SecretCreate
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.drivers.compute.fake import DROPPED, LOST, error
from occ.drivers.compute.local import LocalComputeDriver
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    AgentRevision,
    AuditEvent,
    AuditKind,
    Configuration,
    ControllerWork,
    Principal,
    Secret,
    SecretBinding,
    WorkEffect,
    WorkState,
)
from occ.models.work import revision_reconcile_key
from occ.services.agent_lifecycle import agent_delete, agent_stop
from occ.services.secrets import secret_create
from provisioning import queue
from provisioning.jobs import provision
from provisioning.jobs.credentials import credentials_ref, ensure_credentials
from tests.conftest import ApiClient
from tests.factories import AgentFactory, SecretFactory, actor, grant, key_for, service_principal
from tests.fakes.compute import run_job_twice, run_work
from tests.provisioning.jobs.conftest import code_of
from tests.provisioning.provisioning_support import admit, plan_for, retry

PROVISIONER_PERMISSIONS = ("create:configuration", "read:configuration", "create:agent", "read:agent",
                           "update:agent", "operate:agent", "deploy:agent", "operate:secret")


@pytest.fixture
def world(ready_namespace, fake_compute):
    harness = SecretFactory(namespace=ready_namespace, name="model-key")
    tool = SecretFactory(namespace=ready_namespace, name="tool-token")
    return ready_namespace, harness, tool


@pytest.fixture
def provisioner(db):
    """A principal holding exactly what provisioning needs, by one binding a test can revoke."""
    principal = service_principal("provisioner")
    binding = grant(principal, *PROVISIONER_PERMISSIONS)
    return actor(principal), binding


def revoke_everything(who) -> None:
    """The provisioner loses all access: its grant, and the ownership of the Agent it created
    (delegation binds the creator to the Agent in the create's transaction)."""
    assert AccessBinding.objects.filter(principal_id=who.id).delete()[0] >= 1


def admitted(world, who, *, name="helper", files=None) -> AgentProvisioningWork:
    ns, harness, tool = world
    return admit(ns, who, plan_for(ns, name=name, harness=harness, bound={"TOOL_TOKEN": tool}, files=files))


def row_of(row: AgentProvisioningWork) -> AgentProvisioningWork:
    return AgentProvisioningWork.objects.get(pk=row.pk)


def effect(row: AgentProvisioningWork, kind: str) -> WorkEffect:
    return WorkEffect.objects.get(work_id=row.work_id, kind=kind)


def make_due(key: str) -> None:
    """Skip a retry's backoff."""
    ControllerWork.objects.filter(pk=key).update(available_at=timezone.now() - timedelta(seconds=1))


def counts(row: AgentProvisioningWork) -> dict[str, int]:
    principal = Principal.objects.filter(agent_id=row.agent_id).first()
    return {
        "configurations": Configuration.objects.filter(id=row.configuration_id).count(),
        "agents": Agent.objects.filter(id=row.agent_id).count(),
        "grants": AccessBinding.objects.filter(principal=principal).count() if principal else 0,
        "revisions": AgentRevision.objects.filter(agent_id=row.agent_id).count(),
        "audit.configurations.create": AuditEvent.objects.filter(action="openclaw.configurations.create").count(),
        "audit.agents.create": AuditEvent.objects.filter(action="openclaw.agents.create").count(),
        "audit.grant": AuditEvent.objects.filter(action="openclaw.agents.secret_access.grant").count(),
        "audit.deploy": AuditEvent.objects.filter(action="openclaw.agents.deploy").count(),
    }


ONE_OF_EACH = {"configurations": 1, "agents": 1, "grants": 2, "revisions": 1, "audit.configurations.create": 1,
               "audit.agents.create": 1, "audit.grant": 1, "audit.deploy": 1}


# --- the phases ---------------------------------------------------------------------------------


def test_phases_create_one_configuration_agent_grants_and_first_revision(world, admin_actor, fake_compute):
    _ns, harness, tool = world
    row = admitted(world, admin_actor, files={"AGENTS.md": "# hi"})

    outcome = run_work(row.work_id)

    assert code_of(outcome) == ("Complete", "PROVISIONING_SUCCEEDED")
    done = row_of(row)
    assert (done.status, done.completed_phase) == ("succeeded", "handoff")
    assert "error" not in done.progress
    assert counts(row) == ONE_OF_EACH
    configuration = Configuration.objects.get(id=row.configuration_id)
    assert configuration.values == row.plan["configuration"]["values"]
    assert configuration.name == "helper configuration", "named after the Agent it is provisioned for"
    assert {b.env_name: b.secret_id for b in SecretBinding.objects.filter(configuration=configuration)} == {
        "TOOL_TOKEN": tool.id}
    agent = Agent.objects.get(id=row.agent_id)
    assert (agent.name, agent.configuration_id, agent.harness_secret_id) == ("helper", configuration.id, harness.id)
    assert agent.initial_workspace_files == {"AGENTS.md": "# hi"}
    granted = AccessBinding.objects.filter(principal__agent=agent)
    assert sorted(granted.values_list("resource_id", flat=True)) == sorted([harness.id, tool.id])
    assert {b.role.name for b in granted} == {"agent-secret-access"}
    revision = AgentRevision.objects.get(agent=agent)
    assert done.revision_id == revision.id
    configured = effect(row, "configuration")
    assert (configured.state, configured.target_id) == ("receipted", configuration.id)
    assert sorted(configured.granted_secret_ids) == sorted([harness.id, tool.id])
    transport = effect(row, "transport")
    assert (transport.state, transport.owner, transport.target_id) == ("receipted", row.work_id, agent.id)
    assert (transport.observed, transport.attempt, transport.driver_id) == (False, 1, "fake")
    assert transport.begun_at <= transport.receipted_at
    assert fake_compute.calls_to("provision_runtime_credentials") == [agent.id]
    assert fake_compute.calls_to("observe_runtime_credentials") == []
    work = ControllerWork.objects.get(pk=row.work_id)
    assert (work.state, work.reason_code) == (WorkState.SUCCEEDED, "PROVISIONING_SUCCEEDED")
    assert {e.actor_id for e in AuditEvent.objects.filter(resource_id__in=[agent.id, configuration.id])} == {
        admin_actor.id}

    # The first revision then activates like any deployment.
    assert code_of(run_work(revision_reconcile_key(revision.id))) == ("Complete", "REVISION_ACTIVATED")
    assert fake_compute.serving(agent.id) == revision.id


def test_the_first_revision_is_nudged_once_after_the_provisioning_released_the_agent(
        world, admin_actor, fake_compute, monkeypatch, django_capture_on_commit_callbacks):
    """The handoff queues the revision work while this claim keeps the Agent busy: a nudge on
    the handoff's commit could reach a worker before the completion and claim nothing. The
    queue nudges it once the completion is written, and only then."""
    from occ import nudges

    row = admitted(world, admin_actor)
    seen: list[tuple[str, str]] = []

    def capture(key: str, *, countdown: float | None = None) -> bool:
        seen.append((key, ControllerWork.objects.get(pk=row.work_id).state))
        return True

    monkeypatch.setattr(nudges, "nudge", capture)
    with django_capture_on_commit_callbacks(execute=True):
        assert code_of(run_work(row.work_id)) == ("Complete", "PROVISIONING_SUCCEEDED")

    revision_key = revision_reconcile_key(row_of(row).revision_id)
    assert seen == [(revision_key, WorkState.SUCCEEDED)]
    assert queue.claim(revision_key) is not None, "the nudged row is claimable"


def test_each_fenced_step_reads_the_namespace_and_the_agent_once(world, admin_actor, fake_compute):
    """The services inside a step take the rows the step locked as arguments instead of
    reading them again: four steps, four Namespace reads."""
    row = admitted(world, admin_actor)
    with CaptureQueriesContext(connection) as queries:
        assert code_of(run_work(row.work_id)) == ("Complete", "PROVISIONING_SUCCEEDED")
    selects = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().startswith("SELECT")]
    assert sum('FROM "occ_namespace"' in sql for sql in selects) == 4
    agent_reads = sum(sql.startswith('SELECT "occ_agent"."created_at"') for sql in selects)
    # configure's lock (none yet: agent_create makes it and the grant uses that one),
    # transport's two locks and the read before the driver call, the handoff's lock (the
    # deploy inside it reads nothing more).
    assert agent_reads == 5
    assert sum(sql.startswith('SELECT "occ_configuration"."created_at"') for sql in selects) == 2  # configure, deploy


def test_running_the_job_twice_makes_no_twins(world, admin_actor, fake_compute):
    row = admitted(world, admin_actor)

    first, applied = run_job_twice(row.work_id)

    assert code_of(first) == code_of(applied) == ("Complete", "PROVISIONING_SUCCEEDED")
    assert counts(row) == ONE_OF_EACH
    assert fake_compute.calls_to("provision_runtime_credentials") == [row.agent_id]


def test_a_retry_after_a_failed_transport_reuses_the_configuration_phase(world, admin_actor, fake_compute):
    row = admitted(world, admin_actor)
    fake_compute.script("provision_runtime_credentials", row.agent_id, [error("KUBERNETES_API_UNAVAILABLE")])

    assert code_of(run_work(row.work_id)) == ("Retry", "KUBERNETES_API_UNAVAILABLE")
    failed = row_of(row)
    assert (failed.status, failed.completed_phase) == ("queued", "configuration")
    assert failed.progress["error"]["disposition"] == "retry"
    assert effect(row, "transport").resend is True, "a definite failure may be sent again"
    make_due(row.work_id)

    assert code_of(run_work(row.work_id)) == ("Complete", "PROVISIONING_SUCCEEDED")
    assert counts(row) == ONE_OF_EACH, "the configuration phase ran once"
    assert fake_compute.calls_to("provision_runtime_credentials") == [row.agent_id, row.agent_id]
    assert fake_compute.calls_to("observe_runtime_credentials") == []
    assert "error" not in row_of(row).progress


def test_a_name_taken_meanwhile_fails_permanently_with_a_safe_error(world, admin_actor, fake_compute):
    ns = world[0]
    row = admitted(world, admin_actor, name="taken")
    AgentFactory(namespace=ns, name="taken")

    assert code_of(run_work(row.work_id)) == ("Fail", "RESOURCE_CONFLICT")
    failed = row_of(row)
    assert (failed.status, failed.completed_phase) == ("failed", "admitted")
    assert failed.progress["error"] == {"disposition": "permanent", "code": "RESOURCE_CONFLICT",
                                        "message": "An Agent with this name already exists in the Namespace."}
    assert not Configuration.objects.filter(id=row.configuration_id).exists(), "the phase is one transaction"
    assert fake_compute.calls == []


# --- effects without a receipt ------------------------------------------------------------------


def test_a_lost_credential_response_is_reconciled_by_observation(world, admin_actor, fake_compute):
    row = admitted(world, admin_actor)
    fake_compute.script("provision_runtime_credentials", row.agent_id, [LOST])

    assert code_of(run_work(row.work_id)) == ("Retry", "RECOVERY_REQUIRED")
    pending = row_of(row)
    assert pending.progress["error"]["code"] == "RECOVERY_REQUIRED"
    assert pending.progress["error"]["disposition"] == "retry"
    begun = effect(row, "transport")
    assert (begun.state, begun.owner, begun.target_id) == ("begun", row.work_id, row.agent_id)
    assert begun.resend is False
    assert begun.receipted_at is None
    make_due(row.work_id)

    assert code_of(run_work(row.work_id)) == ("Complete", "PROVISIONING_SUCCEEDED")
    assert fake_compute.calls_to("provision_runtime_credentials") == [row.agent_id], "never sent blindly again"
    assert fake_compute.calls_to("observe_runtime_credentials") == [row.agent_id]
    assert fake_compute.world()["credentials"] == [row.agent_id], "exactly one credential object"
    settled = effect(row, "transport")
    assert (settled.state, settled.observed, settled.observed_owner) == ("receipted", True, row.agent_id)
    assert counts(row) == ONE_OF_EACH


def test_credentials_not_found_require_recovery_then_a_retry_resends(world, admin_actor, fake_compute):
    row = admitted(world, admin_actor)
    fake_compute.script("provision_runtime_credentials", row.agent_id, [DROPPED])
    assert code_of(run_work(row.work_id)) == ("Retry", "RECOVERY_REQUIRED")
    make_due(row.work_id)

    assert code_of(run_work(row.work_id)) == ("Fail", "RECOVERY_REQUIRED")
    failed = row_of(row)
    assert (failed.status, failed.progress["error"]["disposition"]) == ("failed", "permanent")
    kept = effect(row, "transport")
    assert (kept.state, kept.owner, kept.target_id) == ("begun", row.work_id, row.agent_id)
    assert kept.observation == "not_found"
    assert fake_compute.calls_to("provision_runtime_credentials") == [row.agent_id], "not found alone never resends"
    assert counts(row)["revisions"] == 0
    assert ControllerWork.objects.get(pk=row.work_id).state == WorkState.FAILED_PERMANENT

    retry(row.work_id)
    assert effect(row, "transport").resend is True
    assert code_of(run_work(row.work_id)) == ("Complete", "PROVISIONING_SUCCEEDED")
    assert fake_compute.calls_to("provision_runtime_credentials") == [row.agent_id, row.agent_id]
    assert fake_compute.world()["credentials"] == [row.agent_id]
    assert effect(row, "transport").resend is False
    assert counts(row) == ONE_OF_EACH


def test_credentials_owned_by_another_agent_fail_permanently(world, admin_actor, fake_compute):
    row = admitted(world, admin_actor)
    fake_compute.script("provision_runtime_credentials", row.agent_id, [DROPPED])
    assert code_of(run_work(row.work_id)) == ("Retry", "RECOVERY_REQUIRED")
    fake_compute.plant_credentials(row.agent_id, owner="agt_someone_else")
    make_due(row.work_id)

    assert code_of(run_work(row.work_id)) == ("Fail", "RUNTIME_CREDENTIALS_NOT_OWNED")
    kept = effect(row, "transport")
    assert (kept.state, kept.observation, kept.observed_owner) == ("begun", "found", "agt_someone_else")
    assert fake_compute.calls_to("provision_runtime_credentials") == [row.agent_id]
    assert counts(row)["revisions"] == 0


# --- re-authorization ---------------------------------------------------------------------------


@pytest.mark.parametrize(("revoke_after", "denied_permission", "credential_calls"), [
    pytest.param("configure", "read:agent", 0, id="before-transport"),
    pytest.param("receipt_transport", "deploy:agent", 1, id="before-handoff"),
])
def test_authority_revoked_mid_run_fails_permanently_without_another_driver_call(
        world, provisioner, fake_compute, monkeypatch, revoke_after, denied_permission, credential_calls):
    who, _ = provisioner
    row = admitted(world, who)
    original = getattr(provision, revoke_after)
    calls_at_revoke: list[int] = []

    def then_revoke(*args, **kwargs):
        result = original(*args, **kwargs)
        revoke_everything(who)
        calls_at_revoke.append(len(fake_compute.calls))
        return result

    monkeypatch.setattr(provision, revoke_after, then_revoke)

    assert code_of(run_work(row.work_id)) == ("Fail", "AUTHORIZATION_DENIED")
    assert len(fake_compute.calls) == calls_at_revoke[0], "no driver call after the revocation"
    assert len(fake_compute.calls_to("provision_runtime_credentials")) == credential_calls
    [denial] = AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL)
    assert (denial.actor_id, denial.details["permission"]) == (who.id, denied_permission)
    failed = row_of(row)
    assert (failed.status, failed.progress["error"]["code"]) == ("failed", "AUTHORIZATION_DENIED")
    assert counts(row)["revisions"] == 0
    assert counts(row)["agents"] == 1, "no rollback of completed phases"


def test_a_denial_the_step_checks_missed_is_still_permanent_and_audited(world, provisioner, fake_compute,
                                                                       monkeypatch):
    """A grant revoked between the step's check and the service's own (a race): the deploy
    admission refuses, and the work fails the same way."""
    who, _ = provisioner
    row = admitted(world, who)
    monkeypatch.setattr(provision, "_handoff_needs", lambda row: [])
    original = provision.receipt_transport

    def then_revoke(*args, **kwargs):
        original(*args, **kwargs)
        revoke_everything(who)

    monkeypatch.setattr(provision, "receipt_transport", then_revoke)

    assert code_of(run_work(row.work_id)) == ("Fail", "AUTHORIZATION_DENIED")
    [denial] = AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL)
    assert (denial.actor_id, denial.details["permission"]) == (who.id, "deploy:agent")
    assert row_of(row).progress["error"]["code"] == "AUTHORIZATION_DENIED"
    assert counts(row)["revisions"] == 0


# --- Stop and Delete cancel -----------------------------------------------------------------------


def failed_at_transport(world, who, fake_compute) -> AgentProvisioningWork:
    """A provisioning past its configuration phase, queued for a retry."""
    row = admitted(world, who)
    fake_compute.script("provision_runtime_credentials", row.agent_id, [error("DEPENDENCY_UNAVAILABLE")])
    assert code_of(run_work(row.work_id)) == ("Retry", "DEPENDENCY_UNAVAILABLE")
    return row_of(row)


def test_stop_of_queued_provisioning_cancels_it_and_the_agent_is_never_deployed(world, admin_actor, fake_compute):
    row = failed_at_transport(world, admin_actor, fake_compute)

    agent_stop(actor=admin_actor, namespace_id=row.namespace_id, agent_id=row.agent_id)

    cancelled = row_of(row)
    assert cancelled.status == "cancelled"
    assert cancelled.progress["error"]["code"] == "PROVISIONING_CANCELLED"
    work = ControllerWork.objects.get(pk=row.work_id)
    assert (work.state, work.reason_code) == (WorkState.FAILED_PERMANENT, "PROVISIONING_CANCELLED")
    cancel = AuditEvent.objects.get(action="openclaw.agents.provision.cancel")
    assert (cancel.details["workIds"], cancel.details["cause"], cancel.actor_id) == (
        [row.work_id], "stop", admin_actor.id)
    make_due(row.work_id)
    assert run_work(row.work_id) is None, "a cancelled job never runs again"
    stop = ControllerWork.objects.get(agent_id=row.agent_id, agent_target="stopped")
    assert code_of(run_work(stop.pk)) == ("Complete", "AGENT_STOPPED")
    assert counts(row)["revisions"] == 0
    assert fake_compute.serving(row.agent_id) is None


@pytest.mark.parametrize("stop_after", ["send_transport", "receipt_transport"])
def test_stop_while_the_worker_runs_leaves_the_handoff_nothing_to_admit(world, admin_actor, fake_compute,
                                                                        monkeypatch, stop_after):
    row = admitted(world, admin_actor)
    original = getattr(provision, stop_after)

    def then_stop(*args, **kwargs):
        result = original(*args, **kwargs)
        agent_stop(actor=admin_actor, namespace_id=row.namespace_id, agent_id=row.agent_id)
        return result

    monkeypatch.setattr(provision, stop_after, then_stop)

    assert code_of(run_work(row.work_id)) == ("Fail", "PROVISIONING_CANCELLED")
    assert row_of(row).status == "cancelled"
    assert ControllerWork.objects.get(pk=row.work_id).reason_code == "PROVISIONING_CANCELLED"
    assert counts(row)["revisions"] == 0
    assert row_of(row).revision_id is None
    assert Agent.objects.get(id=row.agent_id).desired_runtime_state == "stopped"


def test_deletion_waits_one_lease_after_the_cancellation_then_settles_the_effect(
        world, admin_actor, fake_compute, monkeypatch, settings):
    settings.OCC_WORKER_LEASE_SECONDS, settings.OCC_WORKER_HEARTBEAT_SECONDS = 2.0, 0.5
    row = admitted(world, admin_actor)
    original = provision.send_transport

    def then_delete(*args, **kwargs):
        original(*args, **kwargs)
        agent_delete(actor=admin_actor, namespace_id=row.namespace_id, agent_id=row.agent_id)

    monkeypatch.setattr(provision, "send_transport", then_delete)
    assert code_of(run_work(row.work_id)) == ("Fail", "PROVISIONING_CANCELLED")
    assert effect(row, "transport").state == "begun", "the write happened; its receipt never committed"
    cancelled_at = datetime.fromisoformat(row_of(row).progress["cancelledAt"])
    delete = ControllerWork.objects.get(agent_id=row.agent_id, agent_target="deleted")

    outcome = run_work(delete.pk)

    assert code_of(outcome) == ("Defer", "PROVISIONING_CANCELLATION_PENDING")
    deferred = ControllerWork.objects.get(pk=delete.pk)
    assert deferred.attempt_count == 0, "waiting uses no attempt"
    assert deferred.available_at >= cancelled_at + timedelta(seconds=1.9)
    assert Agent.objects.filter(id=row.agent_id).exists()
    assert fake_compute.calls_to("delete_runtime_credentials") == []
    assert run_work(delete.pk) is None, "not due before one lease after the cancellation"

    time.sleep(max(0.0, (deferred.available_at - timezone.now()).total_seconds()) + 0.1)
    assert code_of(run_work(delete.pk)) == ("Complete", "AGENT_DELETED")
    assert not Agent.objects.filter(id=row.agent_id).exists()
    assert fake_compute.world()["credentials"] == []
    settled = effect(row, "transport")
    assert (settled.state, settled.removed_by) == ("receipted", delete.pk)
    assert settled.removed_at is not None
    assert ControllerWork.objects.filter(pk=row.work_id).exists(), "the provisioning record stays"
    assert Configuration.objects.filter(id=row.configuration_id).exists(), "no rollback of the Configuration"
    [deleted] = AuditEvent.objects.filter(action="openclaw.agents.deleted")
    assert deleted.details["settledProvisioningWorkIds"] == [row.work_id]


def test_deletion_after_a_cancellation_without_an_open_effect_does_not_wait(world, admin_actor, fake_compute):
    row = failed_at_transport(world, admin_actor, fake_compute)
    agent_delete(actor=admin_actor, namespace_id=row.namespace_id, agent_id=row.agent_id)
    assert row_of(row).status == "cancelled"
    delete = ControllerWork.objects.get(agent_id=row.agent_id, agent_target="deleted")

    assert code_of(run_work(delete.pk)) == ("Complete", "AGENT_DELETED")
    assert not Agent.objects.filter(id=row.agent_id).exists()


# --- guards -------------------------------------------------------------------------------------


def test_patch_and_deploy_answer_409_while_provisioning_owns_the_agent(world, admin_actor, api, fake_compute):
    row = failed_at_transport(world, admin_actor, fake_compute)
    path = f"/namespaces/{row.namespace_id}/agents/{row.agent_id}"

    configuration_path = f"/namespaces/{row.namespace_id}/configurations/{row.configuration_id}"
    values = api.get(configuration_path).data["values"]

    patched = api.patch(path, {"configurationId": row.configuration_id})
    deployed = api.post(path + "/deploy")
    edited = api.patch(configuration_path, {"values": {**values, "ui": {"seamColor": "#336699"}}})

    assert (patched.status, patched.error_code) == (409, "RESOURCE_CONFLICT")
    assert (deployed.status, deployed.error_code) == (409, "RESOURCE_CONFLICT")
    assert (edited.status, edited.error_code) == (409, "RESOURCE_CONFLICT")
    assert counts(row)["revisions"] == 0

    # Failed but retryable still owns it; Stop cancels and releases it.
    ControllerWork.objects.filter(pk=row.work_id).update(max_attempts=2)
    make_due(row.work_id)
    fake_compute.script("provision_runtime_credentials", row.agent_id, [error("DEPENDENCY_UNAVAILABLE")])
    assert code_of(run_work(row.work_id)) == ("Fail", "DEPENDENCY_UNAVAILABLE")
    assert row_of(row).status == "failed"
    assert api.patch(path, {"configurationId": row.configuration_id}).status == 409
    assert api.patch(configuration_path, {"values": values}).status == 409
    assert api.post(path + "/stop").status == 202
    assert api.patch(path, {"configurationId": row.configuration_id}).status == 200
    assert api.patch(configuration_path, {"values": values}).status == 200


def test_a_provisioned_agent_can_be_edited_once_handed_off(world, admin_actor, api, fake_compute):
    row = admitted(world, admin_actor)
    assert code_of(run_work(row.work_id)) == ("Complete", "PROVISIONING_SUCCEEDED")

    patched = api.patch(f"/namespaces/{row.namespace_id}/agents/{row.agent_id}",
                        {"configurationId": row.configuration_id})

    assert patched.status == 200


def test_another_callers_deploy_is_refused_too(world, admin_actor, fake_compute):
    row = failed_at_transport(world, admin_actor, fake_compute)
    deployer = service_principal("deployer")
    grant(deployer, "deploy:agent", "read:configuration", "operate:secret")
    response = ApiClient(key_for(deployer)).post(f"/namespaces/{row.namespace_id}/agents/{row.agent_id}/deploy")
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")


# --- secrets never leak -------------------------------------------------------------------------


def test_a_secret_canary_never_appears_in_rows_progress_audit_logs_or_messages(
        ready_namespace, admin_actor, fake_compute, caplog, monkeypatch, django_capture_on_commit_callbacks):
    canary = f"canary-{uuid.uuid4()}"
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        caplog.set_level(logging.DEBUG, logger=name)
    forced, connection.force_debug_cursor = connection.force_debug_cursor, True
    sent: list[object] = []
    from project import celery_app

    monkeypatch.setattr(celery_app, "send_task", lambda *args, **kwargs: sent.append((args, kwargs)))
    try:
        harness = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                                command=SecretCreate(name="model-key", value=canary))
        tool = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                             command=SecretCreate(name="tool", value=canary + "-tool"))
        with django_capture_on_commit_callbacks(execute=True):
            row = admit(ready_namespace, admin_actor,
                        plan_for(ready_namespace, name="canary", harness=harness, bound={"TOOL": tool}))
        with django_capture_on_commit_callbacks(execute=True):
            assert code_of(run_work(row.work_id)) == ("Complete", "PROVISIONING_SUCCEEDED")
        with django_capture_on_commit_callbacks(execute=True):
            run_work(revision_reconcile_key(row_of(row).revision_id))
    finally:
        connection.force_debug_cursor = forced

    assert sent, "the nudges were captured"
    surfaces = {
        "work rows": json.dumps(list(ControllerWork.objects.values()), default=str),
        "provisioning rows": json.dumps(list(AgentProvisioningWork.objects.values()), default=str),
        "audit": json.dumps(list(AuditEvent.objects.values()), default=str),
        "revisions": json.dumps(list(AgentRevision.objects.values()), default=str),
        "logs": caplog.text,
        "celery messages": json.dumps(sent, default=str),
    }
    assert row.work_id in surfaces["celery messages"]
    assert "INSERT" in surfaces["logs"], "SQL was logged with its parameters"
    leaked = [name for name, text in surfaces.items() if canary in text]
    assert leaked == []


# --- the local driver observes the credential the worker keeps for it ------------------------------


def test_the_local_driver_observes_the_gateway_password_the_worker_keeps(ready_namespace, tmp_path):
    driver = LocalComputeDriver(data_dir=tmp_path)
    agent = AgentFactory(namespace=ready_namespace)

    assert driver.observe_runtime_credentials(credentials_ref(agent, driver)).found is False
    driver.provision_runtime_credentials(ensure_credentials(agent, driver))
    observed = driver.observe_runtime_credentials(credentials_ref(agent, driver))

    assert (observed.found, observed.owner) == (True, agent.id)
    password = Secret.objects.get(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE)
    assert credentials_ref(agent, driver).runtime_credentials[GATEWAY_PASSWORD_PURPOSE].secret_id == password.id


def test_the_status_is_the_work_rows_state_with_no_write_to_the_provisioning_row(world, admin_actor, fake_compute):
    """Nothing keeps a second status in step: claimed work reads as running, work the sweep
    failed as failed, a cancellation as cancelled, the handoff as succeeded."""
    row = admitted(world, admin_actor)
    assert row_of(row).status == "queued"
    claim = queue.claim(row.work_id)
    assert claim is not None
    assert row_of(row).status == "running"
    ControllerWork.objects.filter(pk=row.work_id).update(state="failed_permanent", claim_token=None,
                                                         lease_expires_at=None, completed_at=timezone.now(),
                                                         reason_code="LEASE_EXPIRED")
    assert row_of(row).status == "failed"
    AgentProvisioningWork.objects.filter(pk=row.pk).update(completed_phase="handoff")
    assert row_of(row).status == "succeeded"
    AgentProvisioningWork.objects.filter(pk=row.pk).update(cancelled_at=timezone.now())
    assert row_of(row).status == "cancelled"
