"""GET …/revisions/{rev}/diff and POST …/revisions/{rev}/redeploy."""

from __future__ import annotations

import pytest
from django.test import Client

from occ.api.wire import revision_wire
from occ.models import Agent, AgentRevision, AuditEvent, ControllerWork, WorkState
from occ.models.work import revision_reconcile_key
from tests.agents_support import after_one_denial, caller, make_revision, state
from tests.factories import AgentFactory, grant, marked_document
from tests.fakes.compute import deployable_agent, run_work

UNKNOWN_REV = "rev_00000000-0000-4000-8000-000000000000"


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace, bound=1)


def url(agent: Agent, *rest: str) -> str:
    return "/".join([f"/namespaces/{agent.namespace_id}/agents/{agent.id}", *rest])


def two_revisions(api, agent: Agent) -> tuple[dict, dict]:
    first = api.post(url(agent, "deploy"))
    patched = api.patch(f"/namespaces/{agent.namespace_id}/configurations/{agent.configuration_id}",
                        {"values": marked_document({"second": True})})
    assert patched.status == 200
    second = api.post(url(agent, "deploy"))
    assert (first.status, second.status) == (202, 202)
    return first.data, second.data


# --- diff ------------------------------------------------------------------------------------------


def test_diff_names_each_change_by_pointer(api, agent):
    first, second = two_revisions(api, agent)
    response = api.get(url(agent, "revisions", second["id"], "diff"))
    assert response.status == 200, response.body
    data = response.data
    assert (data["revisionId"], data["revision"], data["previousRevisionId"], data["previousRevision"]) == (
        second["id"], 2, first["id"], 1)
    assert {"section": "configuration", "op": "changed", "path": "/configurationGeneration",
            "before": 1, "after": 2} in data["changes"]
    added = [c for c in data["changes"] if c["op"] == "added"]
    assert {c["path"] for c in added} == {"/configuration/agents/defaults/params"}
    assert all("before" not in c for c in added)
    removed = [c for c in data["changes"] if c["op"] == "removed"]
    assert {c["path"] for c in removed} == {"/configuration/agents/defaults/skipBootstrap",
                                            "/configuration/agents/defaults/model"}
    assert all("after" not in c for c in removed)


def test_the_first_revision_has_no_previous(api, agent):
    first = api.post(url(agent, "deploy")).data
    data = api.get(url(agent, "revisions", first["id"], "diff")).data
    assert (data["previousRevisionId"], data["previousRevision"]) == (None, None)
    assert {c["op"] for c in data["changes"]} == {"added"}


def test_diff_needs_read_on_both_revisions(agent):
    older, newer = make_revision(agent, 1), make_revision(agent, 2)
    principal, client = caller("read:namespace", namespace=agent.namespace)
    grant(principal, "read:agent_revision", namespace=agent.namespace, resource_kind="agent_revision",
          resource_id=newer.id)
    before = state()
    response = client.get(url(agent, "revisions", newer.id, "diff"))
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert state() == after_one_denial(before)
    denial = AuditEvent.objects.filter(kind="authorization_denial").latest("occurred_at")
    assert denial.resource_id == older.id
    assert client.get(url(agent, "revisions", UNKNOWN_REV, "diff")).status == 404
    other = AgentFactory(namespace=agent.namespace)
    assert client.get(url(other, "revisions", newer.id, "diff")).status == 404


# --- redeploy ----------------------------------------------------------------------------------------


def test_redeploy_answers_202_with_a_new_revision_from_the_old_snapshot(api, agent, fake_compute):
    first, second = two_revisions(api, agent)
    before = state()
    response = api.post(url(agent, "revisions", first["id"], "redeploy"))
    assert response.status == 202, response.body
    revision = AgentRevision.objects.get(id=response.data["id"])
    assert response.data == revision_wire(revision)
    assert response.data["revision"] == 3
    assert response.data["sourceRevisionId"] == first["id"]
    assert response.data["configuration"] == first["configuration"] != second["configuration"]
    assert response.data["configurationGeneration"] == 1
    assert state() == {**before, "revisions": before["revisions"] + 1, "work": before["work"] + 1,
                       "audit": before["audit"] + 1}
    event = AuditEvent.objects.get(action="openclaw.agents.redeploy")
    assert event.details["sourceRevisionId"] == first["id"]
    assert event.details["revisionId"] == revision.id
    work = ControllerWork.objects.get(pk=revision_reconcile_key(revision.id))
    assert work.state == WorkState.QUEUED
    # The deployment reads like any other, and the revision job activates it.
    for rev in AgentRevision.objects.filter(agent=agent).order_by("number"):
        run_work(revision_reconcile_key(rev.id))
    assert api.get(url(agent, "deployments", revision.id)).data["status"] == "succeeded"
    assert api.get(url(agent)).data["activeRevisionId"] == revision.id
    assert fake_compute.serving(agent.id) == revision.id
    # Its diff against v2 is v1's document coming back.
    diff = api.get(url(agent, "revisions", revision.id, "diff")).data
    assert diff["previousRevision"] == 2
    assert {"section": "configuration", "op": "added", "path": "/configuration/agents/defaults/model",
            "after": first["configuration"]["agents"]["defaults"]["model"]} in diff["changes"]


def test_redeploy_with_an_idempotency_key_replays(api, agent):
    first, _ = two_revisions(api, agent)
    headers = {"Idempotency-Key": "rollback-to-v1"}
    once = api.post(url(agent, "revisions", first["id"], "redeploy"), headers=headers)
    before = state()
    again = api.post(url(agent, "revisions", first["id"], "redeploy"), headers=headers)
    assert (once.status, again.status) == (202, 202)
    assert again.data == once.data
    assert state() == before
    refused = api.post(url(agent, "revisions", first["id"], "redeploy"), headers={"Idempotency-Key": " bad"})
    assert (refused.status, refused.error_code) == (400, "INVALID_REQUEST")


def test_redeploy_takes_no_body(api, agent):
    first = api.post(url(agent, "deploy")).data
    before = state()
    response = api.post(url(agent, "revisions", first["id"], "redeploy"), raw=b"{}")
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert state() == before


def test_redeploy_needs_deploy_on_the_exact_agent(api, agent):
    first = api.post(url(agent, "deploy")).data
    principal, client = caller("read:namespace", "read:agent", "read:agent_revision", "read:configuration",
                               "operate:secret", namespace=agent.namespace)
    other = deployable_agent(agent.namespace)
    grant(principal, "deploy:agent", namespace=agent.namespace, resource_kind="agent", resource_id=other.id)
    before = state()
    response = client.post(url(agent, "revisions", first["id"], "redeploy"))
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert state() == after_one_denial(before)
    denial = AuditEvent.objects.filter(kind="authorization_denial").latest("occurred_at")
    assert (denial.action, denial.resource_id) == ("openclaw.authorization.agent.deploy", agent.id)
    grant(principal, "deploy:agent", namespace=agent.namespace, resource_kind="agent", resource_id=agent.id)
    assert client.post(url(agent, "revisions", first["id"], "redeploy")).status == 202


def test_redeploy_of_an_unknown_revision_is_404(api, agent):
    before = state()
    assert api.post(url(agent, "revisions", UNKNOWN_REV, "redeploy")).status == 404
    assert state() == before


def test_an_undeployable_snapshot_is_409_and_changes_nothing(api, agent):
    first = api.post(url(agent, "deploy")).data
    broken = {**AgentRevision.objects.get(id=first["id"]).snapshot}
    broken["configuration"] = {**broken["configuration"], "gateway": {"auth": {"mode": "none"}}}
    old = AgentRevision.objects.create(namespace_id=agent.namespace_id, agent=agent, number=2,
                                       configuration_id=agent.configuration_id, configuration_generation=1,
                                       snapshot=broken, created_by="prn_test")
    before = state()
    response = api.post(url(agent, "revisions", old.id, "redeploy"))
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    assert "v2 can no longer be deployed" in response.body["error"]["message"]
    assert state() == before


def test_both_routes_are_in_the_openapi_document(db):
    document = Client().get("/api/openapi.json").json()
    base = "/namespaces/{namespace_id}/agents/{agent_id}/revisions/{revision_id}"
    redeploy = document["paths"][base + "/redeploy"]["post"]
    assert "202" in redeploy["responses"]
    assert {"403", "404", "409"} <= set(redeploy["responses"])
    assert "Idempotency-Key" in {p["name"] for p in redeploy.get("parameters", [])}
    assert "rollback" in redeploy["description"]
    diff = document["paths"][base + "/diff"]["get"]
    schema = diff["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    envelope = document["components"]["schemas"][schema]
    data = document["components"]["schemas"][envelope["properties"]["data"]["$ref"].rsplit("/", 1)[-1]]
    assert {"revisionId", "previousRevisionId", "changes"} <= set(data["properties"])
    revision = document["components"]["schemas"]["RevisionOut"]
    assert "sourceRevisionId" in revision["properties"]
