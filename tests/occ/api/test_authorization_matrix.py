"""Every route, for every kind of caller: no key, bad keys, another Namespace's key, a reader,
an administrator. Refusals change nothing; 401s write no audit, 403s exactly one denial."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db.models import Max
from django.utils import timezone

from occ.commands.provisioning import ProvisionCommand
from occ.drivers.plugins.registry import forget_plugin_drivers
from occ.drivers.secrets import get_secret_driver
from occ.iam.actor import Actor, Source
from occ.iam.keys import create_key_record
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    AgentRevision,
    AuditEvent,
    AuditKind,
    Configuration,
    ControllerWork,
    EncryptedSecretValue,
    Namespace,
    Principal,
    Role,
    Secret,
    SecretBinding,
    ServiceKey,
)
from occ.models.work import revision_reconcile_key
from occ.services.provisioning import provision_admit
from tests.conftest import ApiClient, mark_namespace_ready
from tests.factories import (
    AgentFactory,
    ConfigurationFactory,
    NamespaceFactory,
    SecretFactory,
    grant,
    key_for,
    service_principal,
)
from tests.fakes.fake_slack import _fake_slack_server, fake_slack  # noqa: F401 (fixtures)

READ_ALL_IN_NAMESPACE = ("read:namespace", "read:configuration", "read:secret", "read:agent", "read:agent_revision")


@dataclass
class Route:
    method: str
    path: str
    admin: int
    reader: int = 403
    other_namespace: int = 403
    body: dict[str, Any] | None = None
    anonymous: int = 401
    id: str = field(default="")
    audited: bool = True  # a successful non-GET writes audit (diagnostics is a read: it does not)
    settings: dict[str, Any] = field(default_factory=dict)  # Django settings for this row only

    def render(self, world: dict[str, str]) -> tuple[str, dict[str, Any] | None]:
        body = _fill(self.body, world) if self.body is not None else None
        return self.path.format(**world), body


def _fill(value: Any, world: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**world)
    if isinstance(value, dict):
        return {k: _fill(v, world) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, world) for v in value]
    return value


NS = "/namespaces/{ns}"
ROUTES = [
    Route("GET", "/installation", 200),
    Route("GET", "/namespaces", 200, reader=200, other_namespace=200),
    Route("POST", "/namespaces", 201, body={"name": "matrix-new"}),
    Route("GET", NS, 200, reader=200),
    Route("DELETE", "/namespaces/{empty_ns}", 202),
    Route("POST", NS + "/configurations", 201, body={"kind": "agent", "values": {}}),
    Route("GET", NS + "/configurations/{cfg}", 200, reader=200),
    Route("PATCH", NS + "/configurations/{cfg}", 200, body={"values": {"agents": {}}}),
    Route("DELETE", NS + "/configurations/{cfg}", 204),
    Route("GET", NS + "/secrets", 200, reader=200),
    Route("POST", NS + "/secrets", 201, body={"name": "matrix-secret", "value": "v"}),
    Route("GET", NS + "/secrets/{sec}", 200, reader=200),
    Route("PATCH", NS + "/secrets/{sec}", 200, body={"value": "v2"}),
    Route("DELETE", NS + "/secrets/{sec}", 204),
    Route("GET", NS + "/agents", 200, reader=200),
    Route("POST", NS + "/agents", 201, body={"name": "matrix-agent", "configurationId": "{cfg}"}),
    Route("GET", NS + "/agents/{agt}", 200, reader=200),
    Route("PATCH", NS + "/agents/{agt}", 200, body={"configurationId": "{agt_cfg}"}),
    Route("POST", NS + "/agents/{agt}/secret-access", 200, body={"secretIds": ["{sec}"]}),
    Route("POST", NS + "/agents/provision", 202,
          body={"requestId": "req_matrix-provision", "name": "matrix-provisioned",
                "configuration": {"kind": "agent", "values": {}},
                "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": "{ns}",
                                                                "id": "{harness}"}}}),
    Route("GET", NS + "/agents/provision/{provisioning}", 200),
    Route("POST", NS + "/agents/provision/{provisioning}/retry", 202),
    Route("POST", NS + "/channel-directory/lookup", 200, body={"secretId": "{slack_sec}", "kind": "users"},
          audited=False),  # a read: its audit event is an access, not a mutation
    # Authorized, then refused before any request: the named endpoint is not on the allowlist.
    Route("POST", NS + "/agents/models", 400, audited=False,
          body={"provider": "openai", "apiKey": "matrix-model-key", "baseUrl": "http://127.0.0.1:9/v1"}),
    # Plugin discovery with no PluginDriver selected: authorized, then 501 before anything is read.
    *[Route(method, NS + path, 501, audited=False, body=body, settings={"OCC_PLUGIN_DRIVER": ""})
      for method, path, body in [
          ("POST", "/agents/plugins", {"secretRef": {"kind": "secret", "namespaceId": "{ns}", "id": "{sec}"}}),
          ("POST", "/agents/plugins/details", {"accessToken": "at-matrix-token-1234", "pluginId": "x"}),
          ("POST", "/agents/{agt}/plugins", {}),
          ("POST", "/agents/{agt}/plugins/details", {"pluginId": "x"}),
          ("GET", "/agents/{agt}/plugins/capabilities", None)]],
    Route("GET", NS + "/agents/{agt}/revisions", 200, reader=200),
    Route("GET", NS + "/agents/{agt}/revisions/{rev}", 200, reader=200),
    Route("GET", NS + "/agents/{agt}/revisions/{rev}/diff", 200, reader=200),
    # Authorized, then refused: the world's revision has an empty snapshot, which no longer deploys.
    Route("POST", NS + "/agents/{agt}/revisions/{rev}/redeploy", 409, audited=False),
    Route("POST", NS + "/agents/{agt}/deploy", 202),
    Route("GET", NS + "/agents/{agt}/deployments/{rev}", 200, reader=200),
    Route("POST", NS + "/agents/{agt}/deployments/{rev}/diagnostics", 200, audited=False),
    # Authorized, then refused: the revision is not the Agent's active one, its work not failed.
    Route("POST", NS + "/agents/{agt}/deployments/{rev}/retry-finalization", 409, audited=False),
    Route("POST", NS + "/agents/{agt}/stop", 202),
    # Authorized, then refused: the Agent never ran (its one revision's work is still queued).
    Route("POST", NS + "/agents/{agt}/start", 409, audited=False),
    Route("DELETE", NS + "/agents/{agt}", 202),
    Route("GET", NS + "/iam/roles", 200),
    Route("POST", NS + "/iam/roles", 201,
          body={"name": "matrix-role", "permissions": [{"action": "read", "resourceKind": "agent"}]}),
    Route("GET", NS + "/iam/roles/{role}", 200),
    Route("DELETE", NS + "/iam/roles/{role}", 204),
    Route("GET", NS + "/iam/access-bindings", 200),
    Route("POST", NS + "/iam/access-bindings", 201,
          body={"subjectKind": "identity", "subjectId": "{ns_sp}", "roleId": "{role}", "resourceKind": "agent",
                "resourceId": "{agt}"}),
    Route("GET", NS + "/iam/access-bindings/{binding}", 200),
    Route("DELETE", NS + "/iam/access-bindings/{binding}", 204),
    Route("GET", NS + "/iam/service-principals", 200),
    Route("POST", NS + "/iam/service-principals", 201, body={"name": "matrix-sp"}),
    Route("GET", NS + "/iam/service-principals/{ns_sp}", 200),
    Route("GET", "/api/auth/session", 200, reader=200, other_namespace=200, anonymous=200),
    Route("POST", "/api/auth/service-keys", 201,
          body={"servicePrincipalId": "{ns_sp}", "namespaceId": "{ns}", "name": "matrix-key"}),
    Route("DELETE", "/api/auth/service-keys/{revocable_key}", 200),
    Route("POST", "/api/auth/accounts", 201,
          body={"username": "matrix-person", "password": "a-long-matrix-password-1", "roleId": "{admin_role}"}),
]
for route in ROUTES:
    route.id = f"{route.method} {route.path}"

CALLERS = ["anonymous", "invalid", "expired", "revoked", "other_namespace", "reader", "administrator"]


@pytest.fixture
def world(bootstrap, fake_compute, fake_slack) -> dict[str, Any]:  # noqa: F811
    ns = Namespace.objects.get(name="default")
    mark_namespace_ready(ns)
    other = NamespaceFactory(name="other")
    empty = NamespaceFactory(name="empty")
    secret = SecretFactory(namespace=ns, name="matrix-existing")
    slack_token = SecretFactory(namespace=ns, name="matrix-slack-token")
    get_secret_driver().put(slack_token.backend_name, "xoxb-matrix-token")
    fake_slack.add_token("xoxb-matrix-token")
    cfg = ConfigurationFactory(namespace=ns)
    # Deployable: a harness Secret its own principal may operate.
    harness = SecretFactory(namespace=ns, name="matrix-harness")
    agent = AgentFactory(namespace=ns, harness_auth_method="api_key", harness_secret=harness)
    grant(agent.service_principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id=harness.id)
    revision = AgentRevision.objects.create(
        namespace=ns, agent=agent, number=1, configuration_id=agent.configuration_id,
        configuration_generation=1, snapshot={}, created_by=bootstrap.key.principal_id,
    )
    now = timezone.now()
    ControllerWork.objects.create(
        idempotency_key=revision_reconcile_key(revision.id), job="revision", namespace=ns, agent_id=agent.id,
        revision_id=revision.id, actor_id=bootstrap.key.principal_id, available_at=now, created_at=now,
        updated_at=now,
    )
    provisioning = _failed_provisioning(bootstrap, ns, harness)
    ns_sp = service_principal("matrix-ns-sp", namespace=ns)
    role = Role.objects.create(namespace=ns, name="matrix-free-role", permissions=["read:agent"])
    bound_role = Role.objects.create(namespace=ns, name="matrix-bound-role", permissions=["read:configuration"])
    binding = AccessBinding.objects.create(principal=ns_sp, role=bound_role, namespace=ns,
                                           resource_kind="configuration", resource_id=cfg.id)
    revocable, _ = create_key_record(principal_id=bootstrap.key.principal_id, namespace_id=None, name="revocable",
                                     expires_at=timezone.now() + timedelta(days=1), created_by="test")
    admin_role = Role.objects.get(name="administrator", namespace__isnull=True)

    reader = service_principal("matrix-reader")
    grant(reader, *READ_ALL_IN_NAMESPACE, namespace=ns)
    outsider = service_principal("matrix-outsider", namespace=other)
    grant(outsider, *READ_ALL_IN_NAMESPACE, "update:configuration", "delete:configuration", "create:secret",
          "update:secret", "delete:secret", "create:agent", "update:agent", namespace=other)
    _, expired_token = create_key_record(
        principal_id=bootstrap.key.principal_id, namespace_id=None, name="expired",
        expires_at=timezone.now() - timedelta(seconds=1), created_by="test")
    gone, gone_token = create_key_record(
        principal_id=bootstrap.key.principal_id, namespace_id=None, name="gone",
        expires_at=timezone.now() + timedelta(days=1), created_by="test")
    gone.delete()
    keys = {
        "anonymous": None,
        "invalid": "occ_sk_" + "x" * 43,
        "expired": expired_token,
        "revoked": gone_token,
        "other_namespace": key_for(outsider, namespace=other),
        "reader": key_for(reader),
        "administrator": bootstrap.key_token,
    }
    ids = {
        "ns": ns.id, "empty_ns": empty.id, "cfg": cfg.id, "sec": secret.id, "agt": agent.id,
        "agt_cfg": agent.configuration_id, "rev": revision.id, "role": role.id, "binding": binding.id,
        "ns_sp": ns_sp.id, "revocable_key": revocable.id, "admin_role": admin_role.id, "slack_sec": slack_token.id,
        "harness": harness.id, "provisioning": provisioning,
    }
    return {"ids": ids, "keys": keys}


def _failed_provisioning(bootstrap, ns: Namespace, harness: Secret) -> str:
    """A provisioning the administrator started that failed: readable and retryable by them
    only (its Agent does not exist yet)."""
    admin = Actor(principal=bootstrap.key.principal, source=Source.API)
    row, _ = provision_admit(actor=admin, namespace_id=ns.id, command=ProvisionCommand.model_validate({
        "requestId": "req_matrix-failed", "name": "matrix-failed", "configuration": {"kind": "agent", "values": {}},
        "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ns.id, "id": harness.id}},
    }))
    ControllerWork.objects.filter(pk=row.pk).update(state="failed_permanent", completed_at=timezone.now(),
                                                    reason_code="DEPENDENCY_UNAVAILABLE")
    return row.work_id


def _state() -> tuple[Any, ...]:
    """Everything a refused request must leave untouched."""
    counted = (Namespace, Configuration, SecretBinding, Secret, Agent, AgentRevision, ControllerWork, Principal,
               Role, AccessBinding, ServiceKey, get_user_model())
    stamps = tuple(
        model.objects.aggregate(m=Max("updated_at"))["m"]
        for model in (Namespace, Configuration, Secret, Agent, ControllerWork, AgentProvisioningWork)
    )
    values = tuple(EncryptedSecretValue.objects.order_by("pk").values_list("pk", "ciphertext"))
    return tuple(model.objects.count() for model in counted) + stamps + values


def _expected(route: Route, caller: str) -> int:
    if caller == "administrator":
        return route.admin
    if caller == "reader":
        return route.reader
    if caller == "other_namespace":
        return route.other_namespace
    if caller == "anonymous":
        return route.anonymous
    return 401


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.id)
def test_route_authorization(world, route: Route, caller: str, settings):
    for name, value in route.settings.items():
        setattr(settings, name, value)
    forget_plugin_drivers()
    path, body = route.render(world["ids"])
    client = ApiClient(world["keys"][caller])
    before_state = _state()
    before_audit = AuditEvent.objects.count()
    response = client.request(route.method, path, body, key=world["keys"][caller] or None)
    expected = _expected(route, caller)
    assert response.status == expected, (response.status, response.body)
    if expected == 401:
        assert response.error_code == "UNAUTHENTICATED"
    if expected in (401, 403):
        assert _state() == before_state
        denials = AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL).count()
        assert AuditEvent.objects.count() - before_audit == (1 if expected == 403 else 0)
        assert denials == (1 if expected == 403 else 0)
    elif route.method != "GET" and route.audited:
        assert AuditEvent.objects.filter(kind=AuditKind.MUTATION).count() > 0
        assert AuditEvent.objects.count() > before_audit


def test_lists_show_only_what_the_caller_may_read(world):
    outsider = ApiClient(world["keys"]["other_namespace"])
    assert [ns["name"] for ns in outsider.get("/namespaces").data] == ["other"]
    reader = ApiClient(world["keys"]["reader"])
    assert [ns["id"] for ns in reader.get("/namespaces").data] == [world["ids"]["ns"]]
    assert [a["id"] for a in reader.get(f"/namespaces/{world['ids']['ns']}/agents").data] == [world["ids"]["agt"]]
