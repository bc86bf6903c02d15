"""Provisioning admission, status and retry through the API, with no worker running.

Admission writes exactly one ``controller_work`` row and one ``agent_provisioning_work`` row
(plan without values, fingerprint, pre-allocated ids) and nothing else; the worker is not
involved here, so every later state is set on the rows directly, as the job would.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.core import serializers
from django.db import connections
from django.test import Client
from django.utils import timezone

from occ import nudges as occ_nudges
from occ.commands.secrets import SecretCreate
from occ.drivers.channels import CHANNEL_DRIVERS, ChannelDriver, SecretReader
from occ.errors import InvalidRequest
from occ.iam.actor import Actor, Source
from occ.ids import IdPrefix, is_valid_id
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    AuditEvent,
    AuditKind,
    Configuration,
    ControllerWork,
    Namespace,
    NamespaceStatus,
    Principal,
    ProvisioningStatus,
    Restriction,
    Secret,
    WorkEffect,
    WorkState,
)
from occ.models.work import provisioning_key
from occ.services import provisioning as provisioning_service
from occ.services.provisioning import PROVISIONING_EXECUTION_MODES
from occ.services.secrets import secret_create, secret_delete
from tests.conftest import ApiClient
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, SecretFactory, grant, key_for
from tests.factories import service_principal as make_service_principal

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
UNKNOWN_SEC = "sec_00000000-0000-4000-8000-000000000000"
CANARY = f"canary-{uuid.uuid4()}"
VALUES = {
    "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "fake/echo-model"}}},
    "models": {"providers": {"fake": {"baseUrl": "http://127.0.0.1:18555/v1", "api": "openai-completions",
                                      "models": [{"id": "echo-model", "name": "Echo"}]}}},
    "tools": {"profile": "coding"},
}
BASE_KEYS = {"workId", "status", "phase", "attemptCount", "updatedAt", "url"}
# Admission also requires, Namespace-wide, what the worker will need on the Configuration and
# Agent it creates (occ.selectors.permissions.PROVISION_WORKER_AUTHORITY).
PROVISION_PERMISSIONS = ("create:agent", "create:configuration", "operate:secret", "read:configuration",
                         "read:agent", "update:agent", "operate:agent", "deploy:agent")


def ref(namespace_id: str, secret_id: str) -> dict[str, str]:
    return {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}


@dataclass
class World:
    ns: Namespace
    admin: Actor
    model_key: Secret  # harnessAuth
    team_token: Secret  # bound to TEAM_TOKEN
    nudges: list[str]

    @property
    def url(self) -> str:
        return f"/namespaces/{self.ns.id}/agents/provision"

    def body(self, **changes: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "requestId": "req_0f6b2a4e-8d1c-4f5e-9a7b-3c2d1e0f9a8b",
            "name": "provisioned",
            "configuration": {
                "kind": "agent",
                "values": copy.deepcopy(VALUES),
                "secretBindings": {"TEAM_TOKEN": {"source": ref(self.ns.id, self.team_token.id),
                                                  "delivery": {"type": "env"}}},
            },
            "harnessAuth": {"method": "api_key", "source": ref(self.ns.id, self.model_key.id)},
        }
        body.update(changes)
        return body

    def work_url(self, work_id: str) -> str:
        return f"{self.url}/{work_id}"


@pytest.fixture
def nudges(monkeypatch) -> list[str]:
    """Work keys nudged after commit (instead of publishing to a broker)."""
    sent: list[str] = []

    def capture(key: str, *, countdown: float | None = None) -> bool:
        sent.append(key)
        return True

    monkeypatch.setattr(occ_nudges, "nudge", capture)
    return sent


@pytest.fixture
def w(ready_namespace, admin_actor, nudges) -> World:
    model_key = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                              command=SecretCreate(name="model-key", value=CANARY))
    team_token = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                               command=SecretCreate(name="team-token", value=f"{CANARY}-team"))
    return World(ns=ready_namespace, admin=admin_actor, model_key=model_key, team_token=team_token, nudges=nudges)


def counts() -> dict[str, int]:
    return {
        "work": ControllerWork.objects.count(),
        "provisioning": AgentProvisioningWork.objects.count(),
        "agents": Agent.objects.count(),
        "configurations": Configuration.objects.count(),
        "principals": Principal.objects.count(),
        "audit": AuditEvent.objects.count(),
        "denials": AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL).count(),
    }


def with_denial(before: dict[str, int]) -> dict[str, int]:
    return {**before, "audit": before["audit"] + 1, "denials": before["denials"] + 1}


def admit(api: ApiClient, w: World, **changes: Any) -> dict[str, Any]:
    response = api.post(w.url, w.body(**changes))
    assert response.status == 202, response.body
    return response.data["provisioning"]


def row_of(work_id: str) -> AgentProvisioningWork:
    return AgentProvisioningWork.objects.select_related("work").get(work_id=work_id)


def set_state(work_id: str, *, status: str | None = None, phase: str | None = None, work_state: str | None = None,
              reason: str | None = None, progress: dict[str, Any] | None = None, revision_id: str | None = None,
              attempts: int | None = None) -> None:
    """Do what the worker job would: move the provisioning row and its work row. The status
    is derived from them: ``running`` claims the work row, ``cancelled`` cancels."""
    row = row_of(work_id)
    if status == ProvisioningStatus.CANCELLED:
        row.cancelled_at = timezone.now()
    if status == ProvisioningStatus.RUNNING and work_state is None:
        work_state = WorkState.CLAIMED
    if phase is not None:
        row.completed_phase = phase
    if progress is not None:
        row.progress = progress
    if revision_id is not None:
        row.revision_id = revision_id
    row.save()
    work = row.work
    now = timezone.now()
    if work_state is not None:
        work.state = work_state
        work.completed_at = now if work_state in (WorkState.SUCCEEDED, WorkState.FAILED_PERMANENT) else None
        claimed = work_state == WorkState.CLAIMED
        work.claim_token = "claim-test" if claimed else None
        work.lease_expires_at = now + timedelta(seconds=60) if claimed else None
    if reason is not None:
        work.reason_code = work.last_attempt_code = reason
    if attempts is not None:
        work.attempt_count = attempts
    work.updated_at = now
    work.save()


def fail(work_id: str, code: str = "DEPENDENCY_UNAVAILABLE", **extra: Any) -> None:
    progress = {"error": {"disposition": "permanent", "code": code, "message": "The compute backend failed."},
                **extra}
    set_state(work_id, status=ProvisioningStatus.FAILED, work_state=WorkState.FAILED_PERMANENT, reason=code,
              progress=progress, attempts=3)


def record_effect(work_id: str, kind: str, state: str, target_id: str) -> WorkEffect:
    now = timezone.now()
    return WorkEffect.objects.create(work_id=work_id, kind=kind, owner=work_id, target_id=target_id, state=state,
                                     begun_at=now, receipted_at=now if state == "receipted" else None)


def effects_of(work_id: str) -> list[tuple[str, str, str, bool]]:
    return list(WorkEffect.objects.filter(work_id=work_id).order_by("id").values_list(
        "kind", "target_id", "state", "resend"))


def make_agent(w: World, row: AgentProvisioningWork) -> Agent:
    """The Agent and Configuration the worker's configuration phase creates with the pre-allocated ids."""
    configuration = ConfigurationFactory(id=row.configuration_id, namespace=w.ns)
    return AgentFactory(id=row.agent_id, namespace=w.ns, name=row.plan["name"], configuration=configuration)


# --- admission ------------------------------------------------------------------------------


def test_admission_queues_one_job_and_creates_nothing_else(api, w, django_capture_on_commit_callbacks):
    before = counts()
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(w.url, w.body())
    assert response.status == 202, response.body
    data = response.data["provisioning"]
    assert set(data) == BASE_KEYS
    row = row_of(data["workId"])
    assert data == {
        "workId": provisioning_key(row.agent_id), "status": "queued", "phase": "admitted", "attemptCount": 0,
        "updatedAt": data["updatedAt"], "url": f"/namespaces/{w.ns.id}/agents/provision/{data['workId']}",
    }
    assert TIMESTAMP.fullmatch(data["updatedAt"])
    assert counts() == {**before, "work": before["work"] + 1, "provisioning": before["provisioning"] + 1,
                        "audit": before["audit"] + 1}

    work = row.work
    assert (work.job, work.agent_id, work.agent_target, work.state, work.attempt_count, work.actor_id) == (
        "provision", row.agent_id, "provisioned", "queued", 0, w.admin.id)
    assert work.namespace_target is None
    assert work.revision_id is None
    assert is_valid_id(row.agent_id, IdPrefix.AGENT)
    assert is_valid_id(row.configuration_id, IdPrefix.CONFIGURATION)
    assert not Agent.objects.filter(id=row.agent_id).exists()
    assert not Configuration.objects.filter(id=row.configuration_id).exists()
    assert (row.status, row.completed_phase, row.revision_id, row.progress, row.actor_id, row.request_id) == (
        "queued", "admitted", None, {}, w.admin.id, w.body()["requestId"])
    assert row.plan == {
        "name": "provisioned",
        "configuration": {"kind": "agent", "values": VALUES, "secretBindings": {
            "TEAM_TOKEN": {"source": ref(w.ns.id, w.team_token.id), "delivery": {"type": "env"}}}},
        "executionMode": "embedded",
        "harnessAuth": {"method": "api_key", "source": ref(w.ns.id, w.model_key.id)},
        "backendId": None, "plugins": {}, "pluginApprovers": [], "repositoryBindings": [],
        "initialWorkspaceFiles": {},
        "secretIds": sorted([w.model_key.id, w.team_token.id]),
    }
    canonical = json.dumps(row.plan, sort_keys=True, separators=(",", ":"))
    assert row.request_fingerprint == hashlib.sha256(canonical.encode()).hexdigest()
    assert w.nudges == [data["workId"]]

    event = AuditEvent.objects.get(action="openclaw.agents.provision")
    assert (event.action, event.resource_kind, event.resource_id, event.namespace_id, event.actor_id) == (
        "openclaw.agents.provision", "agent", row.agent_id, w.ns.id, w.admin.id)
    assert event.details["workId"] == data["workId"]
    assert event.details["secretIds"] == row.plan["secretIds"]
    assert event.details["secretBindings"] == {"TEAM_TOKEN": w.team_token.id}
    assert "values" not in json.dumps(event.details)


def test_options_are_normalized_into_the_plan(api, w):
    data = admit(api, w, executionMode="embedded", backendId=None, plugins={}, repositoryBindings=[],
                 pluginApprovers=[{"channel": "slack", "id": "U123"}],
                 initialWorkspaceFiles={"SOUL.md": "Be kind.", "AGENTS.md": "Rules."})
    plan = row_of(data["workId"]).plan
    assert plan["pluginApprovers"] == [{"channel": "slack", "id": "U123"}]
    assert plan["initialWorkspaceFiles"] == {"SOUL.md": "Be kind.", "AGENTS.md": "Rules."}
    assert (plan["executionMode"], plan["plugins"], plan["repositoryBindings"]) == ("embedded", {}, [])


def test_replay_returns_the_same_work(api, w, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first = admit(api, w)
    before = counts()
    # The same plan, spelled differently: defaults explicit, keys in another order.
    body = w.body(executionMode="embedded", plugins={}, pluginApprovers=[], repositoryBindings=[])
    body["configuration"] = dict(reversed(list(body["configuration"].items())))
    with django_capture_on_commit_callbacks(execute=True):
        again = api.post(w.url, dict(reversed(list(body.items()))))
    assert again.status == 202, again.body
    assert again.data["provisioning"]["workId"] == first["workId"]
    assert counts() == before
    assert len(w.nudges) == 1


def test_replay_after_the_work_moved_on_reports_its_current_state(api, w):
    first = admit(api, w)
    set_state(first["workId"], status=ProvisioningStatus.RUNNING, attempts=1)
    again = admit(api, w)
    assert (again["workId"], again["status"], again["attemptCount"]) == (first["workId"], "running", 1)


@pytest.mark.parametrize("change", [
    pytest.param({"name": "renamed"}, id="name"),
    pytest.param({"initialWorkspaceFiles": {"SOUL.md": "Different."}}, id="workspace-files"),
    pytest.param({"configuration": {"kind": "agent", "values": {"tools": {"profile": "full"}}}}, id="values"),
])
def test_same_request_id_with_another_plan_conflicts(api, w, change):
    admit(api, w)
    before = counts()
    response = api.post(w.url, w.body(**change))
    assert response.status == 409, response.body
    assert response.error_code == "RESOURCE_CONFLICT"
    assert counts() == before


def test_request_ids_are_per_actor(api, w):
    first = admit(api, w)
    other, other_api = _caller(w, *PROVISION_PERMISSIONS)
    response = other_api.post(w.url, w.body(name="someone-elses"))
    assert response.status == 202, response.body
    second = response.data["provisioning"]["workId"]
    assert second != first["workId"]
    assert row_of(second).actor_id == other.id


def test_a_taken_name_conflicts(api, w):
    admit(api, w)
    response = api.post(w.url, w.body(requestId="req_another-request-1"))
    assert response.status == 409
    assert "being provisioned" in response.body["error"]["message"]
    AgentFactory(namespace=w.ns, name="existing-agent")
    response = api.post(w.url, w.body(requestId="req_another-request-2", name="existing-agent"))
    assert response.status == 409
    assert "already exists" in response.body["error"]["message"]


def _binding(namespace_id: str, secret_id: str, **source: Any) -> dict[str, Any]:
    return {"source": {**ref(namespace_id, secret_id), **source}}


def _with_values(values: Mapping[str, Any]) -> Any:
    return lambda w: {"configuration": {"kind": "agent", "values": values}}


def _with_binding(name: str, **source: Any) -> Any:
    return lambda w: {"configuration": {"kind": "agent", "values": {},
                                        "secretBindings": {name: _binding(w.ns.id, w.team_token.id, **source)}}}


def _with_harness(**source: Any) -> Any:
    return lambda w: {"harnessAuth": {"method": "api_key", "source": {**ref(w.ns.id, w.model_key.id), **source}}}


BAD_REQUESTS = [
    pytest.param(lambda w: {"secrets": [{"name": "x", "value": CANARY}]}, "/secrets", id="secrets-array"),
    pytest.param(lambda w: {"configurationId": "cfg_00000000-0000-4000-8000-000000000000"}, "/configurationId",
                 id="existing-configuration-id"),
    pytest.param(lambda w: {"agentId": "agt_00000000-0000-4000-8000-000000000000"}, "/agentId",
                 id="existing-agent-id"),
    pytest.param(lambda w: {"workspaceDefaultsId": "x"}, "/workspaceDefaultsId", id="unknown-field"),
    pytest.param(lambda w: {"configuration": {"kind": "agent", "values": {}, "id": "cfg_x"}}, "/configuration/id",
                 id="configuration-id"),
    pytest.param(_with_binding("TEAM_TOKEN", value=CANARY), "/configuration/secretBindings/TEAM_TOKEN/source/value",
                 id="inline-value-in-binding"),
    pytest.param(_with_harness(value=CANARY), "/harnessAuth/source/value", id="inline-value-in-harness-auth"),
    pytest.param(_with_binding("TEAM_TOKEN", kind="provisioning-secret"),
                 "/configuration/secretBindings/TEAM_TOKEN/source/kind", id="request-local-binding"),
    pytest.param(_with_harness(kind="provisioning-secret"), "/harnessAuth/source/kind", id="request-local-harness"),
    pytest.param(_with_binding("TEAM_TOKEN", namespaceId="ns_00000000-0000-4000-8000-000000000000"),
                 "/configuration/secretBindings/TEAM_TOKEN/source/namespaceId", id="cross-namespace-binding"),
    pytest.param(_with_harness(namespaceId="ns_00000000-0000-4000-8000-000000000000"),
                 "/harnessAuth/source/namespaceId", id="cross-namespace-harness"),
    pytest.param(lambda w: {"harnessAuth": {"method": "credential_source", "source": ref(w.ns.id, w.model_key.id)}},
                 "/harnessAuth/method", id="credential-source-harness"),
    pytest.param(lambda w: {"harnessAuth": None}, "/harnessAuth", id="no-harness-auth"),
    pytest.param(_with_binding("OPENCLAW_GATEWAY_TOKEN"), "/configuration/secretBindings/OPENCLAW_GATEWAY_TOKEN",
                 id="reserved-env-openclaw"),
    pytest.param(_with_binding("PATH"), "/configuration/secretBindings/PATH", id="reserved-env-path"),
    pytest.param(_with_binding("lower"), "/configuration/secretBindings/lower", id="invalid-env-name"),
    pytest.param(_with_values({"gateway": {"auth": {"mode": "token", "token": "${T}"}}}),
                 "/configuration/values/gateway/auth", id="gateway-auth"),
    pytest.param(_with_values({"gateway": {"trustedProxies": ["0.0.0.0/0"]}}),
                 "/configuration/values/gateway/trustedProxies", id="gateway-trusted-proxies"),
    pytest.param(_with_values({"gateway": {"allowRealIpFallback": True}}),
                 "/configuration/values/gateway/allowRealIpFallback", id="gateway-real-ip"),
    pytest.param(_with_values({"gateway": {"remote": {"token": "${T}"}}}),
                 "/configuration/values/gateway/remote", id="gateway-remote"),
    pytest.param(_with_values({"models": {"providers": {"x": {"apiKey": CANARY}}}}),
                 "/configuration/values/models/providers/x/apiKey", id="inline-api-key"),
    pytest.param(_with_values({"channels": {"discord": {"token": CANARY}}}),
                 "/configuration/values/channels/discord/token", id="inline-channel-token"),
    pytest.param(_with_values({"models": {"providers": {"x": {"baseUrl": "ftp://x"}}}}),
                 "/configuration/values/models/providers/x/baseUrl", id="config-rules-apply"),
    pytest.param(lambda w: {"configuration": {"kind": "preset", "values": {}}}, "/configuration/kind",
                 id="configuration-kind"),
    pytest.param(lambda w: {"requestId": "0f6b2a4e-8d1c-4f5e-9a7b-3c2d1e0f9a8b"}, "/requestId",
                 id="request-id-prefix"),
    pytest.param(lambda w: {"requestId": "req_short"}, "/requestId", id="request-id-short"),
    pytest.param(lambda w: {"requestId": "req_" + "a" * 61}, "/requestId", id="request-id-long"),
    pytest.param(lambda w: {"name": " padded"}, "/name", id="name"),
    pytest.param(lambda w: {"executionMode": "dedicated"}, "/executionMode", id="dedicated"),
    pytest.param(lambda w: {"executionMode": None}, "/executionMode", id="null-execution-mode"),
    pytest.param(lambda w: {"initialWorkspaceFiles": {"../etc/passwd": "x"}}, "/initialWorkspaceFiles/..~1etc~1passwd",
                 id="workspace-file-name"),
    pytest.param(lambda w: {"pluginApprovers": [{"channel": "slack", "id": "has space"}]},
                 "/pluginApprovers/0/id", id="plugin-approver"),
]


@pytest.mark.parametrize(("change", "path"), BAD_REQUESTS)
def test_invalid_requests_are_refused_and_change_nothing(api, w, change, path):
    before = counts()
    response = api.post(w.url, w.body(**change(w)))
    assert response.status == 400, response.body
    assert response.error_code == "INVALID_REQUEST"
    assert path in [d["path"] for d in response.body["error"].get("details", [])], response.body
    assert CANARY not in json.dumps(response.body)
    assert counts() == before
    assert not w.nudges


def test_missing_required_fields(api, w):
    for field in ("requestId", "name", "configuration"):
        body = w.body()
        del body[field]
        response = api.post(w.url, body)
        assert response.status == 400
        assert {"code": "REQUIRED", "path": f"/{field}"} in response.body["error"]["details"]


def test_repository_bindings_without_a_driver_answer_503(api, w, settings):
    settings.OCC_REPOSITORY_DRIVER = ""
    before = counts()
    response = api.post(w.url, w.body(repositoryBindings=[{"repositoryRef": "acme/widgets", "profile": "git-read"}]))
    assert (response.status, response.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    assert counts() == before


def test_repository_bindings_are_checked_at_admission_and_planned(api, w, settings):
    from tests.fakes.fake_github import serving

    fake = serving(settings)
    github = next(fake)
    try:
        before = counts()
        refused = api.post(w.url, w.body(repositoryBindings=[{"repositoryRef": "acme/gone", "profile": "git-read"}]))
        assert (refused.status, refused.error_code) == (400, "INVALID_REQUEST")
        assert refused.body["error"]["details"] == [{"code": "INVALID_VALUE",
                                                     "path": "/repositoryBindings/0/repositoryRef"}]
        assert counts() == before
        bindings = [{"repositoryRef": "acme/widgets", "profile": "git-write"}]
        admitted = api.post(w.url, w.body(repositoryBindings=bindings))
        assert admitted.status == 202, admitted.body
        row = row_of(admitted.data["provisioning"]["workId"])
        assert row.plan["repositoryBindings"] == bindings
        assert github.requests
    finally:
        fake.close()


@pytest.mark.parametrize(("plugins", "path"), [
    pytest.param({"openclaw:voice-call": {"enabled": True}}, "/plugins/openclaw:voice-call", id="unknown"),
    pytest.param({"occ-plugin:workboard": {"enabled": True, "toolDefaults": {"approval": "all_actions"}}},
                 "/plugins/occ-plugin:workboard/toolDefaults/approval", id="unsupported-mode"),
    pytest.param({"occ-plugin:workboard": {}}, "/plugins/occ-plugin:workboard/enabled", id="shape"),
])
def test_plugin_selections_are_validated_at_admission(api, w, plugins, path):
    before = counts()
    response = api.post(w.url, w.body(plugins=plugins))
    assert response.status == 400, response.body
    assert response.error_code == "INVALID_REQUEST"
    assert path in [d["path"] for d in response.body["error"]["details"]]
    assert counts() == before


def test_plugin_selections_without_a_driver_answer_501(api, w, settings):
    settings.OCC_PLUGIN_DRIVER = ""
    before = counts()
    response = api.post(w.url, w.body(plugins={"occ-plugin:workboard": {"enabled": True}}))
    assert (response.status, response.error_code) == (501, "NOT_IMPLEMENTED")
    assert counts() == before


def test_secrets_the_namespace_does_not_hold_are_404(api, w, admin_actor):
    other = NamespaceFactory()
    foreign = SecretFactory(namespace=other)
    agent = AgentFactory(namespace=w.ns)
    runtime = SecretFactory(namespace=w.ns, owner_agent=agent, purpose="gateway-password")
    before = counts()
    for secret_id, path in ((UNKNOWN_SEC, "/configuration/secretBindings/TEAM_TOKEN/source/id"),
                            (foreign.id, "/configuration/secretBindings/TEAM_TOKEN/source/id"),
                            (runtime.id, "/configuration/secretBindings/TEAM_TOKEN/source/id")):
        body = w.body()
        body["configuration"]["secretBindings"]["TEAM_TOKEN"]["source"]["id"] = secret_id
        response = api.post(w.url, body)
        assert response.status == 404, response.body
        assert response.body["error"]["details"] == [{"code": "INVALID_VALUE", "path": path}]
    response = api.post(w.url, w.body(harnessAuth={"method": "api_key", "source": ref(w.ns.id, UNKNOWN_SEC)}))
    assert response.status == 404
    assert response.body["error"]["details"] == [{"code": "INVALID_VALUE", "path": "/harnessAuth/source/id"}]
    assert api.post(w.url, w.body(backendId="backend-1")).status == 404
    missing = "ns_00000000-0000-4000-8000-000000000000"
    assert api.post(f"/namespaces/{missing}/agents/provision", {
        **w.body(configuration={"kind": "agent", "values": {}}),
        "harnessAuth": {"method": "api_key", "source": ref(missing, w.model_key.id)}}).status == 404
    assert counts() == before


def _caller(w: World, *permissions: str, secret_ids: tuple[str, ...] | None = None) -> tuple[Principal, ApiClient]:
    """A principal with ``permissions`` in the Namespace (``operate:secret`` only on ``secret_ids``
    when given) and an API client using its key."""
    principal = make_service_principal(f"caller-{uuid.uuid4().hex[:8]}")
    namespace_wide = [p for p in permissions if not (p == "operate:secret" and secret_ids is not None)]
    if namespace_wide:
        grant(principal, *namespace_wide, namespace=w.ns)
    for secret_id in secret_ids or ():
        grant(principal, "operate:secret", namespace=w.ns, resource_kind="secret", resource_id=secret_id)
    return principal, ApiClient(key_for(principal))


WORKER_NEEDS = PROVISION_PERMISSIONS[3:]


@pytest.mark.parametrize(("permissions", "operable", "denied"), [
    pytest.param(("create:configuration", "operate:secret", *WORKER_NEEDS), None, "create:agent",
                 id="no-agent-create"),
    pytest.param(("create:agent", "operate:secret", *WORKER_NEEDS), None, "create:configuration",
                 id="no-configuration-create"),
    pytest.param(("create:agent", "create:configuration", "operate:secret", *WORKER_NEEDS), ("model",),
                 "operate:secret", id="one-secret-not-operable"),
    *[pytest.param(tuple(p for p in PROVISION_PERMISSIONS if p != needed), None, needed,
                   id=f"worker-needs-{needed}") for needed in WORKER_NEEDS],
])
def test_authorization_is_required_for_every_part(w, permissions, operable, denied):
    secret_ids = None if operable is None else (w.model_key.id,)
    _principal, client = _caller(w, *permissions, secret_ids=secret_ids)
    before = counts()
    response = client.post(w.url, w.body())
    assert response.status == 403, response.body
    assert counts() == with_denial(before)
    event = AuditEvent.objects.get(kind=AuditKind.AUTHORIZATION_DENIAL)
    assert event.details["permission"] == denied
    if denied == "operate:secret":
        assert event.resource_id == w.team_token.id


def test_exact_secret_grants_are_enough(w):
    _principal, client = _caller(w, *PROVISION_PERMISSIONS, secret_ids=(w.model_key.id, w.team_token.id))
    assert client.post(w.url, w.body()).status == 202


def test_replays_need_current_authority(w):
    principal, client = _caller(w, *PROVISION_PERMISSIONS)
    assert client.post(w.url, w.body()).status == 202
    AccessBinding.objects.filter(principal=principal).delete()
    before = counts()
    response = client.post(w.url, w.body())
    assert response.status == 403
    assert counts() == with_denial(before)


@pytest.mark.parametrize("status", [NamespaceStatus.PROVISIONING, NamespaceStatus.FAILED])
def test_namespace_must_be_ready(api, w, status):
    Namespace.objects.filter(id=w.ns.id).update(status=status)
    before = counts()
    response = api.post(w.url, w.body())
    assert response.status == 409
    assert response.error_code == "NAMESPACE_NOT_READY"
    assert counts() == before


def test_installation_advertises_the_admitted_execution_modes(api, w):
    advertised = api.get("/installation").data["capabilities"]["agentProvisioning"]["executionModes"]
    assert advertised == list(PROVISIONING_EXECUTION_MODES)


# --- channel credential checks ----------------------------------------------------------------


class RecordingChannelDriver(ChannelDriver):
    """Reads the Secret its channel's ``token`` names, and refuses the value ``refuse``."""

    channel = "testchat"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def check_credentials(self, *, values: Mapping[str, Any], secret_bindings: Mapping[str, Any],
                          read_secret: SecretReader) -> None:
        chat = values.get("channels", {}).get(self.channel)
        if not isinstance(chat, Mapping):
            return
        env = chat["token"]["id"]
        assert env in secret_bindings
        value = read_secret(env, "/channels/testchat/token")
        self.seen.append(value)
        if value == "refuse":
            raise InvalidRequest.at("/configuration/values/channels/testchat/token", "INVALID_VALUE",
                                    "The test chat refused the token.")


@pytest.fixture
def chat_driver(monkeypatch) -> Iterator[RecordingChannelDriver]:
    monkeypatch.setitem(CHANNEL_DRIVERS.classes, RecordingChannelDriver.channel,  # unregistered after the test
                        f"{__name__}.RecordingChannelDriver")
    driver = CHANNEL_DRIVERS.get(RecordingChannelDriver.channel)
    assert isinstance(driver, RecordingChannelDriver)
    yield driver
    CHANNEL_DRIVERS.forget()


def _chat_body(w: World, env: str = "TEAM_TOKEN") -> dict[str, Any]:
    body = w.body()
    body["configuration"]["values"]["channels"] = {
        "testchat": {"token": {"source": "env", "provider": "default", "id": env}}}
    return body


def test_channel_drivers_check_credentials_through_authorized_reads(api, w, chat_driver):
    response = api.post(w.url, _chat_body(w))
    assert response.status == 202, response.body
    assert chat_driver.seen == [f"{CANARY}-team"]
    # A replay of the admitted request does not check again.
    assert api.post(w.url, _chat_body(w)).status == 202
    assert chat_driver.seen == [f"{CANARY}-team"]


def test_a_refused_channel_credential_admits_nothing(api, w, chat_driver, admin_actor):
    refused = secret_create(actor=admin_actor, namespace_id=w.ns.id,
                            command=SecretCreate(name="refused", value="refuse"))
    body = _chat_body(w)
    body["configuration"]["secretBindings"]["TEAM_TOKEN"]["source"]["id"] = refused.id
    before = counts()
    response = api.post(w.url, body)
    assert response.status == 400
    assert response.body["error"]["details"][0]["path"] == "/configuration/values/channels/testchat/token"
    assert counts() == before
    assert chat_driver.seen == ["refuse"]


def test_the_reader_refuses_an_unbound_variable(api, w, chat_driver):
    body = _chat_body(w, env="UNBOUND_TOKEN")
    chat_driver_check = chat_driver.check_credentials

    def lenient(*, values, secret_bindings, read_secret):  # skip the driver's own binding check
        read_secret("UNBOUND_TOKEN", "/configuration/values/channels/testchat/token")
        chat_driver_check(values=values, secret_bindings=secret_bindings, read_secret=read_secret)

    chat_driver.check_credentials = lenient  # type: ignore[method-assign]
    response = api.post(w.url, body)
    assert response.status == 400
    assert response.body["error"]["details"] == [
        {"code": "INVALID_VALUE", "path": "/configuration/values/channels/testchat/token"}]


def test_the_reader_authorizes_the_exact_secret(w):
    from occ.errors import Forbidden
    from occ.services.provisioning import channel_secret_reader

    principal = make_service_principal("reader-without-operate")
    grant(principal, "operate:secret", namespace=w.ns, resource_kind="secret", resource_id=w.model_key.id)
    reader = channel_secret_reader(Actor(principal=principal, source=Source.API), w.ns,
                                   {"MODEL": w.model_key.id, "TEAM_TOKEN": w.team_token.id})
    assert reader("MODEL", "/channels/x") == CANARY
    with pytest.raises(Forbidden):
        reader("TEAM_TOKEN", "/channels/x")


# --- status -----------------------------------------------------------------------------------


def test_status_of_queued_work_shows_no_result_ids(api, w):
    data = admit(api, w)
    for path in (w.work_url(data["workId"]), w.work_url(data["workId"].replace(":", "%3A"))):
        response = api.get(path)
        assert response.status == 200, (path, response.body)
        assert response.data == data
    assert api.get(w.work_url("agent:agt_00000000-0000-4000-8000-000000000000:provisioned")).status == 404
    other = NamespaceFactory()
    assert api.get(f"/namespaces/{other.id}/agents/provision/{data['workId']}").status == 404


def test_status_shows_result_ids_as_they_appear(api, w):
    data = admit(api, w)
    row = row_of(data["workId"])
    url = w.work_url(data["workId"])
    set_state(data["workId"], status=ProvisioningStatus.RUNNING, attempts=1)
    # The Configuration exists before the phase is checkpointed (a crash in between).
    ConfigurationFactory(id=row.configuration_id, namespace=w.ns)
    got = api.get(url).data
    assert (got["status"], got["phase"], got["attemptCount"], got["configurationId"]) == (
        "running", "admitted", 1, row.configuration_id)
    assert "agentId" not in got
    assert "revisionId" not in got
    set_state(data["workId"], phase="configuration")
    assert api.get(url).data["agentId"] == row.agent_id
    set_state(data["workId"], phase="handoff", status=ProvisioningStatus.SUCCEEDED, work_state=WorkState.SUCCEEDED,
              revision_id="rev_00000000-0000-4000-8000-000000000001")
    got = api.get(url).data
    assert set(got) == BASE_KEYS | {"configurationId", "agentId", "revisionId"}
    assert (got["status"], got["phase"], got["revisionId"]) == (
        "succeeded", "handoff", "rev_00000000-0000-4000-8000-000000000001")


def test_status_never_shows_input_values(api, w):
    body = w.body(initialWorkspaceFiles={"SOUL.md": "soul-text-marker"})
    body["configuration"]["values"]["tools"]["profile"] = "messaging"
    data = api.post(w.url, body).data["provisioning"]
    fail(data["workId"])
    text = json.dumps(api.get(w.work_url(data["workId"])).body)
    for marker in ("soul-text-marker", "messaging", "echo-model", "TEAM_TOKEN", w.model_key.id, CANARY):
        assert marker not in text


@pytest.mark.parametrize(("setup", "code", "message"), [
    pytest.param(lambda wid: fail(wid, "AUTHORIZATION_DENIED"), "AUTHORIZATION_DENIED",
                 "The compute backend failed.", id="recorded-error"),
    pytest.param(lambda wid: set_state(wid, status=ProvisioningStatus.CANCELLED), "PROVISIONING_CANCELLED",
                 "Provisioning was cancelled because its Agent was stopped or deleted.", id="cancelled"),
    pytest.param(lambda wid: set_state(wid, status=ProvisioningStatus.RUNNING, work_state=WorkState.FAILED_PERMANENT,
                                       reason="LEASE_EXPIRED"), "LEASE_EXPIRED",
                 "Provisioning stopped after its worker repeatedly stopped responding.", id="failed-by-the-sweep"),
    pytest.param(lambda wid: set_state(wid, status=ProvisioningStatus.FAILED, work_state=WorkState.FAILED_PERMANENT,
                                       progress={"error": {"code": "lower case!",
                                                           "message": "line\nbreak" + "x" * 400}}),
                 "PROVISIONING_FAILED", None, id="unsafe-code-and-long-message"),
])
def test_failures_are_public_and_safe(api, w, setup, code, message):
    data = admit(api, w)
    setup(data["workId"])
    got = api.get(w.work_url(data["workId"])).data
    assert got["status"] == "failed"
    assert got["error"]["code"] == code
    if message is not None:
        assert got["error"]["message"] == message
    assert 1 <= len(got["error"]["message"]) <= 256
    assert "\n" not in got["error"]["message"]


def test_only_the_initiator_reads_status_until_the_agent_exists(api, w):
    data = admit(api, w)
    url = w.work_url(data["workId"])
    _principal, reader = _caller(w, "read:agent", "operate:agent")
    before = counts()
    assert reader.get(url).status == 403
    assert counts() == with_denial(before)
    denial = AuditEvent.objects.get(kind=AuditKind.AUTHORIZATION_DENIAL)
    assert denial.details["reason"] == "not_initiator"
    assert denial.details["workId"] == data["workId"]

    make_agent(w, row_of(data["workId"]))
    set_state(data["workId"], phase="configuration", status=ProvisioningStatus.RUNNING)
    assert reader.get(url).status == 200
    # From now on it is agent:read, for the initiator too.
    initiator, initiator_client = _caller(w, *PROVISION_PERMISSIONS)
    response = initiator_client.post(w.url, w.body(name="second", requestId="req_second-request"))
    second = response.data["provisioning"]["workId"]
    # A restriction on reading this Agent does not stop the initiator before the Agent exists...
    Restriction.objects.create(principal=initiator, action="read", resource_kind="agent", namespace=w.ns,
                               resource_id=row_of(second).agent_id)
    assert initiator_client.get(w.work_url(second)).status == 200
    make_agent(w, row_of(second))
    # ... and does once it exists.
    assert initiator_client.get(w.work_url(second)).status == 403


def test_failed_status_names_a_deleted_secret(api, w, admin_actor):
    data = admit(api, w)
    fail(data["workId"])
    secret_delete(actor=admin_actor, namespace_id=w.ns.id, secret_id=w.team_token.id)
    response = api.get(w.work_url(data["workId"]))
    assert response.status == 409
    assert w.team_token.id in response.body["error"]["message"]


# --- retry ------------------------------------------------------------------------------------


@pytest.mark.parametrize("setup", [
    pytest.param(lambda wid: None, id="queued"),
    pytest.param(lambda wid: set_state(wid, status=ProvisioningStatus.RUNNING, attempts=1), id="running"),
    pytest.param(lambda wid: set_state(wid, status=ProvisioningStatus.SUCCEEDED, phase="handoff",
                                       work_state=WorkState.SUCCEEDED), id="succeeded"),
    pytest.param(lambda wid: set_state(wid, status=ProvisioningStatus.CANCELLED, work_state=WorkState.FAILED_PERMANENT,
                                       reason="PROVISIONING_CANCELLED"), id="cancelled"),
])
def test_only_failed_work_can_be_retried(api, w, setup):
    data = admit(api, w)
    setup(data["workId"])
    before = counts()
    response = api.post(w.work_url(data["workId"]) + "/retry")
    assert response.status == 409, response.body
    assert response.error_code == "RESOURCE_CONFLICT"
    assert counts() == before


def test_retry_requeues_the_same_work_keeping_outputs(api, w, django_capture_on_commit_callbacks):
    data = admit(api, w)
    record_effect(data["workId"], "configuration", "receipted", "cfg_x")
    fail(data["workId"])
    set_state(data["workId"], phase="configuration")
    ControllerWork.objects.filter(pk=data["workId"]).update(created_at=timezone.now() - timedelta(hours=1))
    w.nudges.clear()
    before = counts()
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(w.work_url(data["workId"]) + "/retry")
    assert response.status == 202, response.body
    got = response.data
    assert (got["workId"], got["status"], got["phase"], got["attemptCount"]) == (
        data["workId"], "queued", "configuration", 0)
    assert "error" not in got
    row = row_of(data["workId"])
    work = row.work
    assert (work.state, work.attempt_count, work.reason_code, work.completed_at, work.claim_token,
            work.last_attempt_code) == ("queued", 0, None, None, None, None)
    assert timezone.now() - work.available_at < timedelta(seconds=30)
    assert timezone.now() - work.created_at < timedelta(seconds=30), "a retry gets a fresh convergence deadline"
    assert (row.status, row.completed_phase, row.progress) == ("queued", "configuration", {})
    assert effects_of(data["workId"]) == [("configuration", "cfg_x", "receipted", False)]
    assert w.nudges == [data["workId"]]
    assert counts() == {**before, "audit": before["audit"] + 1}
    event = AuditEvent.objects.filter(action="openclaw.agents.provision.retry").get()
    assert (event.resource_id, event.details["workId"], event.details["previousErrorCode"]) == (
        row.agent_id, data["workId"], "DEPENDENCY_UNAVAILABLE")
    # A second retry is refused: it is queued again.
    assert api.post(w.work_url(data["workId"]) + "/retry").status == 409


def test_retry_after_recovery_required_marks_unreceipted_effects_for_resending(api, w):
    data = admit(api, w)
    record_effect(data["workId"], "configuration", "receipted", "cfg_y")
    record_effect(data["workId"], "transport", "begun", "gw-credentials")
    fail(data["workId"], "RECOVERY_REQUIRED")
    got = api.get(w.work_url(data["workId"])).data
    assert got["error"]["code"] == "RECOVERY_REQUIRED"
    assert api.post(w.work_url(data["workId"]) + "/retry").status == 202
    assert row_of(data["workId"]).progress == {}
    assert effects_of(data["workId"]) == [("configuration", "cfg_y", "receipted", False),
                                          ("transport", "gw-credentials", "begun", True)]
    event = AuditEvent.objects.filter(action="openclaw.agents.provision.retry").get()
    assert event.details["resendEffects"] == [{"kind": "transport", "targetId": "gw-credentials"}]


def test_retry_refuses_work_whose_secret_was_deleted(api, w, admin_actor):
    data = admit(api, w)
    fail(data["workId"])
    secret_delete(actor=admin_actor, namespace_id=w.ns.id, secret_id=w.model_key.id)
    before = counts()
    response = api.post(w.work_url(data["workId"]) + "/retry")
    assert response.status == 409
    assert w.model_key.id in response.body["error"]["message"]
    assert counts() == before
    assert row_of(data["workId"]).work.state == WorkState.FAILED_PERMANENT


def test_retry_belongs_to_the_initiator_then_to_agent_operate(api, w):
    data = admit(api, w)
    fail(data["workId"])
    url = w.work_url(data["workId"]) + "/retry"
    _principal, operator = _caller(w, "read:agent", "operate:agent")
    before = counts()
    assert operator.post(url).status == 403
    assert counts() == with_denial(before)
    make_agent(w, row_of(data["workId"]))
    _principal, reader = _caller(w, "read:agent")
    assert reader.post(url).status == 403
    assert operator.post(url).status == 202


def test_retry_takes_no_body(api, w):
    data = admit(api, w)
    fail(data["workId"])
    assert api.post(w.work_url(data["workId"]) + "/retry", {}).status == 400
    assert api.post(w.work_url(data["workId"]) + "/retry").status == 202


# --- the canary -------------------------------------------------------------------------------


def _rows_text(*models: Any) -> str:
    return "\n".join(serializers.serialize("json", model.objects.all()) for model in models)


def test_secret_values_never_reach_rows_audit_or_responses(api, w, chat_driver, admin_actor):
    raw: list[bytes] = []
    client = Client()
    headers = {"x-api-key": api.key}

    def call(method: str, path: str, body: Any = None) -> Any:
        response = client.generic(method, path, data=json.dumps(body) if body is not None else "",
                                  content_type="application/json", headers=headers)
        raw.append(response.content)
        return response

    canary_secret = secret_create(actor=admin_actor, namespace_id=w.ns.id,
                                  command=SecretCreate(name="canary-chat", value=CANARY))
    body = _chat_body(w, env="CHAT_TOKEN")
    body["configuration"]["secretBindings"]["CHAT_TOKEN"] = {"source": ref(w.ns.id, canary_secret.id)}
    admitted = call("POST", w.url, body)
    assert admitted.status_code == 202
    assert chat_driver.seen == [CANARY]  # the driver did read it
    work_id = admitted.json()["data"]["provisioning"]["workId"]
    assert call("POST", w.url, body).status_code == 202
    assert call("GET", w.work_url(work_id)).status_code == 200
    fail(work_id)
    assert call("GET", w.work_url(work_id)).status_code == 200
    assert call("POST", w.work_url(work_id) + "/retry").status_code == 202
    # Refusals carrying the canary inline.
    assert call("POST", w.url, w.body(requestId="req_canary-inline", secrets=[{"value": CANARY}])).status_code == 400
    inline = w.body(requestId="req_canary-inline-2")
    inline["configuration"]["values"]["models"]["providers"]["fake"]["apiKey"] = CANARY
    assert call("POST", w.url, inline).status_code == 400

    for content in raw:
        assert CANARY.encode() not in content
    rows = _rows_text(AgentProvisioningWork, ControllerWork, AuditEvent)
    assert CANARY not in rows
    assert canary_secret.id in rows  # references are kept, values are not


# --- concurrency (PostgreSQL) -------------------------------------------------------------------


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("namespace_lock", [
    pytest.param(True, id="as-admitted"),
    # Without the admission lock the racers reach the insert together: the unique
    # (Namespace, actor, requestId) constraint refuses all but one, and they re-read it.
    pytest.param(False, id="unique-constraint-alone"),
])
def test_fifty_concurrent_identical_requests_admit_one_job(bootstrap, nudges, monkeypatch, namespace_lock):
    if not namespace_lock:
        unlocked, held = provisioning_service.get_live_namespace, provisioning_service._held_secrets
        monkeypatch.setattr(provisioning_service, "_lock_for_admission", lambda namespace_id: unlocked(namespace_id))
        monkeypatch.setattr(provisioning_service, "_held_secrets",
                            lambda namespace, secret_ids, lock=False: held(namespace, secret_ids))
    namespace = Namespace.objects.get(name="default")
    Namespace.objects.filter(id=namespace.id).update(status=NamespaceStatus.READY)
    admin = Actor(principal=bootstrap.key.principal, source=Source.API)
    model_key = secret_create(actor=admin, namespace_id=namespace.id,
                              command=SecretCreate(name="model-key", value=CANARY))
    w = World(ns=namespace, admin=admin, model_key=model_key, team_token=model_key, nudges=nudges)
    body = json.dumps(w.body())
    count = 50
    barrier = threading.Barrier(count)
    results: list[tuple[int, Any]] = [(0, None)] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            client = Client()
            barrier.wait(timeout=30)
            response = client.post(w.url, data=body, content_type="application/json",
                                   headers={"x-api-key": bootstrap.key_token})
            results[i] = (response.status_code, response.json())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not [t for t in threads if t.is_alive()], "a request hung"
    assert not errors, errors[0]
    assert {status for status, _ in results} == {202}, [r for r in results if r[0] != 202][:3]
    work_ids = {payload["data"]["provisioning"]["workId"] for _, payload in results}
    assert len(work_ids) == 1
    assert ControllerWork.objects.filter(job="provision").count() == 1
    assert AgentProvisioningWork.objects.count() == 1
    assert AuditEvent.objects.filter(action="openclaw.agents.provision").count() == 1
    assert nudges == list(work_ids)
    assert not Agent.objects.exists()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_admissions_of_one_name_admit_one_and_refuse_the_other(bootstrap, nudges, monkeypatch):
    """Two requests (different requestIds) for the same name at the same moment: the
    admission lock makes the second see the first's work, so one 202 and one 409, even
    with a slow insert holding the window open."""
    real_insert = provisioning_service._insert

    def slow_insert(*args: Any) -> Any:
        time.sleep(0.3)  # both would be past the name check by now without the lock
        return real_insert(*args)

    monkeypatch.setattr(provisioning_service, "_insert", slow_insert)
    namespace = Namespace.objects.get(name="default")
    Namespace.objects.filter(id=namespace.id).update(status=NamespaceStatus.READY)
    admin = Actor(principal=bootstrap.key.principal, source=Source.API)
    model_key = secret_create(actor=admin, namespace_id=namespace.id,
                              command=SecretCreate(name="model-key", value="sk-one"))
    w = World(ns=namespace, admin=admin, model_key=model_key, team_token=model_key, nudges=nudges)
    bodies = [json.dumps(w.body(requestId=f"req_same-name-{i}")) for i in range(2)]
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def run(body: str) -> None:
        try:
            barrier.wait(timeout=30)
            response = Client().post(w.url, data=body, content_type="application/json",
                                     headers={"x-api-key": bootstrap.key_token})
            statuses.append(response.status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(statuses) == [202, 409]
    assert AgentProvisioningWork.objects.count() == 1
