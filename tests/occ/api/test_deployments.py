"""POST …/deploy, GET …/deployments/{rev} and POST …/deployments/{rev}/diagnostics."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from occ.api.wire import revision_wire
from occ.models import AccessBinding, Agent, AgentRevision, AuditEvent, ControllerWork, Namespace, WorkState
from occ.models.work import revision_reconcile_key
from tests.agents_support import after_one_denial, caller, make_revision, state
from tests.factories import grant, marked_document
from tests.fakes.compute import delivered_secrets, deployable_agent, run_work

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
UNKNOWN_AGT = "agt_00000000-0000-4000-8000-000000000000"
UNKNOWN_REV = "rev_00000000-0000-4000-8000-000000000000"
UNKNOWN_NS = "ns_00000000-0000-4000-8000-000000000000"


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace, bound=1)


def agent_url(agent: Agent, *rest: str) -> str:
    return "/".join([f"/namespaces/{agent.namespace_id}/agents/{agent.id}", *rest])


def deploy_url(agent: Agent) -> str:
    return agent_url(agent, "deploy")


def status_url(agent: Agent, revision_id: str) -> str:
    return agent_url(agent, "deployments", revision_id)


# --- deploy -----------------------------------------------------------------------------------------


def test_deploy_answers_202_with_the_revision(api, agent):
    response = api.post(deploy_url(agent))
    assert response.status == 202, response.body
    revision = AgentRevision.objects.get(id=response.data["id"])
    assert response.data == revision_wire(revision)
    assert response.data["revision"] == 1
    assert response.data["compute"] == {"id": "fake", "implementation": "fake"}
    assert "servicePrincipalId" not in response.data
    assert ControllerWork.objects.filter(pk=revision_reconcile_key(revision.id), state="queued").exists()
    second = api.post(deploy_url(agent))
    assert second.data["revision"] == 2


@pytest.mark.parametrize("body", [pytest.param(b"{}", id="empty-object"), pytest.param(b'{"x":1}', id="object")])
def test_deploy_takes_no_body(api, agent, body):
    before = state()
    response = api.post(deploy_url(agent), raw=body)
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert state() == before


def test_deploy_with_an_idempotency_key_replays(api, agent):
    headers = {"Idempotency-Key": "release-2026-11-30"}
    first = api.post(deploy_url(agent), headers=headers)
    before = state()
    again = api.post(deploy_url(agent), headers=headers)
    assert (first.status, again.status) == (202, 202)
    assert again.data == first.data
    assert state() == before


def test_idempotency_key_after_a_configuration_change_is_409(api, agent):
    headers = {"Idempotency-Key": "k-1"}
    api.post(deploy_url(agent), headers=headers)
    patched = api.patch(f"/namespaces/{agent.namespace_id}/configurations/{agent.configuration_id}",
                        {"values": marked_document({"changed": True})})
    assert patched.status == 200
    response = api.post(deploy_url(agent), headers=headers)
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")


@pytest.mark.parametrize("key", [pytest.param("x" * 256, id="too-long"), pytest.param("", id="empty"),
                                 pytest.param("a\x7fb", id="non-printable")])
def test_malformed_idempotency_key_is_400(api, agent, key):
    before = state()
    response = api.post(deploy_url(agent), headers={"Idempotency-Key": key})
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert state() == before


@pytest.mark.parametrize(("path", "code"), [
    pytest.param(f"/namespaces/{UNKNOWN_NS}/agents/{UNKNOWN_AGT}/deploy", "NOT_FOUND", id="unknown-namespace"),
    pytest.param("/namespaces/{ns}/agents/" + UNKNOWN_AGT + "/deploy", "NOT_FOUND", id="unknown-agent"),
    pytest.param("/namespaces/{other}/agents/{agt}/deploy", "NOT_FOUND", id="agent-of-another-namespace"),
])
def test_deploy_not_found(api, agent, path, code):
    from tests.factories import NamespaceFactory

    other = NamespaceFactory()
    response = api.post(path.format(ns=agent.namespace_id, other=other.id, agt=agent.id))
    assert (response.status, response.error_code) == (404, code)


def test_deploy_conflicts(api, agent, ready_namespace, fake_compute):
    Namespace.objects.filter(id=ready_namespace.id).update(status="provisioning")
    assert api.post(deploy_url(agent)).error_code == "NAMESPACE_NOT_READY"
    Namespace.objects.filter(id=ready_namespace.id).update(status="ready")
    no_harness = deployable_agent(ready_namespace, harness_auth_method=None, harness_secret=None)
    response = api.post(deploy_url(no_harness))
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    assert api.delete(agent_url(agent)).status == 202
    response = api.post(deploy_url(agent))
    assert (response.status, response.error_code) == (409, "AGENT_DELETING")


def test_deploy_refused_when_the_agent_principal_lacks_secret_operate(agent):
    """The caller may use every Secret; the Agent's own principal may not use one of them."""
    secrets = delivered_secrets(agent)
    principal, client = caller("deploy:agent", "read:configuration", "operate:secret", namespace=agent.namespace)
    AccessBinding.objects.filter(principal=agent.service_principal, resource_id=secrets[0].id).delete()
    before = state()
    response = client.post(deploy_url(agent))
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert secrets[0].id not in response.body["error"]["message"]
    assert state() == after_one_denial(before)
    denial = AuditEvent.objects.get(kind="authorization_denial")
    assert (denial.actor_id, denial.resource_id) == (principal.id, secrets[0].id)
    assert denial.details["reason"] == "agent_principal_lacks_grant"


@pytest.mark.parametrize("permissions", [
    pytest.param(("read:configuration", "operate:secret", "read:agent"), id="no-deploy"),
    pytest.param(("deploy:agent", "operate:secret"), id="no-configuration-read"),
    pytest.param(("deploy:agent", "read:configuration"), id="no-secret-operate"),
])
def test_deploy_refused_without_each_actor_permission(agent, permissions):
    _, client = caller(*permissions, namespace=agent.namespace)
    before = state()
    response = client.post(deploy_url(agent))
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert state() == after_one_denial(before)


# --- deployment status --------------------------------------------------------------------------------


@pytest.fixture
def deployed(api, agent) -> AgentRevision:
    return AgentRevision.objects.get(id=api.post(deploy_url(agent)).data["id"])


def set_work(revision: AgentRevision, **fields) -> None:
    ControllerWork.objects.filter(pk=revision_reconcile_key(revision.id)).update(**fields)


def test_status_of_a_queued_deployment(api, agent, deployed):
    response = api.get(status_url(agent, deployed.id))
    assert response.status == 200
    data = response.data
    assert data == {
        "deploymentId": deployed.id, "namespaceId": agent.namespace_id, "agentId": agent.id, "status": "queued",
        "error": None, "warnings": [],
        "progress": {"lastAttempt": None, "nextAttemptAt": data["progress"]["nextAttemptAt"]},
    }
    assert TIMESTAMP.match(data["progress"]["nextAttemptAt"])


def test_status_while_running_and_after_a_lease_expired(api, agent, deployed):
    now = timezone.now()
    set_work(deployed, state=WorkState.CLAIMED, claim_token="t", lease_expires_at=now + timedelta(seconds=30),
             last_attempt_code="REVISION_INCOMPLETE", last_attempt_at=now)
    running = api.get(status_url(agent, deployed.id)).data
    assert running["status"] == "running"
    assert running["progress"]["nextAttemptAt"] is None
    assert running["progress"]["lastAttempt"] == {"at": running["progress"]["lastAttempt"]["at"],
                                                  "code": "REVISION_INCOMPLETE",
                                                  "message": "Waiting for the runtime to become ready."}
    set_work(deployed, lease_expires_at=now - timedelta(seconds=1))
    assert api.get(status_url(agent, deployed.id)).data["status"] == "queued"


def test_status_after_activation_through_the_worker(api, agent, deployed):
    run_work(revision_reconcile_key(deployed.id))
    data = api.get(status_url(agent, deployed.id)).data
    assert (data["status"], data["error"], data["warnings"], data["progress"]) == ("succeeded", None, [], None)


@pytest.mark.parametrize(("state_", "reason", "result_data", "status", "error"), [
    pytest.param("succeeded", "REVISION_ALREADY_ACTIVE", {"warnings": [
        {"code": "PLUGIN_AUTH_REQUIRED", "pluginId": "slack"}, {"code": "PLUGIN_AUTH_REQUIRED", "pluginId": "slack"},
        {"code": "SOMETHING_ELSE", "pluginId": "x"}]}, "succeeded", None, id="already-active-with-warnings"),
    pytest.param("succeeded", "REVISION_SUPERSEDED", None, "failed",
                 {"code": "REVISION_SUPERSEDED", "message": "Deployment was superseded by a newer revision."},
                 id="superseded"),
    pytest.param("succeeded", "REVISION_STOPPED", None, "failed",
                 {"code": "REVISION_STOPPED", "message": "Deployment ended because the Agent was stopped."},
                 id="stopped"),
    pytest.param("failed_permanent", "CONVERGENCE_DEADLINE_EXCEEDED",
                 {"timeoutMs": 900000, "secret": "x", "runtimeFailure": {
                     "component": "gateway", "check": "readyz", "checkedAt": "2026-11-30T00:00:00.000Z",
                     "code": "NOT_READY", "extra": "dropped"}},
                 "failed", {"code": "CONVERGENCE_DEADLINE_EXCEEDED",
                            "message": "Deployment convergence deadline exceeded.",
                            "data": {"timeoutMs": 900000, "runtimeFailure": {
                                "component": "gateway", "check": "readyz", "checkedAt": "2026-11-30T00:00:00.000Z",
                                "code": "NOT_READY"}}}, id="deadline-with-allowed-data"),
    pytest.param("failed_permanent", "AUTHORIZATION_DENIED", {"anything": "omitted"}, "failed",
                 {"code": "AUTHORIZATION_DENIED",
                  "message": "Deployment stopped because its initiator or the Agent lost a required permission."},
                 id="denied-data-omitted"),
    pytest.param("failed_permanent", "SOME_DRIVER_CODE", None, "failed",
                 {"code": "SOME_DRIVER_CODE", "message": "Deployment reconciliation failed."}, id="default-message"),
])
def test_terminal_status_is_derived_from_the_work_row(api, agent, deployed, state_, reason, result_data, status,
                                                       error):
    set_work(deployed, state=state_, reason_code=reason, result_data=result_data, completed_at=timezone.now())
    data = api.get(status_url(agent, deployed.id)).data
    assert (data["status"], data["error"], data["progress"]) == (status, error, None)
    expected_warnings = [{"code": "PLUGIN_AUTH_REQUIRED", "pluginId": "slack"}] if status == "succeeded" else []
    assert data["warnings"] == expected_warnings


def test_status_without_the_work_row_is_503_never_fabricated(api, agent):
    revision = make_revision(agent, 1)
    response = api.get(status_url(agent, revision.id))
    assert (response.status, response.error_code) == (503, "DEPENDENCY_UNAVAILABLE")


def test_status_needs_exact_revision_read(agent, deployed):
    principal, client = caller("read:agent", "operate:agent", namespace=agent.namespace)
    before = state()
    assert client.get(status_url(agent, deployed.id)).status == 403
    assert state() == after_one_denial(before)
    grant(principal, "read:agent_revision", namespace=agent.namespace, resource_kind="agent_revision",
          resource_id=deployed.id)
    assert client.get(status_url(agent, deployed.id)).status == 200


def test_status_not_found(api, agent, deployed, ready_namespace):
    other = deployable_agent(ready_namespace)
    assert api.get(status_url(agent, UNKNOWN_REV)).status == 404
    assert api.get(status_url(other, deployed.id)).status == 404, "owner mismatch"
    assert api.get(f"/namespaces/{UNKNOWN_NS}/agents/{agent.id}/deployments/{deployed.id}").status == 404


def test_status_reads_change_nothing(api, agent, deployed):
    before = state()
    api.get(status_url(agent, deployed.id))
    assert state() == before


# --- diagnostics ---------------------------------------------------------------------------------------


def diagnostics_url(agent: Agent, revision_id: str) -> str:
    return status_url(agent, revision_id) + "/diagnostics"


def test_diagnostics_reports_checks_and_changes_nothing(api, agent, deployed, fake_compute):
    run_work(revision_reconcile_key(deployed.id))
    world = fake_compute.world()
    before = state()
    response = api.post(diagnostics_url(agent, deployed.id))
    assert response.status == 200, response.body
    data = response.data
    assert data["revisionId"] == deployed.id
    assert TIMESTAMP.match(data["observedAt"])
    assert [(c["component"], c["check"], c["state"]) for c in data["checks"]] == [
        ("gateway", "process", "succeeded"), ("gateway", "revision", "succeeded")]
    assert all(TIMESTAMP.match(c["checkedAt"]) for c in data["checks"])
    assert state() == before
    assert fake_compute.world() == world


def test_diagnostics_of_a_stopped_runtime_reports_failures(api, agent, deployed):
    data = api.post(diagnostics_url(agent, deployed.id)).data
    assert [(c["state"], c["code"]) for c in data["checks"]] == [
        ("failed", "GATEWAY_NOT_RUNNING"), ("failed", "REVISION_NOT_SERVING")]


def test_diagnostics_takes_no_body(api, agent, deployed):
    response = api.post(diagnostics_url(agent, deployed.id), raw=b"{}")
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")


@pytest.mark.parametrize("missing", ["operate:agent", "read:agent", "read:agent_revision"])
def test_diagnostics_needs_three_permissions(agent, deployed, fake_compute, missing):
    permissions = {"operate:agent", "read:agent", "read:agent_revision"} - {missing}
    _, client = caller(*sorted(permissions), namespace=agent.namespace)
    fake_compute.clear_calls()
    before = state()
    assert client.post(diagnostics_url(agent, deployed.id)).status == 403
    assert state() == after_one_denial(before)
    assert fake_compute.calls == [], "nothing asked of the driver before authorization"


def test_diagnostics_when_the_driver_cannot_answer_is_503(api, agent, deployed, fake_compute):
    fake_compute.script("diagnose", deployed.id, ["error:AGENT_GATEWAY_UNAVAILABLE"])
    response = api.post(diagnostics_url(agent, deployed.id))
    assert (response.status, response.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    assert "AGENT_GATEWAY_UNAVAILABLE" not in response.body["error"]["message"]


def test_diagnostics_not_found(api, agent):
    assert api.post(diagnostics_url(agent, UNKNOWN_REV)).status == 404
