"""A revision's activation after publication: the active pointer and its audit event commit
together or not at all; a finalization that gives up is shown truthfully and repaired by a
retry (API and admin), authorized and audited."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from occ.drivers.compute.fake import RAISE
from occ.errors import DependencyUnavailable
from occ.models import Agent, AgentRevision, AuditEvent, ControllerWork, WorkState
from occ.services.finalization import RETRY_ACTION
from tests.conftest import ApiClient
from tests.factories import grant, key_for, service_principal
from tests.fakes.compute import run_work
from tests.provisioning.jobs.conftest import code_of, deploy, events, key_of, work

ACTIVATE = "openclaw.agents.revision.activate"
FINALIZE = "openclaw.agents.revision.finalize"


def due_now(key: str) -> None:
    row = work(key)
    ControllerWork.objects.filter(pk=key).update(available_at=row.created_at)


def give_up(revision: AgentRevision, fake_compute) -> None:
    """Every attempt crashes between publication and completion (in activate_revision)
    until the attempts run out."""
    fake_compute.script("activate_revision", revision.id, [RAISE] * 5)
    for _ in range(5):
        run_work(key_of(revision))
        due_now(key_of(revision))
    row = work(key_of(revision))
    assert (row.state, row.reason_code) == (WorkState.FAILED_PERMANENT, "REVISION_FINALIZATION_INCOMPLETE")


def path_of(revision: AgentRevision) -> str:
    return f"/namespaces/{revision.namespace_id}/agents/{revision.agent_id}/deployments/{revision.id}"


def test_a_crash_after_publication_leaves_the_pointer_with_its_audit_event(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)
    fake_compute.script("activate_revision", revision.id, [RAISE])

    assert code_of(run_work(key_of(revision))) == ("Retry", "REVISION_FINALIZATION_INCOMPLETE")

    assert Agent.objects.get(id=agent.id).active_revision_id == revision.id
    [activated] = events(ACTIVATE)
    assert (activated.actor_id, activated.details["revisionId"]) == (admin_actor.id, revision.id)
    assert events(FINALIZE) == []


def test_the_pointer_does_not_move_when_its_audit_event_cannot_be_written(admin_actor, agent, fake_compute,
                                                                          monkeypatch):
    revision = deploy(admin_actor, agent)

    def audit_unavailable(*args, **kwargs):
        raise DependencyUnavailable("The audit log is unavailable; nothing was changed.")

    monkeypatch.setattr("provisioning.jobs.revision.lifecycle_audit", audit_unavailable)
    run_work(key_of(revision))

    assert Agent.objects.get(id=agent.id).active_revision_id is None, "rolled back with its audit event"
    assert events(ACTIVATE) == []
    assert fake_compute.calls_to("activate_revision") == [], "nothing activated without a published pointer"
    assert work(key_of(revision)).state == WorkState.QUEUED


def test_a_finalization_that_gave_up_is_shown_truthfully(admin_actor, admin_key, agent, fake_compute):
    first = deploy(admin_actor, agent)
    run_work(key_of(first))
    second = deploy(admin_actor, agent)
    give_up(second, fake_compute)
    api = ApiClient(admin_key)

    deployment = api.get(path_of(second)).data
    assert deployment["status"] == "failed"
    assert deployment["error"]["code"] == "REVISION_FINALIZATION_INCOMPLETE"
    assert "active one" in deployment["error"]["message"]
    shown = api.get(f"/namespaces/{agent.namespace_id}/agents/{agent.id}").data
    assert shown["activeRevisionId"] == second.id, "the pointer that moved is shown, not hidden"
    assert shown["runtime"]["state"] == "failed"
    assert shown["runtime"]["reason"]["code"] == "REVISION_FINALIZATION_INCOMPLETE"
    assert [e.details["revisionId"] for e in events(ACTIVATE)] == [first.id, second.id]

    page = Client()
    page.force_login(get_user_model().objects.get(username="admin"))
    console = page.get(f"/console/namespaces/{agent.namespace_id}/agents/{agent.id}").content.decode()
    assert "retiring the previous revision kept failing" in console


def test_retrying_the_finalization_completes_it_once(admin_actor, admin_key, agent, fake_compute):
    first = deploy(admin_actor, agent)
    run_work(key_of(first))
    second = deploy(admin_actor, agent)
    give_up(second, fake_compute)
    api = ApiClient(admin_key)

    retried = api.post(path_of(second) + "/retry-finalization")

    assert retried.status == 202, retried.body
    assert retried.data["status"] == "queued"
    [audit] = events(RETRY_ACTION)
    assert audit.actor_id == admin_actor.id
    assert audit.details["previousReasonCode"] == "REVISION_FINALIZATION_INCOMPLETE"
    assert code_of(run_work(key_of(second))) == ("Complete", "REVISION_ALREADY_ACTIVE")
    assert api.get(path_of(second)).data["status"] == "succeeded"
    assert fake_compute.serving(agent.id) == second.id
    assert first.id not in fake_compute.gateway(agent.id)["staged"], "the predecessor is retired"
    assert [e.details["revisionId"] for e in events(ACTIVATE)] == [first.id, second.id], "no second activation"
    assert [e.details["reasonCode"] for e in events(FINALIZE) if e.details["revisionId"] == second.id] == [
        "REVISION_ALREADY_ACTIVE"]
    again = api.post(path_of(second) + "/retry-finalization")
    assert (again.status, again.error_code) == (409, "RESOURCE_CONFLICT"), "a finished deployment is not retried"


def test_only_the_active_revisions_failed_work_is_retried(admin_actor, admin_key, agent, fake_compute):
    first = deploy(admin_actor, agent)
    fake_compute.script("prepare_revision", first.id, [RAISE] * 5)
    for _ in range(5):
        run_work(key_of(first))
        due_now(key_of(first))
    assert work(key_of(first)).state == WorkState.FAILED_PERMANENT
    refused = ApiClient(admin_key).post(path_of(first) + "/retry-finalization")
    assert (refused.status, refused.error_code) == (409, "RESOURCE_CONFLICT"), "never published: deploy again"
    assert events(RETRY_ACTION) == []


def test_a_retry_needs_deploy_on_the_agent_and_is_audited_when_refused(admin_actor, agent, fake_compute):
    revision = deploy(admin_actor, agent)
    give_up(revision, fake_compute)
    reader = service_principal("finalization-reader")
    grant(reader, "read:agent", "read:agent_revision", namespace=agent.namespace)
    before = AuditEvent.objects.count()

    refused = ApiClient(key_for(reader)).post(path_of(revision) + "/retry-finalization")

    assert (refused.status, refused.error_code) == (403, "FORBIDDEN")
    assert AuditEvent.objects.count() == before + 1, "one denial event"
    assert work(key_of(revision)).state == WorkState.FAILED_PERMANENT


@pytest.mark.parametrize("outcome", ["requeued", "refused"])
def test_the_admin_action_retries_with_the_operator_as_actor(bootstrap, admin_actor, agent, fake_compute, outcome):
    revision = deploy(admin_actor, agent)
    if outcome == "requeued":
        give_up(revision, fake_compute)
    else:
        run_work(key_of(revision))
    operator = get_user_model().objects.get(username="admin")
    client = Client()
    client.force_login(operator)

    response = client.post("/admin/occ/agentrevision/", {"action": "retry_finalization",
                                                         "_selected_action": [revision.id]}, follow=True)

    assert response.status_code == 200
    body = response.content.decode()
    if outcome == "requeued":
        assert "finalization requeued" in body
        assert work(key_of(revision)).state == WorkState.QUEUED
        [audit] = events(RETRY_ACTION)
        assert audit.details["__occAuditMetadata"]["source"] == "admin"
    else:
        assert "has not failed" in body
        assert events(RETRY_ACTION) == []
