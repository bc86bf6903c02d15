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
from occ.iam.roles import AGENT_USER, DEVELOPER, NAMESPACE_ADMINISTRATOR, VIEWER
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    AgentRevision,
    AgentSession,
    AuditEvent,
    AuditKind,
    Budget,
    Configuration,
    ControllerWork,
    EncryptedSecretValue,
    Namespace,
    Preset,
    Principal,
    Role,
    Secret,
    SecretBinding,
    ServiceKey,
)
from occ.models.work import revision_reconcile_key
from occ.openclaw.presets import STANDARD_OPENCLAW
from occ.services.provisioning import provision_admit
from tests.conftest import ApiClient, mark_namespace_ready
from tests.factories import (
    AgentFactory,
    ConfigurationFactory,
    NamespaceFactory,
    SecretFactory,
    grant,
    human,
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
    # Callers bound on the Namespace to a built-in Role (docs/access.md); a Viewer gets what
    # ``reader`` gets (the same permissions).
    agent_user: int | None = None  # None: as ``reader``
    developer: int | None = None  # None: as ``reader``
    namespace_administrator: int | None = None  # None: as ``developer``
    # Callers with nothing but a share of the world's Agent (a built-in Role bound on exactly it):
    # "can chat" gets what an Agent user of the whole Namespace gets (the Namespace has no other
    # Agent); "can deploy" what ``shared_deploy`` says (None: as ``developer``).
    shared_deploy: int | None = None
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
    # A list: filtered to what the caller may read, so a Namespace reader gets a page (maybe empty).
    Route("GET", NS + "/configurations", 200, reader=200),
    Route("POST", NS + "/configurations", 201, developer=201, shared_deploy=403, body={"kind": "agent", "values": {}}),
    Route("GET", NS + "/configurations/{cfg}", 200, reader=200, agent_user=403, shared_deploy=403),
    Route("PATCH", NS + "/configurations/{cfg}", 200, developer=200, shared_deploy=403,
          body={"values": {"agents": {}}}),
    Route("DELETE", NS + "/configurations/{cfg}", 204, namespace_administrator=204),
    # Presets: no built-in team Role holds a preset permission yet; the list is filtered per item.
    Route("GET", NS + "/presets", 200, reader=200),
    Route("POST", NS + "/presets", 201, body={"name": "matrix-preset"}),
    Route("GET", NS + "/presets/{pre}", 200),
    Route("PATCH", NS + "/presets/{pre}", 200, body={"name": "matrix-renamed"}),
    Route("POST", NS + "/presets/{pre}/render", 200, body={"variables": {"name": "matrix-bot"}}, audited=False),
    Route("DELETE", NS + "/presets/{pre}", 204),
    # Save as preset: preset:create with read on the Agent and its Configuration.
    Route("POST", NS + "/agents/{agt}/save-as-preset", 201, body={"name": "matrix-saved"}),
    Route("GET", NS + "/secrets", 200, reader=200),
    Route("POST", NS + "/secrets", 201, namespace_administrator=201, body={"name": "matrix-secret", "value": "v"}),
    Route("GET", NS + "/secrets/{sec}", 200, reader=200, agent_user=403, shared_deploy=403),
    Route("PATCH", NS + "/secrets/{sec}", 200, namespace_administrator=200, body={"value": "v2"}),
    Route("DELETE", NS + "/secrets/{sec}", 204, namespace_administrator=204),
    Route("GET", NS + "/agents", 200, reader=200),
    Route("POST", NS + "/agents", 201, developer=201, shared_deploy=403,
          body={"name": "matrix-agent", "configurationId": "{cfg}"}),
    Route("GET", NS + "/agents/{agt}", 200, reader=200),
    # The console's Runtime panel: operate:agent, which a Namespace reader does not hold.
    Route("GET", NS + "/agents/{agt}/runtime", 200, developer=200),
    # The console's Logs tab: read_logs:agent (a Developer holds it); a view is an audited access.
    Route("GET", NS + "/agents/{agt}/logs", 200, developer=200),
    # The console's Chat tab: invoke:agent (an Agent User and a Developer hold it); this Agent was
    # never deployed, so an allowed caller is told so (409), and nothing is audited but a denial.
    Route("POST", NS + "/agents/{agt}/chat", 409, agent_user=409, developer=409, audited=False,
          body={"messages": [{"role": "user", "content": "hello"}]}),
    # A "can deploy" share updates the Agent but reads no Configuration and uses no Secret of the
    # Namespace: naming one is refused.
    Route("PATCH", NS + "/agents/{agt}", 200, developer=200, shared_deploy=403, body={"configurationId": "{agt_cfg}"}),
    Route("POST", NS + "/agents/{agt}/secret-access", 200, developer=200, shared_deploy=403,
          body={"secretIds": ["{sec}"]}),
    Route("POST", NS + "/agents/provision", 202, developer=202, shared_deploy=403,
          body={"requestId": "req_matrix-provision", "name": "matrix-provisioned",
                "configuration": {"kind": "agent", "values": {}},
                "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": "{ns}",
                                                                "id": "{harness}"}}}),
    Route("GET", NS + "/agents/provision/{provisioning}", 200),
    Route("POST", NS + "/agents/provision/{provisioning}/retry", 202),
    # A read: its audit event is an access, not a mutation.
    Route("POST", NS + "/channel-directory/lookup", 200, developer=200, shared_deploy=403,
          body={"secretId": "{slack_sec}", "kind": "users"}, audited=False),
    # Authorized, then refused before any request: the named endpoint is not on the allowlist.
    Route("POST", NS + "/agents/models", 400, developer=400, shared_deploy=403, audited=False,
          body={"provider": "openai", "apiKey": "matrix-model-key", "baseUrl": "http://127.0.0.1:9/v1"}),
    # Plugin discovery with no PluginDriver selected: authorized, then 501 before anything is read.
    *[Route(method, NS + path, 501, developer=501, audited=False, body=body, settings={"OCC_PLUGIN_DRIVER": ""},
            shared_deploy=403 if "{agt}" not in path else None)
      for method, path, body in [
          ("POST", "/agents/plugins", {"secretRef": {"kind": "secret", "namespaceId": "{ns}", "id": "{sec}"}}),
          ("POST", "/agents/plugins/details", {"accessToken": "at-matrix-token-1234", "pluginId": "x"}),
          ("POST", "/agents/{agt}/plugins", {}),
          ("POST", "/agents/{agt}/plugins/details", {"pluginId": "x"}),
          ("GET", "/agents/{agt}/plugins/capabilities", None)]],
    # Repository options with no RepositoryDriver selected: authorized, then 503 before anything is asked.
    Route("GET", NS + "/agents/repository-options", 503, developer=503, shared_deploy=403,
          settings={"OCC_REPOSITORY_DRIVER": ""}),
    Route("GET", NS + "/agents/{agt}/repository-options", 503, developer=503,
          settings={"OCC_REPOSITORY_DRIVER": ""}),
    Route("GET", NS + "/agents/{agt}/revisions", 200, reader=200),
    Route("GET", NS + "/agents/{agt}/revisions/{rev}", 200, reader=200, agent_user=403),
    Route("GET", NS + "/agents/{agt}/revisions/{rev}/diff", 200, reader=200, agent_user=403),
    # Authorized, then refused: the world's revision has an empty snapshot, which no longer deploys.
    # A "can deploy" share holds deploy:agent, but a deploy also needs read:configuration on what
    # it deploys and operate:secret on each Secret delivered, which a share of the Agent alone does
    # not give: refused (an over-refusal, never a bypass; docs/access.md says so).
    Route("POST", NS + "/agents/{agt}/revisions/{rev}/redeploy", 409, developer=409, shared_deploy=403,
          audited=False),
    Route("POST", NS + "/agents/{agt}/deploy", 202, developer=202, shared_deploy=403),
    Route("GET", NS + "/agents/{agt}/deployments/{rev}", 200, reader=200, agent_user=403),
    Route("POST", NS + "/agents/{agt}/deployments/{rev}/diagnostics", 200, developer=200, audited=False),
    # Authorized, then refused: the revision is not the Agent's active one, its work not failed.
    Route("POST", NS + "/agents/{agt}/deployments/{rev}/retry-finalization", 409, developer=409, audited=False),
    Route("POST", NS + "/agents/{agt}/stop", 202, developer=202),
    # Authorized, then refused: the Agent never ran (its one revision's work is still queued).
    Route("POST", NS + "/agents/{agt}/start", 409, developer=409, audited=False),
    Route("DELETE", NS + "/agents/{agt}", 202, namespace_administrator=202),
    # A Namespace administrator manages the Namespace's access (administer:namespace, docs/access.md).
    Route("GET", NS + "/iam/roles", 200, namespace_administrator=200),
    Route("POST", NS + "/iam/roles", 201, namespace_administrator=201,
          body={"name": "matrix-role", "permissions": [{"action": "read", "resourceKind": "agent"}]}),
    Route("GET", NS + "/iam/roles/{role}", 200, namespace_administrator=200),
    Route("DELETE", NS + "/iam/roles/{role}", 204, namespace_administrator=204),
    Route("GET", NS + "/iam/access-bindings", 200, namespace_administrator=200),
    Route("POST", NS + "/iam/access-bindings", 201, namespace_administrator=201,
          body={"subjectKind": "identity", "subjectId": "{ns_sp}", "roleId": "{role}", "resourceKind": "agent",
                "resourceId": "{agt}"}),
    Route("GET", NS + "/iam/access-bindings/{binding}", 200, namespace_administrator=200),
    Route("DELETE", NS + "/iam/access-bindings/{binding}", 204, namespace_administrator=204),
    Route("GET", NS + "/iam/service-principals", 200, namespace_administrator=200),
    Route("POST", NS + "/iam/service-principals", 201, namespace_administrator=201, body={"name": "matrix-sp"}),
    Route("GET", NS + "/iam/service-principals/{ns_sp}", 200, namespace_administrator=200),
    # What the caller may do: asking needs read on the Namespace (or the Agent, Configuration,
    # Secret) itself; an Agent user reads no Configuration or Secret.
    Route("GET", NS + "/permissions", 200, reader=200, audited=False),
    Route("GET", NS + "/agents/{agt}/permissions", 200, reader=200, audited=False),
    # Share this Agent: administer:agent on it, which no reader, Agent user or Developer holds; a
    # Namespace administrator does.
    Route("GET", NS + "/agents/{agt}/shares", 200, namespace_administrator=200, audited=False),
    Route("GET", NS + "/agents/{agt}/shares/subjects", 200, namespace_administrator=200, audited=False),
    Route("POST", NS + "/agents/{agt}/shares", 200, namespace_administrator=200,
          body={"subjectId": "{person}", "level": "deploy"}),
    Route("DELETE", NS + "/agents/{agt}/shares/{share}", 204, namespace_administrator=204),
    Route("GET", NS + "/configurations/{cfg}/permissions", 200, reader=200, agent_user=403, shared_deploy=403,
          audited=False),
    Route("GET", NS + "/secrets/{sec}/permissions", 200, reader=200, agent_user=403, shared_deploy=403,
          audited=False),
    # Usage: namespace:read, then each Agent's rows with agent:read on it (a share sees its Agent's).
    Route("GET", NS + "/usage", 200, reader=200),
    Route("GET", NS + "/budgets", 200, reader=200),
    # Budgets: administrators only (a pause acts on the whole Namespace's Agents).
    Route("PUT", NS + "/budgets", 200, body={"period": "month", "limit": "25"}),
    Route("POST", NS + "/budgets/{bud}/override", 200),
    Route("DELETE", NS + "/budgets/{bud}", 204),
    # Sessions (issue 29): the fleet list is filtered per Agent (read_conversations:agent); one
    # Agent's list and a transcript need it on the Agent (a Namespace administrator and the
    # administrator hold it). The world's Agent does not run: a transcript is refused (409) before
    # anything is read or audited, and so is a decision on an approval (decide_approvals:agent: a
    # Developer holds it too).
    Route("GET", "/sessions", 200, reader=200, other_namespace=200),
    Route("GET", NS + "/agents/{agt}/sessions", 200, namespace_administrator=200),
    Route("GET", NS + "/agents/{agt}/sessions/{ses}", 409, namespace_administrator=409),
    Route("GET", "/approvals", 200, reader=200, other_namespace=200),
    Route("POST", NS + "/agents/{agt}/approvals/{approval_kind}/{approval}", 409, developer=409, audited=False,
          body={"decision": "approve"}),
    # The Installation's own service principals: installation:administer only, as on the console.
    Route("GET", "/installation/service-principals", 200),
    Route("POST", "/installation/service-principals", 201, body={"name": "matrix-installation-sp"}),
    Route("GET", "/installation/service-principals/{inst_sp}", 200),
    Route("DELETE", "/installation/service-principals/{inst_sp}", 204),
    Route("GET", "/api/auth/session", 200, reader=200, other_namespace=200, anonymous=200),
    Route("POST", "/api/auth/service-keys", 201,
          body={"servicePrincipalId": "{ns_sp}", "namespaceId": "{ns}", "name": "matrix-key"}),
    Route("GET", "/api/auth/service-keys?servicePrincipalId={ns_sp}&namespaceId={ns}", 200),
    Route("DELETE", "/api/auth/service-keys/{revocable_key}", 200),
    Route("POST", "/api/auth/accounts", 201,
          body={"username": "matrix-person", "password": "a-long-matrix-password-1", "roleId": "{admin_role}"}),
    Route("GET", "/api/auth/accounts", 200),
    Route("GET", "/api/auth/roles", 200),
    Route("GET", "/api/auth/accounts/{person}", 200),
    Route("POST", "/api/auth/accounts/{person}/disable", 200),
    Route("POST", "/api/auth/accounts/{person}/enable", 200, audited=False),  # already enabled: nothing to do
    Route("POST", "/api/auth/accounts/{person}/password", 200, body={"password": "a-long-matrix-password-2"}),
    Route("DELETE", "/api/auth/accounts/{person}", 204),
    # A person's own password: a service key has none, whoever's it is (409, nothing changes).
    Route("POST", "/api/auth/password", 409, reader=409, other_namespace=409, audited=False,
          body={"currentPassword": "a-long-matrix-password-1", "newPassword": "a-long-matrix-password-2"}),
]
for route in ROUTES:
    route.id = f"{route.method} {route.path}"

CALLERS = ["anonymous", "invalid", "expired", "revoked", "other_namespace", "reader", "administrator",
           "viewer", "agent_user", "developer", "namespace_administrator", "shared_chat", "shared_deploy"]


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
    session = AgentSession.objects.create(namespace=ns, agent=agent, key="agent:main:main", last_activity_at=now,
                                          refreshed_at=now)
    ns_sp = service_principal("matrix-ns-sp", namespace=ns)
    inst_sp = service_principal("matrix-installation-sp")
    role = Role.objects.create(namespace=ns, name="matrix-free-role", permissions=["read:agent"])
    bound_role = Role.objects.create(namespace=ns, name="matrix-bound-role", permissions=["read:configuration"])
    binding = AccessBinding.objects.create(principal=ns_sp, role=bound_role, namespace=ns,
                                           resource_kind="configuration", resource_id=cfg.id)
    revocable, _ = create_key_record(principal_id=bootstrap.key.principal_id, namespace_id=None, name="revocable",
                                     expires_at=timezone.now() + timedelta(days=1), created_by="test")
    admin_role = Role.objects.get(name="administrator", namespace__isnull=True)

    person = human("matrix-someone")
    share = AccessBinding.objects.create(principal=person, namespace=ns, resource_kind="agent", resource_id=agent.id,
                                         role=Role.objects.get(name=AGENT_USER, namespace__isnull=True))
    reader = service_principal("matrix-reader")
    grant(reader, *READ_ALL_IN_NAMESPACE, namespace=ns)
    team = {}
    for caller, role_name in (("viewer", VIEWER), ("agent_user", AGENT_USER), ("developer", DEVELOPER),
                              ("namespace_administrator", NAMESPACE_ADMINISTRATOR)):
        team[caller] = service_principal(f"matrix-{caller}")
        AccessBinding.objects.create(principal=team[caller], namespace=ns,
                                     role=Role.objects.get(name=role_name, namespace__isnull=True))
    for caller, role_name in (("shared_chat", AGENT_USER), ("shared_deploy", DEVELOPER)):
        team[caller] = service_principal(f"matrix-{caller}")
        AccessBinding.objects.create(principal=team[caller], namespace=ns, resource_kind="agent", resource_id=agent.id,
                                     role=Role.objects.get(name=role_name, namespace__isnull=True))
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
        **{caller: key_for(principal) for caller, principal in team.items()},
    }
    ids = {
        "ns": ns.id, "empty_ns": empty.id, "cfg": cfg.id, "sec": secret.id, "agt": agent.id,
        "agt_cfg": agent.configuration_id, "rev": revision.id, "role": role.id, "binding": binding.id,
        "ns_sp": ns_sp.id, "inst_sp": inst_sp.id,
        "revocable_key": revocable.id, "admin_role": admin_role.id, "slack_sec": slack_token.id,
        "harness": harness.id, "provisioning": provisioning, "person": person.id, "share": share.id,
        "pre": Preset.objects.get(namespace=ns, name=STANDARD_OPENCLAW).id,
        "bud": Budget.objects.create(namespace=ns, period="day", limit=10, set_by=bootstrap.key.principal_id).id,
        "ses": session.id,
        "approval_kind": "exec", "approval": "matrix-approval",
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
    if caller in ("reader", "viewer"):
        return route.reader
    if caller in ("agent_user", "developer"):
        own = getattr(route, caller)
        return route.reader if own is None else own
    if caller == "shared_chat":
        return _expected(route, "agent_user")
    if caller in ("namespace_administrator", "shared_deploy"):
        own = getattr(route, caller)
        return _expected(route, "developer") if own is None else own
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
    assert [ns["name"] for ns in outsider.get("/namespaces").data["namespaces"]] == ["other"]
    reader = ApiClient(world["keys"]["reader"])
    assert [ns["id"] for ns in reader.get("/namespaces").data["namespaces"]] == [world["ids"]["ns"]]
    agents = reader.get(f"/namespaces/{world['ids']['ns']}/agents").data["agents"]
    assert [a["id"] for a in agents] == [world["ids"]["agt"]]
