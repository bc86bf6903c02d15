"""Agent stop and delete work: what they stop, what they remove, and what they keep."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.drivers.compute.fake import error
from occ.drivers.secrets import get_secret_driver
from occ.iam.keys import create_key_record
from occ.models import (
    AccessBinding,
    Agent,
    AgentRevision,
    AuditEvent,
    AuditKind,
    ControllerWork,
    DeployIdempotencyKey,
    Principal,
    Restriction,
    Role,
    Secret,
    ServiceKey,
    WorkState,
)
from occ.services.agent_lifecycle import agent_delete, agent_stop
from occ.services.deploy import agent_deploy
from occ.services.secrets import runtime_credential_ensure
from tests.factories import actor, grant, service_principal
from tests.fakes.compute import delivered_secrets, run_job_twice, run_work
from tests.provisioning.jobs.conftest import code_of, deploy, events, key_of

OPERATOR_PERMISSIONS = ("operate:agent", "delete:agent", "read:agent")


@pytest.fixture
def operator(db):
    principal = service_principal("operator")
    binding = grant(principal, *OPERATOR_PERMISSIONS)
    return actor(principal), binding


@pytest.fixture
def running(admin_actor, agent, fake_compute):
    """An Agent with two revisions: #1 retired, #2 active and serving."""
    first = deploy(admin_actor, agent)
    run_work(key_of(first))
    second = deploy(admin_actor, agent)
    run_work(key_of(second))
    assert Agent.objects.get(id=agent.id).active_revision_id == second.id
    fake_compute.clear_calls()
    return agent, first, second


def stop_key(agent: Agent) -> str:
    return ControllerWork.objects.filter(agent_id=agent.id, agent_target="stopped").latest("created_at").pk


def delete_key(agent: Agent) -> str:
    return ControllerWork.objects.filter(agent_id=agent.id, agent_target="deleted").latest("created_at").pk


# --- stop ---------------------------------------------------------------------------------------


def test_stop_stops_the_active_revision_first_and_clears_the_pointer(operator, running, fake_compute):
    agent, first, second = running
    agent_stop(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)

    outcome = run_work(stop_key(agent))

    assert code_of(outcome) == ("Complete", "AGENT_STOPPED")
    assert fake_compute.calls_to("stop_revision") == [second.id, first.id]
    current = Agent.objects.get(id=agent.id)
    assert current.active_revision_id is None
    assert fake_compute.gateway(agent.id)["running"] is False
    assert AgentRevision.objects.filter(agent=agent).count() == 2, "revisions are kept"
    stopped = events("openclaw.agents.stopped")
    assert len(stopped) == 1
    assert stopped[0].details["clearedActiveRevisionId"] == second.id
    assert stopped[0].actor_id == operator[0].id


def test_stop_superseded_by_a_later_deploy_changes_nothing(admin_actor, operator, running, fake_compute):
    agent, _, second = running
    agent_stop(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)
    key = stop_key(agent)
    agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    fake_compute.clear_calls()

    assert code_of(run_work(key)) == ("Complete", "SUPERSEDED_TARGET")
    assert fake_compute.calls == []
    assert Agent.objects.get(id=agent.id).active_revision_id == second.id


def test_stop_by_a_revoked_actor_fails_without_a_driver_call(operator, running, fake_compute):
    agent, _, second = running
    agent_stop(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)
    operator[1].delete()

    assert code_of(run_work(stop_key(agent))) == ("Fail", "AUTHORIZATION_DENIED")
    assert fake_compute.calls == []
    assert Agent.objects.get(id=agent.id).active_revision_id == second.id
    assert AuditEvent.objects.get(kind=AuditKind.AUTHORIZATION_DENIAL).details["permission"] == "operate:agent"


def test_stop_job_run_twice_is_harmless(operator, running, fake_compute):
    agent, first, second = running
    agent_stop(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)

    first_outcome, applied = run_job_twice(stop_key(agent))

    assert code_of(first_outcome) == code_of(applied) == ("Complete", "AGENT_STOPPED")
    assert Agent.objects.get(id=agent.id).active_revision_id is None
    assert len(events("openclaw.agents.stopped")) == 1
    assert fake_compute.calls_to("stop_revision") == [second.id, first.id, second.id, first.id]


def test_stop_then_deploy_then_stop_runs_two_stops(admin_actor, operator, running, fake_compute):
    agent, _, _ = running
    agent_stop(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)
    run_work(stop_key(agent))
    third = deploy(admin_actor, agent)
    run_work(key_of(third))
    agent_stop(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)

    assert stop_key(agent).endswith(":stopped:2")
    assert code_of(run_work(stop_key(agent))) == ("Complete", "AGENT_STOPPED")
    assert Agent.objects.get(id=agent.id).active_revision_id is None


def test_stop_after_a_third_revision_failed_to_converge_stops_the_gateway_still_serving_the_second(
        admin_actor, operator, running, fake_compute):
    """The failed candidate is active (published before activation) but the gateway serves its
    predecessor: stop reaches it all the same (the same scenario on the real cluster:
    tests/provisioning/jobs/test_kubernetes_jobs.py)."""
    agent, first, second = running
    third = deploy(admin_actor, agent)
    fake_compute.script("activate_revision", third.id, [error("GATEWAY_CONVERGENCE_TIMEOUT", retryable=False)])
    assert code_of(run_work(key_of(third))) == ("Fail", "GATEWAY_CONVERGENCE_TIMEOUT")
    assert Agent.objects.get(id=agent.id).active_revision_id == third.id
    assert (fake_compute.gateway(agent.id)["serving"], fake_compute.gateway(agent.id)["running"]) == (second.id, True)
    fake_compute.clear_calls()

    agent_stop(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)
    assert code_of(run_work(stop_key(agent))) == ("Complete", "AGENT_STOPPED")

    assert fake_compute.calls_to("stop_revision") == [third.id, second.id, first.id]
    assert fake_compute.gateway(agent.id)["running"] is False
    assert Agent.objects.get(id=agent.id).active_revision_id is None


# --- delete -------------------------------------------------------------------------------------


@pytest.fixture
def entangled(running, admin_actor):
    """Everything that must go with the Agent, and things that must stay."""
    agent, first, second = running
    namespace = agent.namespace
    watcher = service_principal("watcher", namespace=namespace)
    on_agent = grant(watcher, "read:agent", namespace=namespace, resource_kind="agent", resource_id=agent.id)
    on_revision = grant(watcher, "read:agent_revision", namespace=namespace, resource_kind="agent_revision",
                        resource_id=first.id)
    kept = grant(watcher, "read:configuration", namespace=namespace, resource_kind="configuration",
                 resource_id=agent.configuration_id)
    sp_bindings = list(AccessBinding.objects.filter(principal=agent.service_principal).values_list("id", flat=True))
    restriction_on_agent = Restriction.objects.create(namespace=namespace, action="operate", resource_kind="agent",
                                                      resource_id=agent.id)
    restriction_kept = Restriction.objects.create(namespace=namespace, action="read", resource_kind="secret")
    sp_key, _ = create_key_record(principal_id=agent.service_principal.id, namespace_id=namespace.id,
                                  name="sp-key", expires_at=timezone.now() + timedelta(days=1), created_by="test")
    password = runtime_credential_ensure(agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE,
                                         value_factory=lambda: "gateway-password-value")
    DeployIdempotencyKey.objects.create(agent=agent, key="k1", revision=second, configuration_id="cfg",
                                        configuration_generation=1, fingerprint="0" * 64)
    return {
        "agent": agent, "revisions": [first.id, second.id], "principal": agent.service_principal.id,
        "bindings": sorted([on_agent.id, on_revision.id, *sp_bindings]), "kept_binding": kept.id,
        "restriction": restriction_on_agent.id, "kept_restriction": restriction_kept.id, "key": sp_key.id,
        "password": password, "secrets": [s.id for s in delivered_secrets(agent)],
    }


def test_delete_finalizer_removes_the_agent_and_everything_it_owns(operator, entangled, fake_compute,
                                                                    django_capture_on_commit_callbacks):
    agent = entangled["agent"]
    agent_delete(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)
    key = delete_key(agent)
    roles_before = Role.objects.count()
    assert not _value_gone(entangled["password"])

    with django_capture_on_commit_callbacks(execute=True):
        outcome = run_work(key)

    assert code_of(outcome) == ("Complete", "AGENT_DELETED")
    assert sorted(fake_compute.calls_to("retire_revision")) == sorted(entangled["revisions"])
    assert fake_compute.calls_to("delete_runtime_credentials") == [agent.id]
    assert fake_compute.gateway(agent.id)["running"] is False
    assert not Agent.objects.filter(id=agent.id).exists()
    assert not AgentRevision.objects.filter(id__in=entangled["revisions"]).exists()
    assert not Principal.objects.filter(id=entangled["principal"]).exists()
    assert not ServiceKey.objects.filter(id=entangled["key"]).exists()
    assert not AccessBinding.objects.filter(id__in=entangled["bindings"]).exists()
    assert not Restriction.objects.filter(id=entangled["restriction"]).exists()
    assert not DeployIdempotencyKey.objects.filter(agent_id=agent.id).exists()
    password = entangled["password"]
    assert not Secret.objects.filter(id=password.id).exists()
    assert _value_gone(password), "the value leaves the SecretDriver once the finalizer commits"
    assert list(ControllerWork.objects.filter(agent_id=agent.id).values_list("pk", flat=True)) == [key], \
        "only the deletion's own row is left (its outcome)"
    # What stays: the Namespace's Secrets, Configuration, other grants and Roles.
    assert Secret.objects.filter(id__in=entangled["secrets"]).count() == len(entangled["secrets"])
    assert AccessBinding.objects.filter(id=entangled["kept_binding"]).exists()
    assert Restriction.objects.filter(id=entangled["kept_restriction"]).exists()
    assert Role.objects.count() == roles_before
    deleted = events("openclaw.agents.deleted")
    assert len(deleted) == 1
    assert deleted[0].details["removedAccessBindings"] == entangled["bindings"]
    assert deleted[0].details["runtimeCredentialSecretIds"] == [password.id]
    assert deleted[0].actor_id == operator[0].id


def _value_gone(secret: Secret) -> bool:
    from occ.drivers.secrets import SecretValueMissing

    try:
        get_secret_driver(secret.driver_id).with_value(secret.backend_name, lambda value: value)
    except SecretValueMissing:
        return True
    return False


def test_delete_request_lists_what_goes_on_completion(operator, entangled):
    agent = entangled["agent"]
    agent_delete(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)
    event = events("openclaw.agents.delete")[-1]
    assert event.details["accessBindingsRemovedOnCompletion"] == entangled["bindings"]
    assert event.details["restrictionsRemovedOnCompletion"] == [entangled["restriction"]]


def test_delete_retire_failure_keeps_every_row_for_the_retry(operator, entangled, fake_compute):
    agent = entangled["agent"]
    agent_delete(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)
    fake_compute.script("retire_revision", entangled["revisions"][0], ["error:AGENT_GATEWAY_UNAVAILABLE"])

    assert code_of(run_work(delete_key(agent))) == ("Retry", "AGENT_GATEWAY_UNAVAILABLE")
    assert Agent.objects.filter(id=agent.id).exists()
    assert AgentRevision.objects.filter(id__in=entangled["revisions"]).count() == 2
    assert Secret.objects.filter(id=entangled["password"].id).exists()


def test_delete_by_a_revoked_actor_fails_without_a_driver_call(operator, entangled, fake_compute):
    agent = entangled["agent"]
    agent_delete(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)
    operator[1].delete()

    assert code_of(run_work(delete_key(agent))) == ("Fail", "AUTHORIZATION_DENIED")
    assert fake_compute.calls == []
    assert Agent.objects.filter(id=agent.id).exists()
    assert ControllerWork.objects.get(pk=delete_key(agent)).state == WorkState.FAILED_PERMANENT


def test_delete_job_run_twice_is_harmless(operator, entangled, fake_compute):
    agent = entangled["agent"]
    agent_delete(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)

    first, applied = run_job_twice(delete_key(agent))

    assert code_of(first) == code_of(applied) == ("Complete", "AGENT_DELETED")
    assert not Agent.objects.filter(id=agent.id).exists()
    assert len(events("openclaw.agents.deleted")) == 1
    assert fake_compute.calls_to("delete_runtime_credentials") == [agent.id, agent.id]


def test_pending_revision_work_of_a_deleting_agent_ends_stopped(admin_actor, operator, agent, fake_compute):
    revision = deploy(admin_actor, agent)
    agent_delete(actor=operator[0], namespace_id=agent.namespace_id, agent_id=agent.id)

    assert code_of(run_work(key_of(revision))) == ("Complete", "REVISION_STOPPED")
    assert code_of(run_work(delete_key(agent))) == ("Complete", "AGENT_DELETED")
    assert not Agent.objects.filter(id=agent.id).exists()
