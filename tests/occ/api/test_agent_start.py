"""POST …/agents/{agt}/start: a stopped Agent back on the revision it last ran, through the API,
the service and the worker (the fake compute driver)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError
from django.test import Client

from occ.models import Agent, AgentRevision, AuditEvent, ControllerWork, WorkState
from occ.models.work import revision_reconcile_key
from occ.selectors.deployments import agent_runtime
from tests.agents_support import after_one_denial, caller, state
from tests.fakes.compute import deployable_agent, run_work
from tests.occ.api.test_agent_lifecycle import UNKNOWN_AGT, latest, url

START_PREFIX = "agent_revision:"


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace, bound=1)


def starts(agent_: Agent) -> list[ControllerWork]:
    return list(ControllerWork.objects.filter(agent_id=agent_.id, idempotency_key__contains=":start:")
                .order_by("created_at"))


def deployed_and_stopped(api, agent_: Agent, fake_compute) -> str:
    revision = api.post(url(agent_, "deploy")).data["id"]
    run_work(revision_reconcile_key(revision))
    assert api.post(url(agent_, "stop")).status == 202
    run_work(latest(agent_, "stopped").pk)
    assert fake_compute.gateway(agent_.id)["running"] is False
    return revision


def test_start_brings_a_stopped_agent_back_on_its_last_revision(api, agent, fake_compute):
    revision = deployed_and_stopped(api, agent, fake_compute)
    before = AuditEvent.objects.filter(action="openclaw.agents.start").count()

    response = api.post(url(agent, "start"))

    assert response.status == 202
    assert (response.data["id"], response.data["desiredRuntimeState"]) == (agent.id, "running")
    assert "activeRevisionId" not in response.data, "it is set once the gateway serves again"
    assert agent_runtime(Agent.objects.get(id=agent.id)).state == "starting"
    [work] = starts(agent)
    assert (work.idempotency_key, work.revision_id, work.state) == (
        f"{START_PREFIX}{revision}:start:1", revision, WorkState.QUEUED)
    audit = AuditEvent.objects.filter(action="openclaw.agents.start").latest("occurred_at")
    assert AuditEvent.objects.filter(action="openclaw.agents.start").count() == before + 1
    assert {k: audit.details[k] for k in ("attempt", "revisionId", "revision")} == {
        "attempt": 1, "revisionId": revision, "revision": 1}
    assert audit.resource_id == agent.id

    assert run_work(work.pk).reason_code == "REVISION_ACTIVATED"
    assert api.get(url(agent)).data["activeRevisionId"] == revision
    assert fake_compute.serving(agent.id) == revision
    assert AgentRevision.objects.filter(agent=agent).count() == 1, "no new revision"
    assert api.get(url(agent, "deployments", revision)).data["status"] == "succeeded", "its record is unchanged"


def test_start_picks_the_newest_revision_that_ran_not_a_failed_later_one(api, agent, fake_compute):
    first = api.post(url(agent, "deploy")).data["id"]
    run_work(revision_reconcile_key(first))
    second = api.post(url(agent, "deploy")).data["id"]
    fake_compute.script("prepare_revision", second, ["fatal:RUNTIME_STARTUP_FAILED"])
    run_work(revision_reconcile_key(second))
    assert api.get(url(agent)).data["activeRevisionId"] == first
    api.post(url(agent, "stop"))
    run_work(latest(agent, "stopped").pk)

    api.post(url(agent, "start"))

    assert starts(agent)[0].revision_id == first


def test_repeated_start_while_pending_and_start_of_a_running_agent_change_nothing(api, agent, fake_compute):
    deployed_and_stopped(api, agent, fake_compute)
    assert api.post(url(agent, "start")).status == 202
    before = state()
    assert api.post(url(agent, "start")).status == 202
    assert state() == before
    run_work(starts(agent)[0].pk)
    running = state()
    assert api.post(url(agent, "start")).status == 202
    assert state() == running


def test_stop_then_start_again_queues_a_second_start(api, agent, fake_compute):
    deployed_and_stopped(api, agent, fake_compute)
    api.post(url(agent, "start"))
    run_work(starts(agent)[0].pk)
    api.post(url(agent, "stop"))
    run_work(latest(agent, "stopped").pk)

    api.post(url(agent, "start"))

    assert [w.idempotency_key.rsplit(":", 1)[-1] for w in starts(agent)] == ["1", "2"]
    assert run_work(starts(agent)[1].pk).reason_code == "REVISION_ACTIVATED"


def test_start_of_an_agent_that_never_ran_is_409(api, agent):
    before = state()
    response = api.post(url(agent, "start"))
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    assert "Deploy" in response.body["error"]["message"]
    assert state() == before


def test_start_of_a_deleting_agent_is_409(api, agent, fake_compute):
    deployed_and_stopped(api, agent, fake_compute)
    api.delete(url(agent))
    response = api.post(url(agent, "start"))
    assert (response.status, response.error_code) == (409, "AGENT_DELETING")


def test_start_takes_no_body(api, agent):
    response = api.post(url(agent, "start"), raw=b"{}")
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")


def test_start_needs_agent_operate_on_the_exact_agent(api, agent, fake_compute):
    deployed_and_stopped(api, agent, fake_compute)
    _, client = caller("read:agent", "deploy:agent", "read:configuration", "operate:secret",
                       namespace=agent.namespace)
    before = state()
    refused = client.post(url(agent, "start"))
    assert (refused.status, refused.error_code) == (403, "FORBIDDEN")
    assert state() == after_one_denial(before)
    denial = AuditEvent.objects.filter(kind="authorization_denial").latest("occurred_at")
    assert (denial.details["permission"], denial.resource_id) == ("operate:agent", agent.id)


def test_start_needs_what_running_the_revision_needs(api, agent, fake_compute):
    deployed_and_stopped(api, agent, fake_compute)
    _, client = caller("read:agent", "operate:agent", namespace=agent.namespace)
    before = state()
    refused = client.post(url(agent, "start"))
    assert refused.status == 403
    assert state() == after_one_denial(before)
    assert Agent.objects.get(id=agent.id).desired_runtime_state == "stopped"


def test_start_on_another_agent_grant_is_403_before_an_unknown_agent_is_404(api, agent, fake_compute):
    """A grant on one Agent reaches the Namespace: another real Agent is 403, a made-up one 404
    (authorization of the exact resource after the Namespace gate); outside the Namespace 403."""
    deployed_and_stopped(api, agent, fake_compute)
    other = api.post(f"/namespaces/{agent.namespace_id}/agents",
                     {"name": "other", "configurationId": agent.configuration_id}).data
    _, client = caller("operate:agent", "read:agent", namespace=agent.namespace, resource_kind="agent",
                       resource_id=other["id"])
    assert client.post(url(agent, "start")).status == 403
    assert client.post(f"/namespaces/{agent.namespace_id}/agents/{UNKNOWN_AGT}/start").status == 404
    _, stranger = caller()
    assert stranger.post(f"/namespaces/{agent.namespace_id}/agents/{UNKNOWN_AGT}/start").status == 403


def test_start_unknown_agent_is_404(api, agent):
    response = api.post(f"/namespaces/{agent.namespace_id}/agents/{UNKNOWN_AGT}/start")
    assert (response.status, response.error_code) == (404, "NOT_FOUND")


def test_start_is_documented_in_openapi_with_its_errors(db):
    document = Client().get("/api/openapi.json").json()
    operation = document["paths"]["/namespaces/{namespace_id}/agents/{agent_id}/start"]["post"]
    assert set(operation["responses"]) >= {"202", "400", "401", "403", "404", "409", "503"}
    assert "requestBody" not in operation
    assert "AGENT_DELETING" in operation["description"]
    assert "agent:operate" in operation["description"]


def test_a_start_whose_audit_fails_changes_nothing(api, agent, fake_compute, monkeypatch):
    deployed_and_stopped(api, agent, fake_compute)
    before = state()

    def fail(*args, **kwargs):
        raise DatabaseError("audit table unavailable")

    monkeypatch.setattr(AuditEvent.objects, "create", fail)
    response = api.post(url(agent, "start"))

    assert response.status == 503
    monkeypatch.undo()
    assert state() == before
    assert Agent.objects.get(id=agent.id).desired_runtime_state == "stopped"
    assert starts(agent) == []
