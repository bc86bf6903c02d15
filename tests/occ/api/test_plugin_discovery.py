"""Plugin discovery through the JSON API, end to end: the service, the real SecretDriver, the
codex PluginDriver and httpx speaking HTTP to the loopback fake Codex catalog."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.apps import apps
from django.core import serializers
from django.test import Client

from occ.commands.secrets import SecretCreate
from occ.drivers.plugins import registry
from occ.drivers.plugins.codex_catalog import forget_identities
from occ.drivers.secrets.database import DatabaseSecretDriver
from occ.models import AuditEvent, AuditKind, Principal, Secret
from occ.services.secrets import secret_create
from tests.conftest import ApiClient, ApiResponse
from tests.factories import AgentFactory, NamespaceFactory, grant, key_for, service_principal
from tests.fakes.fake_codex import TOKEN, FakeCodex, serving


@pytest.fixture
def codex_driver(settings) -> Iterator[None]:
    settings.OCC_PLUGIN_DRIVER = "codex"
    registry.forget_plugin_drivers()
    forget_identities()
    yield
    registry.forget_plugin_drivers()
    forget_identities()


@pytest.fixture
def fake(settings, codex_driver) -> Iterator[FakeCodex]:
    yield from serving(settings, timeout=30.0)


@pytest.fixture
def ns(ready_namespace):
    return ready_namespace


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """Every SecretDriver read (backend names), spied at the driver boundary."""
    seen: list[str] = []
    original = DatabaseSecretDriver.with_value

    def spy(self, backend_name, consumer):
        seen.append(backend_name)
        return original(self, backend_name, consumer)

    monkeypatch.setattr(DatabaseSecretDriver, "with_value", spy)
    return seen


@pytest.fixture
def pat_secret(ns, admin_actor) -> Secret:
    return secret_create(actor=admin_actor, namespace_id=ns.id, command=SecretCreate(name="codex-pat", value=TOKEN))


@pytest.fixture
def bound_agent(ns, pat_secret):
    agent = AgentFactory(namespace=ns, harness_auth_method="codex_pat", harness_secret=pat_secret)
    grant(agent.service_principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id=pat_secret.id)
    return agent


def _ref(secret: Secret) -> dict[str, str]:
    return {"kind": "secret", "namespaceId": secret.namespace_id, "id": secret.id}


def _rows() -> str:
    return "".join(serializers.serialize("json", m.objects.order_by("pk")) for m in apps.get_models()
                   if m is not AuditEvent)


def _client_with(ns, *permissions, **scope) -> tuple[Principal, ApiClient]:
    principal = service_principal(f"plugins-{Principal.objects.count()}")
    grant(principal, *permissions, namespace=ns, **scope)
    return principal, ApiClient(key_for(principal))


def _page(api: ApiClient, path: str, body: dict) -> ApiResponse:
    return api.post(path, body)


# --- create time ---------------------------------------------------------------------------------


def test_a_transient_token_pages_the_catalog_and_nothing_is_stored(api, ns, fake, reads):
    before = _rows()
    audit = set(AuditEvent.objects.values_list("id", flat=True))
    first = _page(api, f"/namespaces/{ns.id}/agents/plugins", {"accessToken": TOKEN})
    assert first.status == 200, first.body
    assert first.headers["Cache-Control"] == "no-store"
    assert len(first.data["plugins"]) == 20
    linear = first.data["plugins"][0]
    assert linear["id"] == "codex-plugin:linear@openai-curated-remote"
    assert linear["tools"] is None
    assert first.data["setup"]["links"]
    second = _page(api, f"/namespaces/{ns.id}/agents/plugins", {"accessToken": TOKEN,
                                                               "cursor": first.data["nextCursor"]})
    assert second.status == 200
    assert {p["id"] for p in second.data["plugins"]}.isdisjoint({p["id"] for p in first.data["plugins"]})
    assert _rows() == before  # discovery persists nothing
    assert not AuditEvent.objects.exclude(id__in=audit).exists()  # no Secret was read
    assert reads == []
    assert TOKEN not in json.dumps(first.body)


def test_search_and_details_with_tools(api, ns, fake):
    found = _page(api, f"/namespaces/{ns.id}/agents/plugins", {"accessToken": TOKEN, "q": "linear"})
    assert [p["name"] for p in found.data["plugins"]] == ["Linear"]
    details = _page(api, f"/namespaces/{ns.id}/agents/plugins/details",
                    {"accessToken": TOKEN, "pluginId": found.data["plugins"][0]["remoteId"]})
    assert details.status == 200, details.body
    tools = {t["id"]: t for t in details.data["tools"]}
    assert tools["asdk_app_linear/search_issues"]["writes"] is False
    assert tools["asdk_app_linear/delete_issue"]["destructive"] is True


def test_a_secret_ref_is_read_once_and_audited(api, ns, fake, pat_secret, reads):
    audit = set(AuditEvent.objects.values_list("id", flat=True))
    response = _page(api, f"/namespaces/{ns.id}/agents/plugins", {"secretRef": _ref(pat_secret)})
    assert response.status == 200, response.body
    assert reads == [pat_secret.backend_name]
    events = list(AuditEvent.objects.exclude(id__in=audit))
    assert [(e.kind, e.resource_id) for e in events] == [(AuditKind.ACCESS, pat_secret.id)]
    assert TOKEN not in json.dumps(events[0].details)


@pytest.mark.parametrize(("mode", "status", "code"), [
    pytest.param("unauthorized", 400, "PLUGIN_DISCOVERY_CREDENTIALS_REJECTED", id="rejected"),
    pytest.param("rate_limited", 429, "PLUGIN_DISCOVERY_RATE_LIMITED", id="rate-limited"),
    pytest.param("server_error", 503, "PLUGIN_DISCOVERY_UNAVAILABLE", id="unavailable"),
    pytest.param("redirect", 503, "PLUGIN_DISCOVERY_UNAVAILABLE", id="redirect"),
    pytest.param("echo", 503, "PLUGIN_DISCOVERY_INVALID_RESPONSE", id="echo"),
])
def test_upstream_failures_are_our_codes_in_the_envelope(api, ns, fake, mode, status, code):
    fake.configure(mode=mode)
    response = _page(api, f"/namespaces/{ns.id}/agents/plugins", {"accessToken": TOKEN})
    assert (response.status, response.error_code) == (status, code), response.body
    assert response.headers["Cache-Control"] == "no-store"
    raw = json.dumps(response.body)
    assert "UPSTREAM-TEXT" not in raw
    assert TOKEN not in raw


@pytest.mark.parametrize(("body", "pointer"), [
    pytest.param({}, "/accessToken", id="no-credential"),
    pytest.param({"accessToken": "at-x y"}, "/accessToken", id="token-with-space"),
    pytest.param({"accessToken": TOKEN, "q": "x" * 1025}, "/q", id="long-query"),
    pytest.param({"accessToken": TOKEN, "extra": 1}, "/extra", id="unknown-field"),
    pytest.param({"accessToken": TOKEN, "cursor": "forged"}, "/cursor", id="forged-cursor"),
])
def test_bad_bodies_are_400_and_send_nothing(api, ns, fake, body, pointer):
    response = _page(api, f"/namespaces/{ns.id}/agents/plugins", body)
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), response.body
    assert pointer in [d["path"] for d in response.body["error"]["details"]]
    assert fake.requests == []


def test_both_credentials_at_once_are_refused(api, ns, fake, pat_secret, reads):
    response = _page(api, f"/namespaces/{ns.id}/agents/plugins", {"accessToken": TOKEN,
                                                                 "secretRef": _ref(pat_secret)})
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert reads == []


def test_without_agent_create_403_before_any_secret_read(ns, fake, pat_secret, reads):
    _, client = _client_with(ns, "operate:secret", "read:secret")
    response = _page(client, f"/namespaces/{ns.id}/agents/plugins", {"secretRef": _ref(pat_secret)})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert reads == []
    assert fake.requests == []


def test_without_operate_on_the_secret_403_and_no_read(ns, fake, pat_secret, reads):
    principal, client = _client_with(ns, "create:agent", "read:secret")
    response = _page(client, f"/namespaces/{ns.id}/agents/plugins", {"secretRef": _ref(pat_secret)})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    denial = AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL, actor_id=principal.id).get()
    assert denial.resource_id == pat_secret.id
    assert reads == []
    assert fake.requests == []


def test_a_secret_of_another_namespace_is_refused_unread(api, ns, fake, admin_actor, reads):
    other = NamespaceFactory(name="other-plugins", status="ready")
    foreign = Secret.objects.create(namespace=other, name="theirs", driver_id="database", backend_name="occ-x")
    response = _page(api, f"/namespaces/{ns.id}/agents/plugins", {"secretRef": _ref(foreign)})
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    same_ns_ref = {"kind": "secret", "namespaceId": ns.id, "id": foreign.id}
    response = _page(api, f"/namespaces/{ns.id}/agents/plugins", {"secretRef": same_ns_ref})
    assert response.status == 404
    assert reads == []


def test_no_plugin_driver_is_501_and_reads_no_secret(api, ns, settings, pat_secret, reads):
    settings.OCC_PLUGIN_DRIVER = ""
    registry.forget_plugin_drivers()
    response = _page(api, f"/namespaces/{ns.id}/agents/plugins", {"secretRef": _ref(pat_secret)})
    assert (response.status, response.error_code) == (501, "NOT_IMPLEMENTED")
    assert reads == []


# --- an existing Agent ---------------------------------------------------------------------------


def test_an_agent_browses_with_its_bound_secret(api, ns, fake, bound_agent, pat_secret, reads):
    base = f"/namespaces/{ns.id}/agents/{bound_agent.id}/plugins"
    page = _page(api, base, {})
    assert page.status == 200, page.body
    assert reads == [pat_secret.backend_name]
    details = _page(api, f"{base}/details", {"pluginId": "plugins~Plugin_github"})
    assert details.status == 200
    assert [t["name"] for t in details.data["tools"]] == ["get_pull_request", "merge_pull_request"]
    capabilities = api.get(f"{base}/capabilities")
    assert capabilities.status == 200
    assert capabilities.data["driver"] == {"id": "codex", "implementation": "occ/codex-plugin"}
    assert capabilities.data["discoveryCredential"] == "required"
    assert capabilities.data["toolDefaults"]["reviewer"] == ["human", "auto"]
    assert capabilities.data["tools"]["reviewer"] == []


def test_an_agent_body_never_carries_a_credential(api, ns, fake, bound_agent):
    response = _page(api, f"/namespaces/{ns.id}/agents/{bound_agent.id}/plugins", {"accessToken": TOKEN})
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")


def test_an_agent_without_a_bound_pat_is_409_and_reads_nothing(api, ns, fake, reads):
    agent = AgentFactory(namespace=ns)
    response = _page(api, f"/namespaces/{ns.id}/agents/{agent.id}/plugins", {})
    assert (response.status, response.error_code) == (409, "PLUGIN_DISCOVERY_CREDENTIAL_MISSING")
    assert reads == []
    assert fake.requests == []


def test_the_agent_principal_needs_operate_too(api, ns, fake, pat_secret, reads):
    agent = AgentFactory(namespace=ns, harness_auth_method="codex_pat", harness_secret=pat_secret)
    response = _page(api, f"/namespaces/{ns.id}/agents/{agent.id}/plugins", {})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert "service principal" in response.body["error"]["message"]
    assert reads == []


def test_agent_read_without_update_is_403_before_any_read(ns, fake, bound_agent, pat_secret, reads):
    _, client = _client_with(ns, "read:agent", "operate:secret")
    response = _page(client, f"/namespaces/{ns.id}/agents/{bound_agent.id}/plugins", {})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert reads == []


def test_the_caller_needs_operate_on_the_bound_secret(ns, fake, bound_agent, reads):
    _, client = _client_with(ns, "read:agent", "update:agent")
    response = _page(client, f"/namespaces/{ns.id}/agents/{bound_agent.id}/plugins", {})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert reads == []


def test_a_grant_withdrawn_during_the_read_is_caught_inside_with_value(api, ns, fake, bound_agent, pat_secret,
                                                                       monkeypatch):
    original = DatabaseSecretDriver.with_value

    def revoke_then_read(self, backend_name, consumer):
        bound_agent.service_principal.bindings.all().delete()  # between the check and the read
        return original(self, backend_name, consumer)

    monkeypatch.setattr(DatabaseSecretDriver, "with_value", revoke_then_read)
    response = _page(api, f"/namespaces/{ns.id}/agents/{bound_agent.id}/plugins", {})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert fake.requests == []  # the value never left


def test_a_rebinding_during_the_read_is_caught_inside_with_value(api, ns, fake, bound_agent, admin_actor,
                                                                 monkeypatch):
    other = secret_create(actor=admin_actor, namespace_id=ns.id, command=SecretCreate(name="other", value=TOKEN))
    original = DatabaseSecretDriver.with_value

    def rebind_then_read(self, backend_name, consumer):
        type(bound_agent).objects.filter(id=bound_agent.id).update(harness_secret=other)
        return original(self, backend_name, consumer)

    monkeypatch.setattr(DatabaseSecretDriver, "with_value", rebind_then_read)
    response = _page(api, f"/namespaces/{ns.id}/agents/{bound_agent.id}/plugins", {})
    assert (response.status, response.error_code) == (409, "PLUGIN_DISCOVERY_CREDENTIAL_MISSING")
    assert fake.requests == []


def test_an_unknown_agent_is_404(api, ns, fake):
    response = _page(api, f"/namespaces/{ns.id}/agents/agt_nope/plugins", {})
    assert response.status == 404


def test_the_routes_are_in_the_openapi_document(db):
    document = Client().get("/api/openapi.json").json()
    paths = document["paths"]
    for path in ("/namespaces/{namespace_id}/agents/plugins", "/namespaces/{namespace_id}/agents/plugins/details",
                 "/namespaces/{namespace_id}/agents/{agent_id}/plugins",
                 "/namespaces/{namespace_id}/agents/{agent_id}/plugins/details"):
        assert "post" in paths[path], path
    assert "get" in paths["/namespaces/{namespace_id}/agents/{agent_id}/plugins/capabilities"]
    schema = json.dumps(document["components"]["schemas"])
    assert "PluginDiscovery" in schema
    assert "accessToken" in schema
