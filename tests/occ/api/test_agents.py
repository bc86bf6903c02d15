from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from occ.models import (
    AccessBinding,
    Agent,
    AuditEvent,
    Configuration,
    Namespace,
    NamespaceStatus,
    Principal,
    PrincipalKind,
    Secret,
)
from tests.agents_support import ALL_AGENT_PERMISSIONS, after_one_denial, caller, state
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, SecretFactory, grant, key_for

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
UNKNOWN_CFG = "cfg_00000000-0000-4000-8000-000000000000"
UNKNOWN_SEC = "sec_00000000-0000-4000-8000-000000000000"
UNKNOWN_AGT = "agt_00000000-0000-4000-8000-000000000000"


@dataclass
class World:
    ns: Namespace
    other: Namespace
    cfg: str
    cfg2: str
    sec: str
    sec2: str

    @property
    def agents_url(self) -> str:
        return f"/namespaces/{self.ns.id}/agents"

    def create_body(self, **extra) -> dict:
        return {"name": "helper", "configurationId": self.cfg, **extra}

    def api_key(self, secret_id: str | None = None) -> dict:
        return {"method": "api_key", "source": {"kind": "secret", "namespaceId": self.ns.id,
                                                 "id": secret_id or self.sec}}


@pytest.fixture
def w(ready_namespace) -> World:
    other = NamespaceFactory()
    return World(
        ns=ready_namespace, other=other,
        cfg=ConfigurationFactory(namespace=ready_namespace).id, cfg2=ConfigurationFactory(namespace=ready_namespace).id,
        sec=SecretFactory(namespace=ready_namespace).id, sec2=SecretFactory(namespace=ready_namespace).id,
    )


# --- create ---------------------------------------------------------------------------------


def test_create_returns_stopped_agent_with_its_service_principal(api, w):
    before = state()
    response = api.post(w.agents_url, w.create_body())
    assert response.status == 201
    data = response.data
    assert set(data) == {
        "id", "namespaceId", "name", "configurationId", "configurationName", "executionMode", "harnessAuth",
        "backendId", "servicePrincipalId", "status", "desiredRuntimeState", "plugins", "pluginApprovers",
        "repositoryBindings", "smokeConversations", "rollbackOnFailure", "createdAt", "updatedAt", "runtime",
    }
    assert data["configurationName"] == Configuration.objects.get(id=w.cfg).name
    assert data["runtime"] == {"state": "stopped", "revisionId": None, "revision": None, "retrying": False,
                               "reason": None}
    assert re.fullmatch(r"agt_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", data["id"])
    assert data["namespaceId"] == w.ns.id
    assert data["name"] == "helper"
    assert data["configurationId"] == w.cfg
    assert data["executionMode"] == "embedded"
    assert data["harnessAuth"] is None
    assert data["backendId"] is None
    assert data["status"] == "active"
    assert data["desiredRuntimeState"] == "stopped"
    assert "activeRevisionId" not in data
    assert (data["plugins"], data["pluginApprovers"], data["repositoryBindings"]) == ({}, [], [])
    assert TIMESTAMP.match(data["createdAt"])
    assert TIMESTAMP.match(data["updatedAt"])
    principal = Principal.objects.get(id=data["servicePrincipalId"])
    assert (principal.kind, principal.namespace_id, principal.agent_id) == (PrincipalKind.SERVICE, w.ns.id, data["id"])
    # One Agent, one principal, one audit event; no work, no revision, no grant.
    assert state() == {**before, "agents": before["agents"] + 1, "principals": before["principals"] + 1,
                       "audit": before["audit"] + 1}
    event = AuditEvent.objects.get(action="openclaw.agents.create")
    assert (event.kind, event.resource_id, event.namespace_id) == ("mutation", data["id"], w.ns.id)
    assert event.details["servicePrincipalId"] == principal.id


def test_create_with_every_supported_field(api, w):
    body = w.create_body(
        executionMode="embedded", harnessAuth=w.api_key(), backendId=None, plugins={}, repositoryBindings=[],
        pluginApprovers=[{"channel": "slack", "id": "U123"}, {"channel": "telegram", "id": "42"}],
        initialWorkspaceFiles={"AGENTS.md": "# Agents\n", "SOUL.md": "calm", "IDENTITY.md": "", "USER.md": "x"},
    )
    response = api.post(w.agents_url, body)
    assert response.status == 201, response.body
    data = response.data
    assert data["harnessAuth"] == w.api_key()
    assert data["pluginApprovers"] == body["pluginApprovers"]
    assert "initialWorkspaceFiles" not in data
    agent = Agent.objects.get(id=data["id"])
    assert agent.initial_workspace_files == body["initialWorkspaceFiles"]
    assert agent.harness_secret_id == w.sec
    # Staged files are never returned, not even by a read.
    assert "initialWorkspaceFiles" not in api.get(f"{w.agents_url}/{agent.id}").data
    assert "# Agents" not in json.dumps(AuditEvent.objects.get(action="openclaw.agents.create").details)


def test_create_accepts_largest_workspace_file_and_200_char_name(api, w):
    body = w.create_body(name="é" * 200, initialWorkspaceFiles={"AGENTS.md": "é" * 8192})
    assert api.post(w.agents_url, body).status == 201


def test_create_allowed_while_namespace_is_provisioning(api, bootstrap):
    namespace = Namespace.objects.get(name="default")
    assert namespace.status == NamespaceStatus.PROVISIONING
    cfg = ConfigurationFactory(namespace=namespace)
    response = api.post(f"/namespaces/{namespace.id}/agents", {"name": "early", "configurationId": cfg.id})
    assert response.status == 201


@pytest.mark.parametrize("status", [NamespaceStatus.FAILED, NamespaceStatus.DELETING])
def test_create_refused_in_failed_or_deleting_namespace(api, w, status):
    Namespace.objects.filter(id=w.ns.id).update(status=status)
    before = state()
    response = api.post(w.agents_url, w.create_body())
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    assert state() == before


def test_create_refused_in_tombstoned_namespace(api, w):
    Namespace.objects.filter(id=w.ns.id).update(deleted_at=w.ns.created_at)
    before = state()
    assert api.post(w.agents_url, w.create_body()).status == 404
    assert state() == before


def test_duplicate_name_conflicts_only_within_namespace(api, w):
    assert api.post(w.agents_url, w.create_body()).status == 201
    before = state()
    response = api.post(w.agents_url, w.create_body(configurationId=w.cfg2))
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    assert state() == before
    other_cfg = ConfigurationFactory(namespace=w.other)
    body = {"name": "helper", "configurationId": other_cfg.id}
    assert api.post(f"/namespaces/{w.other.id}/agents", body).status == 201


BAD_CREATE = [
    pytest.param(lambda w: {"configurationId": w.cfg}, "REQUIRED", "/name", id="missing-name"),
    pytest.param(lambda w: {"name": "a"}, "REQUIRED", "/configurationId", id="missing-configuration"),
    pytest.param(lambda w: w.create_body(extra=1), "UNKNOWN_FIELD", "/extra", id="unknown-field"),
    pytest.param(lambda w: w.create_body(namespaceId=w.ns.id), "UNKNOWN_FIELD", "/namespaceId", id="namespace-id"),
    pytest.param(lambda w: w.create_body(servicePrincipalId="sp_x"), "UNKNOWN_FIELD", "/servicePrincipalId",
                 id="service-principal"),
    pytest.param(lambda w: w.create_body(status="active"), "UNKNOWN_FIELD", "/status", id="status"),
    pytest.param(lambda w: w.create_body(modelApiKey="k"), "UNKNOWN_FIELD", "/modelApiKey", id="model-api-key"),
    pytest.param(lambda w: w.create_body(name=7), "INVALID_TYPE", "/name", id="int-name"),
    pytest.param(lambda w: w.create_body(name=" x"), "INVALID_FORMAT", "/name", id="name-leading-space"),
    pytest.param(lambda w: w.create_body(name="a\nb"), "INVALID_FORMAT", "/name", id="name-control"),
    pytest.param(lambda w: w.create_body(name=""), "INVALID_FORMAT", "/name", id="name-empty"),
    pytest.param(lambda w: w.create_body(name="x" * 201), "TOO_LONG", "/name", id="name-too-long"),
    pytest.param(lambda w: w.create_body(name="a\ud800"), "INVALID_VALUE", "/name", id="name-lone-surrogate"),
    pytest.param(lambda w: w.create_body(configurationId=5), "INVALID_TYPE", "/configurationId", id="cfg-int"),
    pytest.param(lambda w: w.create_body(configurationId="nope"), "INVALID_FORMAT", "/configurationId",
                 id="cfg-malformed"),
    pytest.param(lambda w: w.create_body(configurationId=w.sec), "INVALID_FORMAT", "/configurationId",
                 id="cfg-wrong-prefix"),
    pytest.param(lambda w: w.create_body(executionMode="dedicated"), "INVALID_VALUE", "/executionMode",
                 id="dedicated"),
    pytest.param(lambda w: w.create_body(executionMode="remote"), "INVALID_VALUE", "/executionMode",
                 id="unknown-mode"),
    pytest.param(lambda w: w.create_body(executionMode=None), "INVALID_TYPE", "/executionMode", id="null-mode"),
    pytest.param(lambda w: w.create_body(harnessAuth="api_key"), "INVALID_TYPE", "/harnessAuth", id="ha-string"),
    pytest.param(lambda w: w.create_body(harnessAuth={}), "REQUIRED", "/harnessAuth/method", id="ha-empty"),
    pytest.param(lambda w: w.create_body(harnessAuth={"method": 1}), "INVALID_TYPE", "/harnessAuth/method",
                 id="ha-method-int"),
    pytest.param(lambda w: w.create_body(harnessAuth={"method": "chatgpt_service_account", "serviceAccountId": "x"}),
                 "INVALID_VALUE", "/harnessAuth/method", id="ha-legacy"),
    pytest.param(lambda w: w.create_body(harnessAuth={"method": "api_key"}), "REQUIRED", "/harnessAuth/source",
                 id="ha-no-source"),
    pytest.param(lambda w: w.create_body(harnessAuth={**w.api_key(), "extra": 1}), "UNKNOWN_FIELD",
                 "/harnessAuth/extra", id="ha-extra"),
    pytest.param(lambda w: w.create_body(harnessAuth={"method": "api_key", "source": "sec"}), "INVALID_TYPE",
                 "/harnessAuth/source", id="ha-source-string"),
    pytest.param(lambda w: w.create_body(harnessAuth={"method": "api_key", "source": {"kind": "secret", "id": w.sec}}),
                 "REQUIRED", "/harnessAuth/source/namespaceId", id="ha-source-no-namespace"),
    pytest.param(lambda w: w.create_body(harnessAuth={"method": "api_key", "source": {
        "kind": "service_account", "namespaceId": w.ns.id, "id": w.sec}}), "INVALID_VALUE",
        "/harnessAuth/source/kind", id="ha-source-kind"),
    pytest.param(lambda w: w.create_body(harnessAuth={"method": "api_key", "source": {
        "kind": "secret", "namespaceId": w.other.id, "id": w.sec}}), "INVALID_VALUE",
        "/harnessAuth/source/namespaceId", id="ha-foreign-namespace"),
    pytest.param(lambda w: w.create_body(harnessAuth={"method": "api_key", "source": {
        "kind": "secret", "namespaceId": w.ns.id, "id": "sec_bad"}}), "INVALID_FORMAT",
        "/harnessAuth/source/id", id="ha-source-id-malformed"),
    pytest.param(lambda w: w.create_body(harnessAuth={"method": "api_key", "source": {
        "kind": "secret", "namespaceId": w.ns.id, "id": w.sec, "name": "x"}}), "UNKNOWN_FIELD",
        "/harnessAuth/source/name", id="ha-source-extra"),
    pytest.param(lambda w: w.create_body(backendId=""), "INVALID_FORMAT", "/backendId", id="backend-empty"),
    pytest.param(lambda w: w.create_body(backendId="has space"), "INVALID_FORMAT", "/backendId",
                 id="backend-space"),
    pytest.param(lambda w: w.create_body(backendId="b" * 201), "TOO_LONG", "/backendId", id="backend-too-long"),
    pytest.param(lambda w: w.create_body(backendId=3), "INVALID_TYPE", "/backendId", id="backend-int"),
    pytest.param(lambda w: w.create_body(plugins=[]), "INVALID_TYPE", "/plugins", id="plugins-array"),
    pytest.param(lambda w: w.create_body(plugins={"bad key": {}}), "INVALID_FORMAT", "/plugins/bad key",
                 id="plugins-bad-key"),
    pytest.param(lambda w: w.create_body(repositoryBindings={}), "INVALID_TYPE", "/repositoryBindings",
                 id="repos-object"),
    pytest.param(lambda w: w.create_body(repositoryBindings=[{"repositoryRef": "r"}] * 17), "TOO_LONG",
                 "/repositoryBindings", id="repos-too-many"),
    pytest.param(lambda w: w.create_body(pluginApprovers={}), "INVALID_TYPE", "/pluginApprovers",
                 id="approvers-object"),
    pytest.param(lambda w: w.create_body(pluginApprovers=[{"channel": "slack", "id": f"U{i}"} for i in range(65)]),
                 "TOO_LONG", "/pluginApprovers", id="approvers-65"),
    pytest.param(lambda w: w.create_body(pluginApprovers=[{"channel": "slack"}]), "REQUIRED",
                 "/pluginApprovers/0/id", id="approver-missing-id"),
    pytest.param(lambda w: w.create_body(pluginApprovers=[{"channel": "slack", "id": "U1", "x": 1}]),
                 "UNKNOWN_FIELD", "/pluginApprovers/0/x", id="approver-extra"),
    pytest.param(lambda w: w.create_body(pluginApprovers=[{"channel": "slack", "id": 1}]), "INVALID_TYPE",
                 "/pluginApprovers/0/id", id="approver-int"),
    pytest.param(lambda w: w.create_body(pluginApprovers=[{"channel": "", "id": "U1"}]), "INVALID_FORMAT",
                 "/pluginApprovers/0/channel", id="approver-empty"),
    pytest.param(lambda w: w.create_body(pluginApprovers=[{"channel": "slack", "id": "U 1"}]), "INVALID_FORMAT",
                 "/pluginApprovers/0/id", id="approver-space"),
    pytest.param(lambda w: w.create_body(pluginApprovers=[{"channel": "slack", "id": "U1"}] * 2), "INVALID_VALUE",
                 "/pluginApprovers/1", id="approver-duplicate"),
    pytest.param(lambda w: w.create_body(initialWorkspaceFiles=[]), "INVALID_TYPE", "/initialWorkspaceFiles",
                 id="files-array"),
    pytest.param(lambda w: w.create_body(initialWorkspaceFiles={"README.md": "x"}), "UNKNOWN_FIELD",
                 "/initialWorkspaceFiles/README.md", id="files-unknown-name"),
    pytest.param(lambda w: w.create_body(initialWorkspaceFiles={"a/b": "x"}), "UNKNOWN_FIELD",
                 "/initialWorkspaceFiles/a~1b", id="files-pointer-escaped"),
    pytest.param(lambda w: w.create_body(initialWorkspaceFiles={"SOUL.md": 1}), "INVALID_TYPE",
                 "/initialWorkspaceFiles/SOUL.md", id="files-int"),
    pytest.param(lambda w: w.create_body(initialWorkspaceFiles={"SOUL.md": None}), "INVALID_TYPE",
                 "/initialWorkspaceFiles/SOUL.md", id="files-null"),
    pytest.param(lambda w: w.create_body(initialWorkspaceFiles={"USER.md": "x" * (16 * 1024 + 1)}), "TOO_LONG",
                 "/initialWorkspaceFiles/USER.md", id="files-too-big"),
    pytest.param(lambda w: w.create_body(initialWorkspaceFiles={"USER.md": "é" * 8193}), "TOO_LONG",
                 "/initialWorkspaceFiles/USER.md", id="files-too-big-in-bytes"),
    pytest.param(lambda w: w.create_body(initialWorkspaceFiles={"AGENTS.md": "a\x00b"}), "INVALID_VALUE",
                 "/initialWorkspaceFiles/AGENTS.md", id="files-nul"),
    pytest.param(lambda w: w.create_body(initialWorkspaceFiles={"AGENTS.md": "a\udc00"}), "INVALID_VALUE",
                 "/initialWorkspaceFiles/AGENTS.md", id="files-lone-surrogate"),
    pytest.param(lambda w: w.create_body(workspaceDefaultsId="0" * 64), "UNKNOWN_FIELD", "/workspaceDefaultsId",
                 id="workspace-defaults"),
]


@pytest.mark.parametrize(("make_body", "code", "path"), BAD_CREATE)
def test_create_rejects_bad_input_and_changes_nothing(api, w, make_body, code, path):
    before = state()
    response = api.post(w.agents_url, make_body(w))
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), response.body
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert state() == before


@pytest.mark.parametrize(("method", "needs"), [
    pytest.param("codex_pat", "runs only on the dedicated Codex harness", id="codex_pat"),
    pytest.param("oauth", "runs only on the dedicated Codex harness", id="oauth"),
    pytest.param("credential_source", "needs a Credential Gateway", id="credential_source"),
    pytest.param("runtime", "only an SSH runtime has", id="runtime"),
])
def test_documented_harness_methods_say_what_they_need(api, w, method, needs):
    before = state()
    response = api.post(w.agents_url, w.create_body(harnessAuth={"method": method}))
    assert response.status == 400
    message = response.body["error"]["message"]
    assert message.startswith(f"harnessAuth method {method}")
    assert needs in message
    assert "with method api_key" in message  # what to send instead
    assert response.body["error"]["details"] == [{"code": "INVALID_VALUE", "path": "/harnessAuth/method"}]
    assert state() == before


def test_a_service_account_token_secret_is_refused_for_the_embedded_harness(api, w):
    """A complete codex_pat binding (the Secret holding an at- token) is refused at admission
    until the dedicated Codex harness exists; nothing is read or stored."""
    before = state()
    binding = {"method": "codex_pat", "source": {"kind": "secret", "namespaceId": w.ns.id, "id": w.sec}}
    response = api.post(w.agents_url, w.create_body(harnessAuth=binding))
    assert (response.status, response.body["error"]["details"]) == (
        400, [{"code": "INVALID_VALUE", "path": "/harnessAuth/method"}])
    assert "dedicated Codex harness" in response.body["error"]["message"]
    assert state() == before


def test_dedicated_mode_says_not_supported_yet(api, w):
    response = api.post(w.agents_url, w.create_body(executionMode="dedicated"))
    assert response.status == 400
    assert "not supported yet" in response.body["error"]["message"]


def test_repository_bindings_without_a_driver_are_503(api, w, settings):
    settings.OCC_REPOSITORY_DRIVER = ""
    before = state()
    response = api.post(w.agents_url, w.create_body(repositoryBindings=[{"repositoryRef": "o/r",
                                                                          "profile": "git-read"}]))
    assert (response.status, response.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    assert state() == before


def test_non_json_and_oversize_bodies(api, w):
    before = state()
    assert api.post(w.agents_url, raw=b"{", content_type="application/json").status == 400
    assert api.post(w.agents_url, raw=b"name=x", content_type="application/x-www-form-urlencoded").status == 415
    # 448 KiB is allowed on Agent create; beyond it the body is refused before parsing.
    big = json.dumps(w.create_body(initialWorkspaceFiles={"AGENTS.md": "x" * (449 * 1024)})).encode()
    assert api.post(w.agents_url, raw=big).status == 413
    assert state() == before


def _driver_owned_secret(w: World) -> str:
    owner = AgentFactory(namespace=w.ns)
    return Secret.objects.create(namespace=w.ns, name="gw", driver_id="database", backend_name="gw-1",
                                 owner_agent=owner, purpose="gateway-password").id


NOT_FOUND_CREATE = [
    pytest.param(lambda w: w.create_body(configurationId=UNKNOWN_CFG), id="unknown-configuration"),
    pytest.param(lambda w: w.create_body(configurationId=ConfigurationFactory(namespace=w.other).id),
                 id="foreign-configuration"),
    pytest.param(lambda w: w.create_body(harnessAuth=w.api_key(UNKNOWN_SEC)), id="unknown-secret"),
    pytest.param(lambda w: w.create_body(harnessAuth=w.api_key(SecretFactory(namespace=w.other).id)),
                 id="secret-of-other-namespace"),
    pytest.param(lambda w: w.create_body(harnessAuth=w.api_key(_driver_owned_secret(w))), id="driver-owned-secret"),
    pytest.param(lambda w: w.create_body(backendId="chatgpt"), id="unknown-backend"),
]


@pytest.mark.parametrize("make_body", NOT_FOUND_CREATE)
def test_create_with_missing_reference_is_404(api, w, make_body):
    body = make_body(w)
    before = state()
    response = api.post(w.agents_url, body)
    assert (response.status, response.error_code) == (404, "NOT_FOUND"), response.body
    assert state() == before


def test_create_in_unknown_namespace_is_404(api, w):
    response = api.post("/namespaces/ns_00000000-0000-4000-8000-000000000000/agents", w.create_body())
    assert response.status == 404


# The 403 matrix: every referenced resource needs its own grant.
DENIED_CREATE = [
    pytest.param(lambda w: [("read:configuration", {}), ("operate:secret", {})], "create:agent", "namespace",
                 id="no-agent-create"),
    pytest.param(lambda w: [(ALL_AGENT_PERMISSIONS, {}), ("operate:secret", {})], "read:configuration", "cfg",
                 id="no-configuration-read"),
    pytest.param(lambda w: [(ALL_AGENT_PERMISSIONS, {}), ("read:configuration", {})], "operate:secret", "sec",
                 id="no-secret-operate"),
    pytest.param(lambda w: [(ALL_AGENT_PERMISSIONS, {}), ("read:configuration", {}),
                            ("operate:secret", {"resource_kind": "secret", "resource_id": w.sec2})],
                 "operate:secret", "sec", id="secret-operate-on-another-secret"),
    pytest.param(lambda w: [(ALL_AGENT_PERMISSIONS, {}), ("read:configuration", {"resource_kind": "configuration",
                                                                                  "resource_id": w.cfg2}),
                            ("operate:secret", {})], "read:configuration", "cfg",
                 id="configuration-read-on-another-configuration"),
    pytest.param(lambda w: [(ALL_AGENT_PERMISSIONS, {}), ("administer:installation", {}),
                            ("read:secret", {}), ("update:secret", {}), ("update:configuration", {})],
                 "read:configuration", "cfg", id="no-implied-actions"),
]


@pytest.mark.parametrize(("grants", "denied", "target"), DENIED_CREATE)
def test_create_denied_without_each_referenced_grant(w, grants, denied, target):
    principal, client = caller()
    for permissions, scope in grants(w):
        permissions = permissions if isinstance(permissions, tuple) else (permissions,)
        grant(principal, *permissions, namespace=w.ns, **scope)
    before = state()
    response = client.post(w.agents_url, w.create_body(harnessAuth=w.api_key()))
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert state() == after_one_denial(before)
    denial = AuditEvent.objects.filter(kind="authorization_denial").latest("occurred_at")
    assert denial.actor_id == principal.id
    assert denial.details["permission"] == denied
    assert denial.resource_id == {"namespace": None, "cfg": w.cfg, "sec": w.sec}[target]


def test_create_succeeds_with_exactly_the_needed_grants(w):
    principal, client = caller()
    grant(principal, "create:agent", namespace=w.ns)
    grant(principal, "read:configuration", namespace=w.ns, resource_kind="configuration", resource_id=w.cfg)
    grant(principal, "operate:secret", namespace=w.ns, resource_kind="secret", resource_id=w.sec)
    response = client.post(w.agents_url, w.create_body(harnessAuth=w.api_key()))
    assert response.status == 201, response.body
    # Creating makes the creator the Agent's owner (delegation, issue 26): that Agent is readable,
    # through one binding on exactly it (tests/occ/api/test_agent_delegation.py has the rest).
    assert client.get(f"{w.agents_url}/{response.data['id']}").status == 200
    assert list(AccessBinding.objects.filter(principal=principal, resource_kind="agent")
                .values_list("resource_id", flat=True)) == [response.data["id"]]


def test_namespace_scoped_key_of_another_namespace_is_denied(w):
    principal = Principal.objects.create(kind=PrincipalKind.SERVICE, name="other-sp", namespace=w.other)
    grant(principal, "create:agent", "read:configuration", "read:namespace")
    from tests.conftest import ApiClient

    client = ApiClient(key_for(principal, namespace=w.other))
    before = state()
    assert client.post(w.agents_url, w.create_body()).status == 403
    assert client.get(w.agents_url).status == 403
    assert state()["agents"] == before["agents"]


def test_anonymous_and_bad_keys_are_401_without_audit(anon_api, w):
    before = state()
    assert anon_api.post(w.agents_url, w.create_body()).status == 401
    assert anon_api.get(w.agents_url).status == 401
    assert anon_api.post(w.agents_url, w.create_body(), key="occ_sk_wrong").status == 401
    assert state() == before


# --- list and get ---------------------------------------------------------------------------


def test_list_returns_only_agents_with_exact_read(api, w):
    agents = [AgentFactory(namespace=w.ns) for _ in range(3)]
    AgentFactory(namespace=w.other)
    assert [a["id"] for a in api.get(w.agents_url).data["agents"]] == [a.id for a in agents]
    principal, client = caller("read:namespace", namespace=w.ns)
    # Exact update/deploy grants do not make an Agent discoverable.
    grant(principal, "update:agent", "deploy:agent", namespace=w.ns, resource_kind="agent", resource_id=agents[0].id)
    grant(principal, "read:agent", namespace=w.ns, resource_kind="agent", resource_id=agents[1].id)
    assert [a["id"] for a in client.get(w.agents_url).data["agents"]] == [agents[1].id]


def test_list_needs_namespace_read(w):
    AgentFactory(namespace=w.ns)
    _principal, client = caller("read:agent", namespace=w.ns)
    before = state()
    response = client.get(w.agents_url)
    assert response.status == 403
    assert state() == after_one_denial(before)


def test_list_of_empty_and_unknown_namespace(api, w):
    assert api.get(w.agents_url).data == {"agents": [], "nextCursor": None}
    assert api.get("/namespaces/ns_00000000-0000-4000-8000-000000000000/agents").status == 404


def _list_queries(client, url: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status == 200
    return len(captured), len(response.data["agents"])


@pytest.mark.parametrize("who", ["admin", "exact-reader"])
def test_list_queries_do_not_grow_with_agents(api, w, who):
    principal, reader = caller("read:namespace", namespace=w.ns)
    client = api if who == "admin" else reader

    def add_agents(n: int) -> None:
        for _ in range(n):
            agent = AgentFactory(namespace=w.ns)
            if who == "exact-reader":
                grant(principal, "read:agent", namespace=w.ns, resource_kind="agent", resource_id=agent.id)

    add_agents(3)
    small, count_small = _list_queries(client, w.agents_url)
    add_agents(27)
    large, count_large = _list_queries(client, w.agents_url)
    assert (count_small, count_large) == (3, 30)
    assert small == large


def test_get_agent(api, w):
    created = api.post(w.agents_url, w.create_body(harnessAuth=w.api_key())).data
    response = api.get(f"{w.agents_url}/{created['id']}")
    assert response.status == 200
    assert response.data == created


def test_get_shows_active_revision_when_set(api, w):
    from tests.agents_support import make_revision

    agent = AgentFactory(namespace=w.ns)
    revision = make_revision(agent, 1)
    Agent.objects.filter(id=agent.id).update(active_revision=revision)
    assert api.get(f"{w.agents_url}/{agent.id}").data["activeRevisionId"] == revision.id


def test_get_is_404_for_unknown_or_other_namespace_agent(api, w):
    foreign = AgentFactory(namespace=w.other)
    assert api.get(f"{w.agents_url}/{UNKNOWN_AGT}").status == 404
    assert api.get(f"{w.agents_url}/{foreign.id}").status == 404
    assert api.get(f"/namespaces/{w.other.id}/agents/{foreign.id}").status == 200


def test_get_needs_exact_agent_read(w):
    agent = AgentFactory(namespace=w.ns)
    principal, client = caller(*(p for p in ALL_AGENT_PERMISSIONS if p != "read:agent"), "read:namespace",
                               namespace=w.ns)
    before = state()
    assert client.get(f"{w.agents_url}/{agent.id}").status == 403
    assert state() == after_one_denial(before)
    grant(principal, "read:agent", namespace=w.ns, resource_kind="agent", resource_id=agent.id)
    assert client.get(f"{w.agents_url}/{agent.id}").status == 200


def test_get_and_list_take_no_body_or_query(api, w):
    agent = AgentFactory(namespace=w.ns)
    assert api.get(f"{w.agents_url}?x=1").status == 400
    assert api.request("GET", f"{w.agents_url}/{agent.id}", {"a": 1}).status == 400


# --- PATCH ----------------------------------------------------------------------------------


@pytest.fixture
def agent(api, w) -> dict:
    body = w.create_body(harnessAuth=w.api_key(), pluginApprovers=[{"channel": "slack", "id": "U1"}],
                         initialWorkspaceFiles={"SOUL.md": "kind"})
    return api.post(w.agents_url, body).data


def test_patch_with_only_configuration_preserves_everything_else(api, w, agent):
    response = api.patch(f"{w.agents_url}/{agent['id']}", {"configurationId": w.cfg2})
    assert response.status == 200, response.body
    data = response.data
    assert data["configurationId"] == w.cfg2
    assert data["configurationName"] == Configuration.objects.get(id=w.cfg2).name
    moved = ("configurationId", "configurationName", "updatedAt")
    unchanged = {k: v for k, v in agent.items() if k not in moved}
    assert {k: v for k, v in data.items() if k not in moved} == unchanged
    assert data["updatedAt"] >= agent["updatedAt"]
    assert Agent.objects.get(id=agent["id"]).initial_workspace_files == {"SOUL.md": "kind"}
    event = AuditEvent.objects.get(action="openclaw.agents.update")
    assert event.details["fields"] == ["configurationId"]


def test_patch_null_clears(api, w, agent):
    body = {"configurationId": w.cfg, "harnessAuth": None, "backendId": None,
            "pluginApprovers": None, "repositoryBindings": None}
    data = api.patch(f"{w.agents_url}/{agent['id']}", body).data
    assert data["harnessAuth"] is None
    assert data["backendId"] is None
    assert (data["plugins"], data["pluginApprovers"], data["repositoryBindings"]) == ({}, [], [])
    stored = Agent.objects.get(id=agent["id"])
    assert (stored.harness_auth_method, stored.harness_secret_id) == (None, None)


def test_patch_replaces(api, w, agent):
    body = {"configurationId": w.cfg2, "executionMode": "embedded", "harnessAuth": w.api_key(w.sec2),
            "pluginApprovers": [{"channel": "telegram", "id": "9"}], "plugins": {}, "repositoryBindings": []}
    data = api.patch(f"{w.agents_url}/{agent['id']}", body).data
    assert data["configurationId"] == w.cfg2
    assert data["harnessAuth"] == w.api_key(w.sec2)
    assert data["pluginApprovers"] == [{"channel": "telegram", "id": "9"}]
    assert api.get(f"{w.agents_url}/{agent['id']}").data == data


def test_patch_never_queues_work_or_touches_revisions(api, w, agent):
    from tests.agents_support import make_revision

    revision = make_revision(Agent.objects.get(id=agent["id"]), 1)
    before = state()
    assert api.patch(f"{w.agents_url}/{agent['id']}", {"configurationId": w.cfg2}).status == 200
    assert state() == {**before, "audit": before["audit"] + 1}
    revision.refresh_from_db()
    assert revision.configuration_id == w.cfg


BAD_PATCH = [
    pytest.param(lambda w: {}, 400, "REQUIRED", "/configurationId", id="missing-configuration"),
    pytest.param(lambda w: {"configurationId": None}, 400, "INVALID_TYPE", "/configurationId", id="null-cfg"),
    pytest.param(lambda w: {"configurationId": w.cfg, "name": "new"}, 400, "UNKNOWN_FIELD", "/name", id="name"),
    pytest.param(lambda w: {"configurationId": w.cfg, "initialWorkspaceFiles": {}}, 400, "UNKNOWN_FIELD",
                 "/initialWorkspaceFiles", id="workspace-files"),
    pytest.param(lambda w: {"configurationId": w.cfg, "servicePrincipalId": "sp_x"}, 400, "UNKNOWN_FIELD",
                 "/servicePrincipalId", id="service-principal"),
    pytest.param(lambda w: {"configurationId": w.cfg, "activeRevisionId": None}, 400, "UNKNOWN_FIELD",
                 "/activeRevisionId", id="active-revision"),
    pytest.param(lambda w: {"configurationId": w.cfg, "desiredRuntimeState": "running"}, 400, "UNKNOWN_FIELD",
                 "/desiredRuntimeState", id="desired-state"),
    pytest.param(lambda w: {"configurationId": "x"}, 400, "INVALID_FORMAT", "/configurationId", id="cfg-malformed"),
    pytest.param(lambda w: {"configurationId": w.cfg, "executionMode": "dedicated"}, 400, "INVALID_VALUE",
                 "/executionMode", id="dedicated"),
    pytest.param(lambda w: {"configurationId": w.cfg, "executionMode": None}, 400, "INVALID_TYPE",
                 "/executionMode", id="null-mode"),
    pytest.param(lambda w: {"configurationId": w.cfg, "harnessAuth": {"method": "oauth"}}, 400, "INVALID_VALUE",
                 "/harnessAuth/method", id="oauth"),
    pytest.param(lambda w: {"configurationId": w.cfg, "harnessAuth": {"method": "api_key", "source": {
        "kind": "secret", "namespaceId": w.other.id, "id": w.sec}}}, 400, "INVALID_VALUE",
        "/harnessAuth/source/namespaceId", id="foreign-namespace"),
    pytest.param(lambda w: {"configurationId": w.cfg, "backendId": ""}, 400, "INVALID_FORMAT", "/backendId",
                 id="backend-empty"),
    pytest.param(lambda w: {"configurationId": w.cfg, "pluginApprovers": [{"channel": "s"}]}, 400, "REQUIRED",
                 "/pluginApprovers/0/id", id="approver"),
    pytest.param(lambda w: {"configurationId": w.cfg, "plugins": {"clawhub:slack": {}}}, 400, "REQUIRED",
                 "/plugins/clawhub:slack/enabled", id="plugin-shape"),
    pytest.param(lambda w: {"configurationId": w.cfg, "plugins": {"clawhub:slack": {"enabled": True}}}, 400,
                 "INVALID_VALUE", "/plugins/clawhub:slack", id="plugin-unknown"),
    pytest.param(lambda w: {"configurationId": w.cfg, "plugins": None}, 400, "INVALID_TYPE", "/plugins",
                 id="plugins-null"),
    pytest.param(lambda w: {"configurationId": w.cfg, "repositoryBindings": [{}]}, 400, "REQUIRED",
                 "/repositoryBindings/0/repositoryRef", id="repos"),
    pytest.param(lambda w: {"configurationId": UNKNOWN_CFG}, 404, None, None, id="unknown-cfg"),
    pytest.param(lambda w: {"configurationId": ConfigurationFactory(namespace=w.other).id}, 404, None, None,
                 id="foreign-cfg"),
    pytest.param(lambda w: {"configurationId": w.cfg, "harnessAuth": w.api_key(UNKNOWN_SEC)}, 404, None, None,
                 id="unknown-secret"),
    pytest.param(lambda w: {"configurationId": w.cfg, "backendId": "chatgpt"}, 404, None, None, id="backend"),
]


@pytest.mark.parametrize(("make_body", "status", "code", "path"), BAD_PATCH)
def test_patch_rejects_bad_input_and_changes_nothing(api, w, agent, make_body, status, code, path):
    body = make_body(w)
    before, stored = state(), Agent.objects.filter(id=agent["id"]).values().get()
    response = api.patch(f"{w.agents_url}/{agent['id']}", body)
    assert response.status == status, response.body
    if code is not None:
        assert {"code": code, "path": path} in response.body["error"]["details"]
    assert state() == before
    assert Agent.objects.filter(id=agent["id"]).values().get() == stored


def test_patch_unknown_agent_is_404(api, w):
    assert api.patch(f"{w.agents_url}/{UNKNOWN_AGT}", {"configurationId": w.cfg}).status == 404
    foreign = AgentFactory(namespace=w.other)
    assert api.patch(f"{w.agents_url}/{foreign.id}", {"configurationId": w.cfg}).status == 404


def test_patch_of_deleting_agent_conflicts(api, w, agent):
    Agent.objects.filter(id=agent["id"]).update(status="deleting")
    before = state()
    response = api.patch(f"{w.agents_url}/{agent['id']}", {"configurationId": w.cfg2})
    assert (response.status, response.error_code) == (409, "AGENT_DELETING")
    assert state() == before
    assert api.get(f"{w.agents_url}/{agent['id']}").data["status"] == "deleting"


DENIED_PATCH = [
    pytest.param(lambda w: ["read:configuration", "operate:secret"], lambda w: {}, "update:agent", id="no-update"),
    pytest.param(lambda w: [*ALL_AGENT_PERMISSIONS, "operate:secret"], lambda w: {}, "read:configuration",
                 id="no-configuration-read"),
    # The already-bound Secret is re-authorized even when harnessAuth is omitted.
    pytest.param(lambda w: [*ALL_AGENT_PERMISSIONS, "read:configuration"], lambda w: {}, "operate:secret",
                 id="no-operate-on-bound-secret"),
    pytest.param(lambda w: [*ALL_AGENT_PERMISSIONS, "read:configuration"],
                 lambda w: {"harnessAuth": w.api_key(w.sec2)}, "operate:secret", id="no-operate-on-new-secret"),
]


@pytest.mark.parametrize(("permissions", "extra", "denied"), DENIED_PATCH)
def test_patch_denied_without_each_referenced_grant(w, agent, permissions, extra, denied):
    _principal, client = caller(*permissions(w), namespace=w.ns)
    before, stored = state(), Agent.objects.filter(id=agent["id"]).values().get()
    response = client.patch(f"{w.agents_url}/{agent['id']}", {"configurationId": w.cfg2, **extra(w)})
    assert response.status == 403
    assert state() == after_one_denial(before)
    assert Agent.objects.filter(id=agent["id"]).values().get() == stored
    denial = AuditEvent.objects.filter(kind="authorization_denial").latest("occurred_at")
    assert denial.details["permission"] == denied


def test_patch_clearing_harness_auth_needs_no_secret_grant(w, agent):
    _principal, client = caller("update:agent", "read:configuration", namespace=w.ns)
    response = client.patch(f"{w.agents_url}/{agent['id']}", {"configurationId": w.cfg2, "harnessAuth": None})
    assert response.status == 200
    assert response.data["harnessAuth"] is None


def test_patch_needs_read_on_the_resulting_configuration(w, agent):
    principal, client = caller("update:agent", "operate:secret", namespace=w.ns)
    grant(principal, "read:configuration", namespace=w.ns, resource_kind="configuration", resource_id=w.cfg)
    assert client.patch(f"{w.agents_url}/{agent['id']}", {"configurationId": w.cfg2}).status == 403
    assert client.patch(f"{w.agents_url}/{agent['id']}", {"configurationId": w.cfg}).status == 200


# --- POST /agents/{agt}/secret-access -------------------------------------------------------


def test_secret_access_grant_route(api, w, agent):
    url = f"{w.agents_url}/{agent['id']}/secret-access"
    before = state()
    response = api.post(url, {"secretIds": [w.sec, w.sec2]})
    assert response.status == 200, response.body
    assert response.data == {"agentId": agent["id"], "servicePrincipalId": agent["servicePrincipalId"],
                             "secretIds": [w.sec, w.sec2]}
    assert state() == {**before, "roles": before["roles"] + 1, "bindings": before["bindings"] + 2,
                       "audit": before["audit"] + 1}
    again = api.post(url, {"secretIds": [w.sec2]})
    assert again.status == 200
    assert again.data["secretIds"] == [w.sec2]
    assert state()["bindings"] == before["bindings"] + 2


BAD_GRANT = [
    pytest.param({}, "REQUIRED", "/secretIds", id="missing"),
    pytest.param({"secretIds": []}, "INVALID_VALUE", "/secretIds", id="empty"),
    pytest.param({"secretIds": "sec"}, "INVALID_TYPE", "/secretIds", id="string"),
    pytest.param({"secretIds": [1]}, "INVALID_TYPE", "/secretIds/0", id="int-item"),
    pytest.param({"secretIds": ["nope"]}, "INVALID_FORMAT", "/secretIds/0", id="malformed"),
    pytest.param({"secretIds": [UNKNOWN_SEC, UNKNOWN_SEC]}, "INVALID_VALUE", "/secretIds/1", id="duplicate"),
    pytest.param({"secretIds": [f"sec_00000000-0000-4000-8000-{i:012d}" for i in range(65)]}, "TOO_LONG",
                 "/secretIds", id="too-many"),
    pytest.param({"secretIds": [UNKNOWN_SEC], "role": "admin"}, "UNKNOWN_FIELD", "/role", id="unknown-field"),
]


@pytest.mark.parametrize(("body", "code", "path"), BAD_GRANT)
def test_secret_access_rejects_bad_input(api, w, agent, body, code, path):
    before = state()
    response = api.post(f"{w.agents_url}/{agent['id']}/secret-access", body)
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), response.body
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert state() == before


def test_secret_access_missing_things_are_404(api, w, agent):
    foreign_secret = SecretFactory(namespace=w.other).id
    before = state()
    for agent_id, secret_id in [(agent["id"], UNKNOWN_SEC), (agent["id"], foreign_secret), (UNKNOWN_AGT, w.sec)]:
        response = api.post(f"{w.agents_url}/{agent_id}/secret-access", {"secretIds": [secret_id]})
        assert (response.status, response.error_code) == (404, "NOT_FOUND")
    assert state() == before


def test_secret_access_on_deleting_agent_conflicts(api, w, agent):
    Agent.objects.filter(id=agent["id"]).update(status="deleting")
    before = state()
    response = api.post(f"{w.agents_url}/{agent['id']}/secret-access", {"secretIds": [w.sec]})
    assert (response.status, response.error_code) == (409, "AGENT_DELETING")
    assert state() == before


@pytest.mark.parametrize(("permissions", "denied"), [
    pytest.param(("administer:installation", "administer:agent", "read:namespace"), "update:agent",
                 id="administrator-without-grants"),
    pytest.param(("operate:secret",), "update:agent", id="no-agent-update"),
    pytest.param(("update:agent", "read:secret"), "operate:secret", id="no-secret-operate"),
])
def test_secret_access_denials_are_audited(w, agent, permissions, denied):
    principal, client = caller()
    grant(principal, *permissions)
    before = state()
    response = client.post(f"{w.agents_url}/{agent['id']}/secret-access", {"secretIds": [w.sec]})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert state() == after_one_denial(before)
    denial = AuditEvent.objects.filter(kind="authorization_denial").latest("occurred_at")
    assert (denial.actor_id, denial.details["permission"]) == (principal.id, denied)


def test_secret_access_with_exactly_the_needed_grants(w, agent):
    principal, client = caller()
    grant(principal, "update:agent", namespace=w.ns, resource_kind="agent", resource_id=agent["id"])
    grant(principal, "operate:secret", namespace=w.ns, resource_kind="secret", resource_id=w.sec)
    response = client.post(f"{w.agents_url}/{agent['id']}/secret-access", {"secretIds": [w.sec]})
    assert response.status == 200
    denied = client.post(f"{w.agents_url}/{agent['id']}/secret-access", {"secretIds": [w.sec, w.sec2]})
    assert denied.status == 403
