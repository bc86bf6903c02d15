"""agent_deploy, agent_stop and agent_delete: gates, snapshot, work rows, audit."""

from __future__ import annotations

import json

import pytest

from occ.api.wire import harness_auth_wire, secret_ref_wire
from occ.commands.configurations import ConfigurationUpdate
from occ.commands.secrets import SecretCreate
from occ.drivers.compute.fake import error
from occ.errors import Conflict, DependencyUnavailable, Forbidden, InvalidRequest, NotFound
from occ.models import (
    AccessBinding,
    Agent,
    AgentRevision,
    AuditEvent,
    Configuration,
    ControllerWork,
    DeployIdempotencyKey,
    Namespace,
    NamespaceStatus,
    WorkState,
)
from occ.models.work import revision_reconcile_key
from occ.services.agent_lifecycle import agent_delete, agent_stop
from occ.services.configurations import configuration_update
from occ.services.deploy import agent_deploy, check_idempotency_key
from tests.agents_support import state
from tests.factories import actor, grant, marked_document, service_principal
from tests.fakes.compute import delivered_secrets, deployable_agent


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace, bound=2)


def deploy(actor_, agent: Agent, **kw):
    return agent_deploy(actor=actor_, namespace_id=agent.namespace_id, agent_id=agent.id, **kw)


def deployer(agent: Agent, *permissions: str):
    principal = service_principal(f"deployer-{AuditEvent.objects.count()}")
    grant(principal, *permissions, namespace=agent.namespace)
    return actor(principal)


# --- deploy: the snapshot ------------------------------------------------------------------------


def test_deploy_freezes_a_snapshot_of_references(admin_actor, agent, fake_compute):
    before = state()
    revision = deploy(admin_actor, agent)

    assert revision.number == 1
    snapshot = revision.snapshot
    configuration = agent.configuration
    assert snapshot["configuration"] == configuration.values
    assert (revision.configuration_id, revision.configuration_generation) == (configuration.id, 1)
    assert snapshot["harness"] == {"id": "openclaw", "version": "2026.9.6", "mode": "embedded"}
    assert snapshot["compute"] == {"id": "fake", "implementation": "fake"}
    assert snapshot["harnessAuth"] == harness_auth_wire(agent.harness_auth_method, agent.namespace_id,
                                                        agent.harness_secret_id)
    assert snapshot["secretBindings"] == {
        b.env_name: {"source": secret_ref_wire(b.secret.namespace_id, b.secret_id), "delivery": {"type": "env"}}
        for b in configuration.secret_bindings.select_related("secret")
    }
    assert snapshot["secretDriverId"] == "database"
    assert snapshot["plugins"] == {"driver": {"id": "openclaw", "implementation": "occ.openclaw-curated/1"},
                                   "plugins": {}}
    assert snapshot["servicePrincipalId"] == agent.service_principal.id
    current = Agent.objects.get(id=agent.id)
    assert current.desired_runtime_state == "running"
    assert current.active_revision_id is None, "only the worker sets the active revision"
    work = ControllerWork.objects.get(pk=revision_reconcile_key(revision.id))
    assert (work.state, work.actor_id, work.agent_id, work.revision_id) == (
        WorkState.QUEUED, admin_actor.id, agent.id, revision.id)
    event = AuditEvent.objects.get(action="openclaw.agents.deploy")
    assert (event.resource_id, event.details["revisionId"], event.actor_id) == (agent.id, revision.id,
                                                                                 admin_actor.id)
    assert state() == {**before, "revisions": 1, "work": before["work"] + 1, "audit": before["audit"] + 1}
    assert fake_compute.calls_to("validate_harness_auth") == ["*"]


def test_the_snapshot_is_a_copy_later_edits_do_not_touch(admin_actor, agent):
    revision = deploy(admin_actor, agent)
    configuration_update(actor=admin_actor, namespace_id=agent.namespace_id, configuration_id=agent.configuration_id,
                         command=ConfigurationUpdate(values=marked_document({"changed": True})))
    assert AgentRevision.objects.get(id=revision.id).snapshot["configuration"] != marked_document({"changed": True})
    second = deploy(admin_actor, agent)
    assert (second.number, second.configuration_generation, second.snapshot["configuration"]) == (
        2, 2, marked_document({"changed": True}))


def test_snapshot_and_audit_hold_no_secret_value(admin_actor, ready_namespace, fake_compute):
    from occ.services.secrets import secret_create

    canary = "sk-canary-deploy-7731"
    secret = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                           command=SecretCreate(name="model-key", value=canary))
    agent = deployable_agent(ready_namespace)
    Agent.objects.filter(id=agent.id).update(harness_secret=secret)
    grant(agent.service_principal, "operate:secret", namespace=ready_namespace, resource_kind="secret",
          resource_id=secret.id)
    revision = deploy(admin_actor, agent)
    assert canary not in json.dumps(revision.snapshot)
    assert canary not in json.dumps(list(AuditEvent.objects.values_list("details", flat=True)))
    assert canary not in json.dumps(list(ControllerWork.objects.values("result_data", "idempotency_key")))


# --- deploy: gates ---------------------------------------------------------------------------------


def test_deploy_needs_a_ready_namespace(admin_actor, agent):
    Namespace.objects.filter(id=agent.namespace_id).update(status=NamespaceStatus.PROVISIONING)
    before = state()
    with pytest.raises(Conflict) as raised:
        deploy(admin_actor, agent)
    assert raised.value.code == "NAMESPACE_NOT_READY"
    assert state() == before


def test_deploy_of_a_deleting_agent_is_refused(admin_actor, agent):
    Agent.objects.filter(id=agent.id).update(status="deleting")
    with pytest.raises(Conflict) as raised:
        deploy(admin_actor, agent)
    assert raised.value.code == "AGENT_DELETING"


def test_deploy_without_harness_auth_is_a_conflict(admin_actor, ready_namespace, fake_compute):
    agent = deployable_agent(ready_namespace, harness_auth_method=None, harness_secret=None)
    before = state()
    with pytest.raises(Conflict) as raised:
        deploy(admin_actor, agent)
    assert raised.value.code == "RESOURCE_CONFLICT"
    assert state() == before


def test_harness_auth_the_driver_refuses_is_a_conflict(admin_actor, agent, fake_compute):
    fake_compute.script("validate_harness_auth", "*", [error("HARNESS_AUTH_UNSUPPORTED", retryable=False)])
    with pytest.raises(Conflict) as raised:
        deploy(admin_actor, agent)
    assert raised.value.code == "RESOURCE_CONFLICT"
    assert "HARNESS_AUTH_UNSUPPORTED" not in raised.value.message, "never the driver's words"
    assert AgentRevision.objects.count() == 0


def test_a_driver_that_cannot_check_harness_auth_is_unavailable(admin_actor, agent, fake_compute):
    fake_compute.script("validate_harness_auth", "*", ["raise"])
    with pytest.raises(DependencyUnavailable):
        deploy(admin_actor, agent)
    assert AgentRevision.objects.count() == 0


@pytest.mark.parametrize(("permissions", "denied"), [
    pytest.param(("read:configuration", "operate:secret"), "deploy:agent", id="no-deploy"),
    pytest.param(("deploy:agent", "operate:secret"), "read:configuration", id="no-configuration-read"),
    pytest.param(("deploy:agent", "read:configuration"), "operate:secret", id="no-secret-operate"),
])
def test_the_actor_needs_every_permission(agent, permissions, denied):
    caller = deployer(agent, *permissions)
    before = state()
    with pytest.raises(Forbidden) as raised:
        deploy(caller, agent)
    denial = raised.value.denial
    assert f"{denial.action}:{denial.resource_kind}" == denied
    assert state() == before


def test_the_actor_needs_operate_on_each_delivered_secret(agent):
    secrets = delivered_secrets(agent)
    caller = deployer(agent, "deploy:agent", "read:configuration")
    for secret in secrets[:-1]:
        grant(caller.principal, "operate:secret", namespace=agent.namespace, resource_kind="secret",
              resource_id=secret.id)
    caller.forget_policy()
    with pytest.raises(Forbidden) as raised:
        deploy(caller, agent)
    assert raised.value.denial.resource_id == secrets[-1].id


def test_the_agent_principal_needs_operate_on_each_delivered_secret(admin_actor, agent):
    secrets = delivered_secrets(agent)
    AccessBinding.objects.filter(principal=agent.service_principal, resource_id=secrets[1].id).delete()
    before = state()
    with pytest.raises(Forbidden) as raised:
        deploy(admin_actor, agent)
    assert raised.value.denial.reason == "agent_principal_lacks_grant"
    assert raised.value.denial.resource_id == secrets[1].id
    assert secrets[1].id not in raised.value.message
    assert state() == before


def test_unknown_agent_or_namespace_is_not_found(admin_actor, agent, ready_namespace):
    with pytest.raises(NotFound):
        agent_deploy(actor=admin_actor, namespace_id=ready_namespace.id,
                     agent_id="agt_00000000-0000-4000-8000-000000000000")
    with pytest.raises(NotFound):
        agent_deploy(actor=admin_actor, namespace_id="ns_00000000-0000-4000-8000-000000000000", agent_id=agent.id)


# --- deploy: idempotency keys ----------------------------------------------------------------------


def test_same_key_returns_the_same_revision_without_new_work(admin_actor, agent):
    first = deploy(admin_actor, agent, idempotency_key="deploy-1")
    before = state()
    again = deploy(admin_actor, agent, idempotency_key="deploy-1")
    assert again.id == first.id
    assert state() == before
    other = deploy(admin_actor, agent, idempotency_key="deploy-2")
    assert other.number == 2


def test_same_key_after_the_configuration_changed_is_a_conflict(admin_actor, agent):
    deploy(admin_actor, agent, idempotency_key="deploy-1")
    configuration_update(actor=admin_actor, namespace_id=agent.namespace_id, configuration_id=agent.configuration_id,
                         command=ConfigurationUpdate(values=marked_document({"changed": True})))
    before = state()
    with pytest.raises(Conflict) as raised:
        deploy(admin_actor, agent, idempotency_key="deploy-1")
    assert raised.value.code == "RESOURCE_CONFLICT"
    assert state() == before


def test_same_key_after_the_agent_changed_is_a_conflict(admin_actor, agent):
    deploy(admin_actor, agent, idempotency_key="deploy-1")
    Agent.objects.filter(id=agent.id).update(plugin_approvers=[{"channel": "slack", "id": "U1"}])
    with pytest.raises(Conflict):
        deploy(admin_actor, agent, idempotency_key="deploy-1")


def test_keys_are_per_agent(admin_actor, agent, ready_namespace):
    other = deployable_agent(ready_namespace)
    assert deploy(admin_actor, agent, idempotency_key="k").id != deploy(admin_actor, other, idempotency_key="k").id
    assert DeployIdempotencyKey.objects.count() == 2


@pytest.mark.parametrize("key", [
    pytest.param("", id="empty"),
    pytest.param("x" * 256, id="too-long"),
    pytest.param("bad\x00key", id="nul"),
    pytest.param("tab\tkey", id="control"),
    pytest.param("ключ", id="not-ascii"),
    pytest.param(" padded", id="leading-space"),
])
def test_malformed_keys_are_invalid(key):
    with pytest.raises(InvalidRequest):
        check_idempotency_key(key)


@pytest.mark.parametrize("key", ["k", "x" * 255, "a b", "9f1c2a3e-6c1d-4f7a-9a6b-1d2e3f4a5b6c"])
def test_well_formed_keys(key):
    assert check_idempotency_key(key) == key


# --- stop ---------------------------------------------------------------------------------------------


def stop(actor_, agent: Agent) -> Agent:
    return agent_stop(actor=actor_, namespace_id=agent.namespace_id, agent_id=agent.id)


def test_stop_records_desired_state_and_queues_work(admin_actor, agent):
    deploy(admin_actor, agent)
    result = stop(admin_actor, agent)
    assert result.desired_runtime_state == "stopped"
    work = ControllerWork.objects.get(agent_id=agent.id, agent_target="stopped")
    assert work.idempotency_key == f"agent:{agent.id}:stopped:1"
    assert AuditEvent.objects.filter(action="openclaw.agents.stop").count() == 1


def test_repeated_stop_while_pending_changes_nothing(admin_actor, agent):
    stop(admin_actor, agent)
    before = state()
    stop(admin_actor, agent)
    assert state() == before


def test_stop_deploy_stop_queues_twice(admin_actor, agent):
    stop(admin_actor, agent)
    deploy(admin_actor, agent)
    stop(admin_actor, agent)
    keys = sorted(ControllerWork.objects.filter(agent_id=agent.id, agent_target="stopped")
                  .values_list("idempotency_key", flat=True))
    assert keys == [f"agent:{agent.id}:stopped:1", f"agent:{agent.id}:stopped:2"]


def test_stop_needs_agent_operate(agent):
    caller = deployer(agent, "deploy:agent", "read:agent")
    with pytest.raises(Forbidden):
        stop(caller, agent)


def test_stop_of_a_deleting_agent_is_refused(admin_actor, agent):
    agent_delete(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    with pytest.raises(Conflict) as raised:
        stop(admin_actor, agent)
    assert raised.value.code == "AGENT_DELETING"


# --- delete -------------------------------------------------------------------------------------------


def delete(actor_, agent: Agent) -> Agent:
    return agent_delete(actor=actor_, namespace_id=agent.namespace_id, agent_id=agent.id)


def fail_latest_deletion(agent: Agent) -> None:
    from django.utils import timezone

    ControllerWork.objects.filter(agent_id=agent.id, agent_target="deleted").update(
        state=WorkState.FAILED_PERMANENT, completed_at=timezone.now(), reason_code="DEPENDENCY_UNAVAILABLE")


def test_delete_marks_deleting_and_queues_work(admin_actor, agent):
    deploy(admin_actor, agent)
    result = delete(admin_actor, agent)
    assert (result.status, result.desired_runtime_state) == ("deleting", "stopped")
    assert ControllerWork.objects.filter(pk=f"agent:{agent.id}:deleted:1", actor_id=admin_actor.id).exists()
    event = AuditEvent.objects.get(action="openclaw.agents.delete")
    assert event.details["takeover"] is False


def test_repeated_delete_while_pending_changes_nothing(admin_actor, agent):
    delete(admin_actor, agent)
    before = state()
    assert delete(admin_actor, agent).status == "deleting"
    assert state() == before


def test_after_a_failed_teardown_the_initiator_retries(admin_actor, agent):
    delete(admin_actor, agent)
    fail_latest_deletion(agent)
    delete(admin_actor, agent)
    assert ControllerWork.objects.get(pk=f"agent:{agent.id}:deleted:2").state == WorkState.QUEUED


def test_after_a_failed_teardown_others_are_refused_while_the_initiator_may_delete(agent):
    initiator = deployer(agent, "delete:agent")
    other = deployer(agent, "delete:agent")
    delete(initiator, agent)
    fail_latest_deletion(agent)
    before = state()
    with pytest.raises(Forbidden) as raised:
        delete(other, agent)
    assert raised.value.denial.reason == "not_initiator"
    assert raised.value.denial.extra == {"initiatingActorId": initiator.id}
    assert state() == before


def test_takeover_once_the_initiator_lost_permission(agent):
    initiator = deployer(agent, "delete:agent")
    other = deployer(agent, "delete:agent")
    delete(initiator, agent)
    fail_latest_deletion(agent)
    AccessBinding.objects.filter(principal=initiator.principal).delete()
    delete(other, agent)
    work = ControllerWork.objects.get(pk=f"agent:{agent.id}:deleted:2")
    assert work.actor_id == other.id
    event = AuditEvent.objects.filter(action="openclaw.agents.delete").latest("occurred_at")
    assert (event.details["takeover"], event.details["initiatingActorId"]) == (True, initiator.id)


def test_delete_needs_agent_delete(agent):
    with pytest.raises(Forbidden):
        delete(deployer(agent, "operate:agent"), agent)
    assert Agent.objects.get(id=agent.id).status == "active"


def test_configuration_of_a_deleting_agent_stays(admin_actor, agent):
    delete(admin_actor, agent)
    assert Configuration.objects.filter(id=agent.configuration_id).exists()
