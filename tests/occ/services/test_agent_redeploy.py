"""agent_redeploy: a new revision from an earlier snapshot, admitted like a deploy."""

from __future__ import annotations

import copy

import pytest

from occ.commands.configurations import ConfigurationUpdate
from occ.errors import Conflict, Forbidden, NotFound
from occ.models import (
    AccessBinding,
    Agent,
    AgentRevision,
    AgentStatus,
    AuditEvent,
    ControllerWork,
    DeployIdempotencyKey,
    Secret,
    WorkState,
)
from occ.models.work import revision_reconcile_key
from occ.services.agent_lifecycle import agent_stop
from occ.services.configurations import configuration_update
from occ.services.deploy import agent_deploy, agent_redeploy
from occ.services.secrets import secret_delete
from tests.agents_support import state
from tests.factories import actor, grant, marked_document, service_principal
from tests.fakes.compute import deployable_agent, run_work


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace, bound=1)


def deploy(actor_, agent: Agent, **kw) -> AgentRevision:
    return agent_deploy(actor=actor_, namespace_id=agent.namespace_id, agent_id=agent.id, **kw)


def redeploy(actor_, agent: Agent, revision: AgentRevision, **kw) -> AgentRevision:
    return agent_redeploy(actor=actor_, namespace_id=agent.namespace_id, agent_id=agent.id,
                          revision_id=revision.id, **kw)


def edit(actor_, agent: Agent, marker: dict) -> None:
    configuration_update(actor=actor_, namespace_id=agent.namespace_id, configuration_id=agent.configuration_id,
                         command=ConfigurationUpdate(values=marked_document(marker)))


@pytest.fixture
def two(admin_actor, agent) -> tuple[AgentRevision, AgentRevision]:
    """v1 on the first document, v2 on an edited one."""
    first = deploy(admin_actor, agent)
    edit(admin_actor, agent, {"v": 2})
    return first, deploy(admin_actor, agent)


def test_redeploy_admits_the_old_snapshot_as_the_next_revision(admin_actor, agent, two, fake_compute):
    first, second = two
    before = state()
    third = redeploy(admin_actor, agent, first)

    assert third.number == 3
    assert third.snapshot["configuration"] == first.snapshot["configuration"] != second.snapshot["configuration"]
    assert (third.configuration_id, third.configuration_generation) == (first.configuration_id, 1)
    for key in ("secretBindings", "harnessAuth", "backendId", "plugins", "pluginApprovers", "harness", "compute",
                "servicePrincipalId"):
        assert third.snapshot[key] == first.snapshot[key], key
    assert third.snapshot["sourceRevisionId"] == first.id
    work = ControllerWork.objects.get(pk=revision_reconcile_key(third.id))
    assert (work.state, work.actor_id, work.revision_id) == (WorkState.QUEUED, admin_actor.id, third.id)
    event = AuditEvent.objects.get(action="openclaw.agents.redeploy")
    assert (event.actor_id, event.resource_id) == (admin_actor.id, agent.id)
    assert event.details["revisionId"] == third.id
    assert (event.details["sourceRevisionId"], event.details["sourceRevision"]) == (first.id, 1)
    assert event.details["secretBindings"] == {
        "TOOL_TOKEN_0": first.snapshot["secretBindings"]["TOOL_TOKEN_0"]["source"]["id"]}
    assert state() == {**before, "revisions": before["revisions"] + 1, "work": before["work"] + 1,
                       "audit": before["audit"] + 1}
    # The Agent and its Configuration keep their current settings: the next deploy is v2's document.
    current = Agent.objects.select_related("configuration").get(id=agent.id)
    assert current.configuration.values == marked_document({"v": 2})
    assert current.desired_runtime_state == "running"


def test_the_revision_job_activates_the_redeployed_snapshot(admin_actor, agent, two, fake_compute):
    first, second = two
    for revision in (first, second):
        run_work(revision_reconcile_key(revision.id))
    assert Agent.objects.get(id=agent.id).active_revision_id == second.id
    third = redeploy(admin_actor, agent, first)
    run_work(revision_reconcile_key(third.id))

    assert ControllerWork.objects.get(pk=revision_reconcile_key(third.id)).state == WorkState.SUCCEEDED
    assert Agent.objects.get(id=agent.id).active_revision_id == third.id
    assert fake_compute.serving(agent.id) == third.id
    assert AgentRevision.objects.get(id=third.id).snapshot["configuration"] == first.snapshot["configuration"]
    assert second.id in fake_compute.calls_to("retire_revision")


def test_same_key_returns_the_same_revision(admin_actor, agent, two):
    first, _ = two
    once = redeploy(admin_actor, agent, first, idempotency_key="rollback-1")
    before = state()
    again = redeploy(admin_actor, agent, first, idempotency_key="rollback-1")
    assert again.id == once.id
    assert state() == before
    assert DeployIdempotencyKey.objects.filter(agent=agent, key="rollback-1").count() == 1


def test_same_key_for_another_source_or_a_deploy_is_a_conflict(admin_actor, agent, two):
    first, second = two
    redeploy(admin_actor, agent, first, idempotency_key="rollback-1")
    before = state()
    with pytest.raises(Conflict):
        redeploy(admin_actor, agent, second, idempotency_key="rollback-1")
    with pytest.raises(Conflict):
        deploy(admin_actor, agent, idempotency_key="rollback-1")
    deploy(admin_actor, agent, idempotency_key="deploy-1")
    with pytest.raises(Conflict):
        redeploy(admin_actor, agent, first, idempotency_key="deploy-1")
    assert state()["revisions"] == before["revisions"] + 1  # only the plain deploy


def test_a_deleted_secret_makes_the_snapshot_undeployable(admin_actor, agent, two, django_capture_on_commit_callbacks):
    """v1 binds a Secret; v2's Configuration no longer does, so once v2 is active the Secret
    may be deleted, and v1 can no longer be deployed."""
    first, _ = two
    bound = first.snapshot["secretBindings"]["TOOL_TOKEN_0"]["source"]["id"]
    configuration_update(actor=admin_actor, namespace_id=agent.namespace_id, configuration_id=agent.configuration_id,
                         command=ConfigurationUpdate(values=marked_document({"v": 3}), secret_bindings={}))
    third = deploy(admin_actor, agent)
    for revision in AgentRevision.objects.filter(agent=agent).order_by("number"):
        run_work(revision_reconcile_key(revision.id))
    assert Agent.objects.get(id=agent.id).active_revision_id == third.id
    with django_capture_on_commit_callbacks(execute=True):
        secret_delete(actor=admin_actor, namespace_id=agent.namespace_id, secret_id=bound)
    assert not Secret.objects.filter(id=bound).exists()
    before = state()
    with pytest.raises(Conflict) as raised:
        redeploy(admin_actor, agent, first)
    assert raised.value.code == "RESOURCE_CONFLICT"
    assert "v1 can no longer be deployed" in raised.value.message
    assert bound in raised.value.message
    assert "TOOL_TOKEN_0" in raised.value.message
    assert state() == before


def test_the_agent_principal_must_still_be_allowed_each_secret(admin_actor, agent, two):
    first, _ = two
    secret_id = first.snapshot["secretBindings"]["TOOL_TOKEN_0"]["source"]["id"]
    AccessBinding.objects.filter(principal=agent.service_principal, resource_id=secret_id).delete()
    before = state()
    with pytest.raises(Forbidden) as raised:
        redeploy(admin_actor, agent, first)
    assert raised.value.denial.reason == "agent_principal_lacks_grant"
    assert raised.value.denial.resource_id == secret_id
    assert state() == before


@pytest.mark.parametrize(("permissions", "denied"), [
    pytest.param(("read:agent_revision", "read:configuration", "operate:secret"), "deploy:agent", id="no-deploy"),
    pytest.param(("deploy:agent", "read:configuration", "operate:secret"), "read:agent_revision",
                 id="no-revision-read"),
    pytest.param(("deploy:agent", "read:agent_revision", "operate:secret"), "read:configuration",
                 id="no-configuration-read"),
    pytest.param(("deploy:agent", "read:agent_revision", "read:configuration"), "operate:secret",
                 id="no-secret-operate"),
])
def test_the_caller_needs_every_permission(admin_actor, agent, two, permissions, denied):
    first, _ = two
    principal = service_principal("redeployer")
    grant(principal, *permissions, namespace=agent.namespace)
    before = state()
    with pytest.raises(Forbidden) as raised:
        redeploy(actor(principal), agent, first)
    denial = raised.value.denial
    assert f"{denial.action}:{denial.resource_kind}" == denied
    assert state() == before


def test_with_every_permission_a_namespace_grant_redeploys(agent, two):
    first, _ = two
    principal = service_principal("redeployer")
    grant(principal, "deploy:agent", "read:agent_revision", "read:configuration", "operate:secret",
          namespace=agent.namespace)
    assert redeploy(actor(principal), agent, first).snapshot["sourceRevisionId"] == first.id


def test_a_configuration_the_runtime_now_refuses_is_a_conflict(admin_actor, agent, two):
    first, _ = two
    broken = copy.deepcopy(first.snapshot)
    broken["configuration"]["gateway"] = {"port": 1234}  # a key the driver owns
    old = AgentRevision.objects.create(namespace_id=agent.namespace_id, agent=agent, number=3,
                                       configuration_id=agent.configuration_id, configuration_generation=1,
                                       snapshot=broken, created_by=admin_actor.id)
    before = state()
    with pytest.raises(Conflict) as raised:
        redeploy(admin_actor, agent, old)
    assert "v3 can no longer be deployed" in raised.value.message
    assert "configuration" in raised.value.message
    assert state() == before


def test_unknown_or_foreign_revision_is_not_found(admin_actor, agent, two, ready_namespace):
    first, _ = two
    other = deployable_agent(ready_namespace)
    with pytest.raises(NotFound):
        agent_redeploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=other.id, revision_id=first.id)
    with pytest.raises(NotFound):
        agent_redeploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id,
                       revision_id="rev_00000000-0000-4000-8000-000000000000")


def test_a_deleting_agent_is_refused(admin_actor, agent, two):
    first, _ = two
    Agent.objects.filter(id=agent.id).update(status=AgentStatus.DELETING)
    with pytest.raises(Conflict) as raised:
        redeploy(admin_actor, agent, first)
    assert raised.value.code == "AGENT_DELETING"


def test_a_stopped_agent_is_started_on_the_old_snapshot(admin_actor, agent, two):
    first, _ = two
    agent_stop(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    assert Agent.objects.get(id=agent.id).desired_runtime_state == "stopped"
    redeploy(admin_actor, agent, first)
    assert Agent.objects.get(id=agent.id).desired_runtime_state == "running"

