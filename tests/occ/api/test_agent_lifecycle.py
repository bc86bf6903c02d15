"""POST …/agents/{agt}/stop and DELETE …/agents/{agt}, and a whole lifecycle through the API
and the worker: deploy, replace, stop, delete, gone."""

from __future__ import annotations

import pytest
from django.utils import timezone

from occ.models import AccessBinding, Agent, AgentRevision, AuditEvent, ControllerWork, Principal, WorkState
from occ.models.work import revision_reconcile_key
from tests.agents_support import after_one_denial, caller, state
from tests.fakes.compute import deployable_agent, run_work

UNKNOWN_AGT = "agt_00000000-0000-4000-8000-000000000000"


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace, bound=1)


def url(agent: Agent, *rest: str) -> str:
    return "/".join([f"/namespaces/{agent.namespace_id}/agents/{agent.id}", *rest])


def latest(agent: Agent, target: str) -> ControllerWork:
    return ControllerWork.objects.filter(agent_id=agent.id, agent_target=target).latest("created_at")


# --- stop ---------------------------------------------------------------------------------------------


def test_stop_answers_202_with_the_agent(api, agent):
    api.post(url(agent, "deploy"))
    response = api.post(url(agent, "stop"))
    assert response.status == 202
    assert (response.data["id"], response.data["desiredRuntimeState"], response.data["status"]) == (
        agent.id, "stopped", "active")
    assert latest(agent, "stopped").state == WorkState.QUEUED


def test_repeated_stop_is_a_no_op_202(api, agent):
    api.post(url(agent, "stop"))
    before = state()
    response = api.post(url(agent, "stop"))
    assert response.status == 202
    assert state() == before


def test_stop_takes_no_body(api, agent):
    response = api.post(url(agent, "stop"), raw=b"{}")
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")


def test_stop_needs_agent_operate(agent):
    _, client = caller("read:agent", "deploy:agent", namespace=agent.namespace)
    before = state()
    assert client.post(url(agent, "stop")).status == 403
    assert state() == after_one_denial(before)


def test_stop_unknown_agent_is_404(api, agent):
    response = api.post(f"/namespaces/{agent.namespace_id}/agents/{UNKNOWN_AGT}/stop")
    assert (response.status, response.error_code) == (404, "NOT_FOUND")


# --- delete -------------------------------------------------------------------------------------------


def test_delete_answers_202_deleting_and_then_mutations_are_409(api, agent):
    response = api.delete(url(agent))
    assert response.status == 202
    assert (response.data["status"], response.data["desiredRuntimeState"]) == ("deleting", "stopped")
    assert api.get(url(agent)).data["status"] == "deleting", "reads still work"
    before = state()
    for method, path, body in [
        ("PATCH", url(agent), {"configurationId": agent.configuration_id}),
        ("POST", url(agent, "deploy"), None),
        ("POST", url(agent, "stop"), None),
        ("POST", url(agent, "secret-access"), {"secretIds": [agent.harness_secret_id]}),
    ]:
        refused = api.request(method, path, body)
        assert (refused.status, refused.error_code) == (409, "AGENT_DELETING"), (method, path)
    assert state() == before


def test_repeated_delete_while_pending_is_the_same_202(api, agent):
    first = api.delete(url(agent))
    before = state()
    again = api.delete(url(agent))
    assert again.status == 202
    assert again.data == first.data
    assert state() == before


def test_after_a_failed_teardown_only_the_initiator_may_retry_unless_it_lost_permission(agent):
    initiator, initiator_client = caller("delete:agent", "read:agent", namespace=agent.namespace)
    other, other_client = caller("delete:agent", "read:agent", namespace=agent.namespace)
    assert initiator_client.delete(url(agent)).status == 202
    ControllerWork.objects.filter(agent_id=agent.id, agent_target="deleted").update(
        state=WorkState.FAILED_PERMANENT, completed_at=timezone.now(), reason_code="DEPENDENCY_UNAVAILABLE")

    before = state()
    refused = other_client.delete(url(agent))
    assert (refused.status, refused.error_code) == (403, "FORBIDDEN")
    assert state() == after_one_denial(before)
    denial = AuditEvent.objects.filter(kind="authorization_denial").latest("occurred_at")
    assert denial.details["initiatingActorId"] == initiator.id

    AccessBinding.objects.filter(principal=initiator).delete()
    taken = other_client.delete(url(agent))
    assert taken.status == 202
    assert latest(agent, "deleted").actor_id == other.id
    assert AuditEvent.objects.filter(action="openclaw.agents.delete").latest("occurred_at").details["takeover"]


def test_delete_needs_agent_delete(agent):
    _, client = caller("read:agent", "operate:agent", namespace=agent.namespace)
    before = state()
    assert client.delete(url(agent)).status == 403
    assert state() == after_one_denial(before)


def test_delete_takes_no_body(api, agent):
    response = api.request("DELETE", url(agent), {"force": True})
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert Agent.objects.get(id=agent.id).status == "active"


# --- the whole lifecycle ------------------------------------------------------------------------------


def test_deploy_replace_stop_delete_through_the_api_and_the_worker(api, agent, fake_compute):
    first = api.post(url(agent, "deploy")).data
    run_work(revision_reconcile_key(first["id"]))
    assert api.get(url(agent)).data["activeRevisionId"] == first["id"]
    assert api.get(url(agent, "deployments", first["id"])).data["status"] == "succeeded"

    second = api.post(url(agent, "deploy")).data
    run_work(revision_reconcile_key(second["id"]))
    assert api.get(url(agent)).data["activeRevisionId"] == second["id"]
    assert fake_compute.serving(agent.id) == second["id"]
    assert api.get(url(agent, "deployments", first["id"])).data["status"] == "succeeded", "outcomes stay"

    assert api.post(url(agent, "stop")).status == 202
    # Until the stop work has run the gateway still serves: the runtime says so.
    stopping = api.get(url(agent)).data
    assert (stopping["desiredRuntimeState"], stopping["runtime"]["state"]) == ("stopped", "stopping")
    assert stopping["runtime"]["revisionId"] == second["id"]
    assert fake_compute.gateway(agent.id)["running"] is True
    run_work(latest(agent, "stopped").pk)
    stopped = api.get(url(agent)).data
    assert (stopped["desiredRuntimeState"], stopped["runtime"]["state"]) == ("stopped", "stopped")
    assert "activeRevisionId" not in stopped
    assert fake_compute.gateway(agent.id)["running"] is False

    principal_id = stopped["servicePrincipalId"]
    assert api.delete(url(agent)).status == 202
    assert run_work(latest(agent, "deleted").pk).reason_code == "AGENT_DELETED"
    assert api.get(url(agent)).status == 404
    assert api.get(url(agent, "deployments", first["id"])).status == 404
    assert not AgentRevision.objects.filter(agent_id=agent.id).exists()
    assert not Principal.objects.filter(id=principal_id).exists()
    assert fake_compute.gateway(agent.id)["staged"] == []
    # The name is free again.
    recreated = api.post(f"/namespaces/{agent.namespace_id}/agents",
                         {"name": agent.name, "configurationId": agent.configuration_id})
    assert recreated.status == 201
