"""Contract tests for /namespaces/{ns}/configurations: every route and every error path."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS
from occ.models import AuditEvent, Configuration, Namespace, NamespaceStatus, SecretBinding
from tests.conftest import ApiClient
from tests.factories import (
    AgentFactory,
    NamespaceFactory,
    SecretFactory,
    grant,
    key_for,
    marked_document,
    service_principal,
)

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
UNKNOWN_SECRET = "sec_00000000-0000-4000-8000-000000000000"
UNKNOWN_CFG = "cfg_00000000-0000-4000-8000-000000000000"


def coll(namespace_id: str) -> str:
    return f"/namespaces/{namespace_id}/configurations"


def item(cfg: dict[str, Any] | Configuration) -> str:
    if isinstance(cfg, Configuration):
        return f"{coll(cfg.namespace_id)}/{cfg.id}"
    return f"{coll(cfg['namespaceId'])}/{cfg['id']}"


def ref(namespace_id: str, secret_id: str) -> dict[str, Any]:
    return {"source": {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}}


def state() -> tuple[int, int, int]:
    return Configuration.objects.count(), SecretBinding.objects.count(), AuditEvent.objects.count()


def caller(*permissions: str, namespace: Namespace | None = None) -> ApiClient:
    """A client for a fresh service principal holding exactly ``permissions``."""
    principal = service_principal("caller")
    if permissions:
        grant(principal, *permissions, namespace=namespace)
    return ApiClient(key_for(principal))


@pytest.fixture
def ns(db) -> Namespace:
    return NamespaceFactory(status=NamespaceStatus.READY)


@pytest.fixture
def admin_api(db) -> ApiClient:
    return caller(*ADMINISTRATOR_PERMISSIONS)


@pytest.fixture
def secret(ns):
    return SecretFactory(namespace=ns)


@pytest.fixture
def created(admin_api, ns, secret) -> dict[str, Any]:
    body = {"kind": "agent", "values": marked_document({"v": 1}), "secretBindings": {"TOKEN": ref(ns.id, secret.id)}}
    response = admin_api.post(coll(ns.id), body)
    assert response.status == 201
    return response.data


# --- create -------------------------------------------------------------------------------------

def test_create_returns_201_with_the_wire_shape(admin_api, ns, secret):
    values = {
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "fake/echo-model"}}},
        "models": {"mode": "merge", "providers": {"fake": {
            "baseUrl": "http://127.0.0.1:18555/v1", "api": "openai-completions", "apiKey": "${FAKE_KEY}"}}},
        "gateway": {"http": {"endpoints": {"chatCompletions": {"enabled": True}}}},
    }
    body = {"kind": "agent", "values": values,
            "secretBindings": {"GITHUB_TOKEN": ref(ns.id, secret.id),
                               "ALSO_TOKEN": {**ref(ns.id, secret.id), "delivery": {"type": "env"}}}}
    response = admin_api.post(coll(ns.id), body)
    assert response.status == 201
    data = response.data
    assert set(data) == {"id", "name", "namespaceId", "kind", "generation", "values", "secretBindings",
                         "createdAt", "updatedAt"}
    assert data["id"].startswith("cfg_")
    assert (data["namespaceId"], data["kind"], data["generation"], data["values"]) == (ns.id, "agent", 1, values)
    expected_binding = {"source": {"kind": "secret", "namespaceId": ns.id, "id": secret.id},
                        "delivery": {"type": "env"}}
    assert data["secretBindings"] == {"ALSO_TOKEN": expected_binding, "GITHUB_TOKEN": expected_binding}
    assert TIMESTAMP.match(data["createdAt"])
    assert TIMESTAMP.match(data["updatedAt"])
    assert response.headers["ETag"] == '"1"'
    assert response.headers["Cache-Control"] == "no-store"
    assert response.body["meta"]["requestId"] == response.headers["X-Request-Id"]
    assert AuditEvent.objects.filter(action="openclaw.configurations.create", resource_id=data["id"]).count() == 1
    assert SecretBinding.objects.filter(configuration_id=data["id"]).count() == 2


def test_create_without_bindings_answers_empty_map(admin_api, ns):
    response = admin_api.post(coll(ns.id), {"kind": "agent", "values": {}})
    assert response.status == 201
    assert response.data["secretBindings"] == {}


def test_create_in_provisioning_default_namespace_with_bootstrap_key(api, bootstrap):
    namespace = Namespace.objects.get(name="default")
    assert namespace.status == NamespaceStatus.PROVISIONING
    assert api.post(coll(namespace.id), {"kind": "agent", "values": {}}).status == 201


@pytest.mark.parametrize("status", [NamespaceStatus.FAILED, NamespaceStatus.DELETING])
def test_create_in_failed_or_deleting_namespace_conflicts(admin_api, status):
    namespace = NamespaceFactory(status=status)
    before = state()
    response = admin_api.post(coll(namespace.id), {"kind": "agent", "values": {}})
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    assert state() == before


def test_create_in_unknown_or_tombstoned_namespace_is_404(admin_api, ns):
    Namespace.objects.filter(id=ns.id).update(deleted_at=ns.created_at)
    before = state()
    for namespace_id in (ns.id, "ns_00000000-0000-4000-8000-000000000000"):
        response = admin_api.post(coll(namespace_id), {"kind": "agent", "values": {}})
        assert (response.status, response.error_code) == (404, "NOT_FOUND")
    assert state() == before


# --- bad input ----------------------------------------------------------------------------------

Body = Callable[[str, str], dict[str, Any]]


def nested(depth: int) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for _ in range(depth - 1):
        doc = {"x": doc}
    return doc


def provider(**fields: Any) -> dict[str, Any]:
    return {"values": {"models": {"providers": {"fake": fields}}}}


def one_binding(name: str = "TOKEN", **overrides: Any) -> Body:
    def body(ns_id: str, sec_id: str) -> dict[str, Any]:
        binding = ref(ns_id, sec_id)
        binding["source"].update(overrides.get("source", {}))
        binding.update({k: v for k, v in overrides.items() if k != "source"})
        return {"secretBindings": {name: binding}}
    return body


PB = "/values/models/providers/fake"
SB = "/secretBindings/TOKEN"

# Rules shared by create and patch: (body overrides, detail code, detail path).
SHARED_BAD = [
    pytest.param(lambda n, s: {"values": []}, "INVALID_TYPE", "/values", id="values-list"),
    pytest.param(lambda n, s: {"values": "x"}, "INVALID_TYPE", "/values", id="values-string"),
    pytest.param(lambda n, s: {"values": None}, "INVALID_TYPE", "/values", id="values-null"),
    pytest.param(lambda n, s: {"values": nested(25)}, "TOO_DEEP", "/values" + "/x" * 24, id="too-deep"),
    pytest.param(lambda n, s: {"values": {"__proto__": {}}}, "INVALID_VALUE", "/values/__proto__", id="proto"),
    pytest.param(lambda n, s: {"values": {"a": {"prototype": 1}}}, "INVALID_VALUE", "/values/a/prototype",
                 id="prototype"),
    pytest.param(lambda n, s: {"values": {"a": [{"constructor": 1}]}}, "INVALID_VALUE", "/values/a/0/constructor",
                 id="constructor"),
    pytest.param(lambda n, s: provider(baseUrl="/v1"), "INVALID_FORMAT", f"{PB}/baseUrl", id="base-url-relative"),
    pytest.param(lambda n, s: provider(baseUrl="ws://example.com"), "INVALID_FORMAT", f"{PB}/baseUrl",
                 id="base-url-ws"),
    pytest.param(lambda n, s: provider(baseUrl=1), "INVALID_TYPE", f"{PB}/baseUrl", id="base-url-number"),
    pytest.param(lambda n, s: provider(api="openai"), "INVALID_VALUE", f"{PB}/api", id="api-unknown"),
    pytest.param(lambda n, s: {"values": {"models": {"providers": []}}}, "INVALID_TYPE",
                 "/values/models/providers", id="providers-list"),
    pytest.param(lambda n, s: {"values": {"gateway": {"mode": "local"}}}, "INVALID_VALUE", "/values/gateway/mode",
                 id="gateway-mode"),
    pytest.param(lambda n, s: {"values": {"gateway": {"bind": "lan"}}}, "INVALID_VALUE", "/values/gateway/bind",
                 id="gateway-bind"),
    pytest.param(lambda n, s: {"values": {"gateway": {"port": 1}}}, "INVALID_VALUE", "/values/gateway/port",
                 id="gateway-port"),
    pytest.param(lambda n, s: {"values": {"gateway": {"auth": {"mode": "none"}}}}, "INVALID_VALUE",
                 "/values/gateway/auth", id="gateway-auth"),
    pytest.param(lambda n, s: {"values": {"gateway": {"trustedProxies": ["0.0.0.0/0"]}}}, "INVALID_VALUE",
                 "/values/gateway/trustedProxies", id="gateway-trusted-proxies"),
    pytest.param(lambda n, s: {"values": {"gateway": True}}, "INVALID_TYPE", "/values/gateway", id="gateway-bool"),
    pytest.param(lambda n, s: {"secretBindings": []}, "INVALID_TYPE", "/secretBindings", id="bindings-list"),
    pytest.param(lambda n, s: {"secretBindings": None}, "INVALID_TYPE", "/secretBindings", id="bindings-null"),
    pytest.param(lambda n, s: {"secretBindings": {f"V{i}": ref(n, s) for i in range(65)}}, "TOO_LONG",
                 "/secretBindings", id="bindings-65"),
    pytest.param(one_binding("lower"), "INVALID_FORMAT", "/secretBindings/lower", id="name-lowercase"),
    pytest.param(one_binding("9LIVES"), "INVALID_FORMAT", "/secretBindings/9LIVES", id="name-digit-first"),
    pytest.param(one_binding("A" * 129), "INVALID_FORMAT", "/secretBindings/" + "A" * 129, id="name-too-long"),
    pytest.param(one_binding("A/B"), "INVALID_FORMAT", "/secretBindings/A~1B", id="name-slash-escaped"),
    *[pytest.param(one_binding(name), "INVALID_VALUE", f"/secretBindings/{name}", id=f"reserved-{name}")
      for name in ("OPENCLAW_GATEWAY_TOKEN", "CODEX_HOME", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OCC_KEY",
                   "KUBERNETES_SERVICE_HOST", "PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
                   "ALL_PROXY", "https_proxy", "No_Proxy")],
    pytest.param(lambda n, s: {"secretBindings": {"TOKEN": "x"}}, "INVALID_TYPE", SB, id="binding-string"),
    pytest.param(lambda n, s: {"secretBindings": {"TOKEN": {}}}, "REQUIRED", f"{SB}/source", id="binding-no-source"),
    pytest.param(one_binding(extra=1), "UNKNOWN_FIELD", f"{SB}/extra", id="binding-extra"),
    pytest.param(one_binding(source={"name": "x"}), "UNKNOWN_FIELD", f"{SB}/source/name", id="source-extra"),
    pytest.param(one_binding(source={"kind": "service_account"}), "INVALID_VALUE", f"{SB}/source/kind",
                 id="source-kind"),
    pytest.param(one_binding(source={"id": "sec_1"}), "INVALID_FORMAT", f"{SB}/source/id", id="source-id-format"),
    pytest.param(lambda n, s: {"secretBindings": {"TOKEN": {"source": {"kind": "secret", "namespaceId": n}}}},
                 "REQUIRED", f"{SB}/source/id", id="source-no-id"),
    pytest.param(one_binding(source={"namespaceId": "ns_00000000-0000-4000-8000-000000000000"}), "INVALID_VALUE",
                 f"{SB}/source/namespaceId", id="source-other-namespace"),
    pytest.param(one_binding(delivery={"type": "file"}), "INVALID_VALUE", f"{SB}/delivery/type",
                 id="delivery-file"),
    pytest.param(one_binding(delivery={"type": "env", "path": "/x"}), "UNKNOWN_FIELD", f"{SB}/delivery/path",
                 id="delivery-extra"),
]

CREATE_BAD = [
    pytest.param(lambda n, s: {"kind": None}, "INVALID_TYPE", "/kind", id="kind-null"),
    pytest.param(lambda n, s: {"kind": "preset"}, "INVALID_VALUE", "/kind", id="kind-preset"),
    pytest.param(lambda n, s: {"kind": 1}, "INVALID_TYPE", "/kind", id="kind-number"),
    pytest.param(lambda n, s: {"extra": 1}, "UNKNOWN_FIELD", "/extra", id="unknown-field"),
    pytest.param(lambda n, s: {"id": UNKNOWN_CFG}, "UNKNOWN_FIELD", "/id", id="id"),
    pytest.param(lambda n, s: {"namespaceId": n}, "UNKNOWN_FIELD", "/namespaceId", id="namespace-id"),
    pytest.param(lambda n, s: {"generation": 1}, "UNKNOWN_FIELD", "/generation", id="generation"),
    # The wire speaks camelCase only: a command's Python name is an unknown field there.
    pytest.param(lambda n, s: {"secret_bindings": {}}, "UNKNOWN_FIELD", "/secret_bindings", id="snake-case"),
    pytest.param(lambda n, s: {"secretBindings": {"KEY": {"source": {"kind": "secret", "namespace_id": n, "id": s},
                                                           "delivery": {"type": "env"}}}},
                 "UNKNOWN_FIELD", "/secretBindings/KEY/source/namespace_id", id="snake-case-nested"),
]

DROP = object()


def merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in {**base, **overrides}.items() if v is not DROP}


def assert_bad_request(response, code: str, path: str) -> None:
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), response.body
    assert {"code": code, "path": path} in response.body["error"]["details"]


@pytest.mark.parametrize(("override", "code", "path"), [
    *SHARED_BAD, *CREATE_BAD,
    pytest.param(lambda n, s: {"kind": DROP}, "REQUIRED", "/kind", id="kind-missing"),
    pytest.param(lambda n, s: {"values": DROP}, "REQUIRED", "/values", id="values-missing"),
])
def test_create_rejects_bad_input_and_writes_nothing(admin_api, ns, secret, override, code, path):
    body = merged({"kind": "agent", "values": {}}, override(ns.id, secret.id))
    before = state()
    assert_bad_request(admin_api.post(coll(ns.id), body), code, path)
    assert state() == before


PATCH_BAD = [
    pytest.param(lambda n, s: {"kind": "agent"}, "UNKNOWN_FIELD", "/kind", id="kind"),
    pytest.param(lambda n, s: {"generation": 2}, "UNKNOWN_FIELD", "/generation", id="generation"),
    pytest.param(lambda n, s: {"id": UNKNOWN_CFG}, "UNKNOWN_FIELD", "/id", id="id"),
    pytest.param(lambda n, s: {"namespaceId": n}, "UNKNOWN_FIELD", "/namespaceId", id="namespace-id"),
    pytest.param(lambda n, s: {"createdAt": "x"}, "UNKNOWN_FIELD", "/createdAt", id="created-at"),
    pytest.param(lambda n, s: {"values": DROP}, "REQUIRED", "/values", id="values-missing"),
]


@pytest.mark.parametrize(("override", "code", "path"), [*SHARED_BAD, *PATCH_BAD])
def test_patch_rejects_bad_input_and_changes_nothing(admin_api, created, ns, secret, override, code, path):
    body = merged({"values": marked_document({"edited": True})}, override(ns.id, secret.id))
    before = state()
    assert_bad_request(admin_api.patch(item(created), body), code, path)
    assert state() == before
    assert admin_api.get(item(created)).data == created


def test_reserved_name_message_points_to_harness_auth(admin_api, ns, secret):
    response = admin_api.post(coll(ns.id), {"kind": "agent", "values": {},
                                            "secretBindings": {"OPENAI_API_KEY": ref(ns.id, secret.id)}})
    assert response.status == 400
    assert "harnessAuth" in response.body["error"]["message"]


def test_accepted_edge_values(admin_api, ns):
    values = {"models": {"providers": {
        "blank": {"baseUrl": "", "api": "openai-responses"},
        "env": {"baseUrl": "${OPENAI_BASE_URL}", "api": "anthropic-messages"},
        "local": {"baseUrl": "http://127.0.0.1:11434", "api": "ollama"},
    }}, "agents": {"defaults": {"params": nested(20)}}, "gateway": {"allowRealIpFallback": True}}
    response = admin_api.post(coll(ns.id), {"kind": "agent", "values": values})
    assert response.status == 201, response.body
    assert response.data["values"] == values


def test_oversize_body_is_413(admin_api, ns):
    before = state()
    response = admin_api.post(coll(ns.id), {"kind": "agent", "values": {"x": "y" * (65 * 1024)}})
    assert (response.status, response.error_code) == (413, "PAYLOAD_TOO_LARGE")
    assert state() == before


# --- secrets that are not ours ------------------------------------------------------------------

@pytest.mark.parametrize(
    "secret_of",
    [
        pytest.param(lambda ns: UNKNOWN_SECRET, id="unknown-secret"),
        pytest.param(lambda ns: SecretFactory(namespace=NamespaceFactory()).id, id="secret-of-another-namespace"),
        pytest.param(lambda ns: SecretFactory(namespace=ns, owner_agent=AgentFactory(namespace=ns),
                                              purpose="gateway_password").id, id="runtime-credential"),
    ],
)
def test_binding_a_secret_the_namespace_does_not_hold_is_404(admin_api, ns, secret_of):
    secret_id = secret_of(ns)
    before = state()
    response = admin_api.post(coll(ns.id), {"kind": "agent", "values": {},
                                            "secretBindings": {"TOKEN": ref(ns.id, secret_id)}})
    assert (response.status, response.error_code) == (404, "NOT_FOUND")
    assert {"code": "INVALID_VALUE", "path": "/secretBindings/TOKEN/source/id"} in response.body["error"]["details"]
    assert secret_id not in response.body["error"]["message"]
    assert state() == before


def test_patch_binding_unknown_secret_is_404_and_keeps_document(admin_api, created, ns):
    before = state()
    response = admin_api.patch(item(created), {"values": {}, "secretBindings": {"NEW": ref(ns.id, UNKNOWN_SECRET)}})
    assert (response.status, response.error_code) == (404, "NOT_FOUND")
    assert state() == before
    assert admin_api.get(item(created)).data == created


# --- get ----------------------------------------------------------------------------------------

def test_get_returns_what_create_returned(admin_api, created):
    response = admin_api.get(item(created))
    assert response.status == 200
    assert response.data == created
    assert response.headers["ETag"] == '"1"'


@pytest.mark.parametrize(
    "path_of",
    [
        pytest.param(lambda cfg, other: f"{coll(cfg['namespaceId'])}/{UNKNOWN_CFG}", id="unknown-id"),
        pytest.param(lambda cfg, other: f"{coll(other.id)}/{cfg['id']}", id="wrong-namespace"),
        pytest.param(lambda cfg, other: f"{coll('ns_nope')}/{cfg['id']}", id="unknown-namespace"),
    ],
)
@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_item_routes_answer_404_under_the_wrong_parent(admin_api, created, method, path_of):
    other = NamespaceFactory()
    before = state()
    body = {"values": {}} if method == "PATCH" else None
    response = admin_api.request(method, path_of(created, other), body)
    assert (response.status, response.error_code) == (404, "NOT_FOUND")
    assert state() == before


def test_the_collection_lists_and_creates_only(admin_api, ns):
    response = admin_api.request("PUT", coll(ns.id), {})
    assert (response.status, response.error_code) == (405, "METHOD_NOT_ALLOWED")
    assert sorted(response.headers["Allow"].replace(" ", "").split(",")) == ["GET", "POST"]


def test_bodyless_routes_refuse_a_body(admin_api, created):
    before = state()
    for method in ("GET", "DELETE"):
        response = admin_api.request(method, item(created), {"values": {}})
        assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert state() == before


# --- patch --------------------------------------------------------------------------------------

def test_patch_replaces_values_and_increments_generation(admin_api, created):
    audit_before = AuditEvent.objects.filter(action="openclaw.configurations.update").count()
    for generation in (2, 3, 4):
        response = admin_api.patch(item(created), {"values": marked_document({"n": generation})})
        assert response.status == 200
        assert response.data["generation"] == generation
        assert response.data["values"] == marked_document({"n": generation})
        assert response.headers["ETag"] == f'"{generation}"'
    got = admin_api.get(item(created)).data
    assert got["generation"] == 4
    assert (got["id"], got["createdAt"]) == (created["id"], created["createdAt"])
    assert AuditEvent.objects.filter(action="openclaw.configurations.update").count() == audit_before + 3


def test_patch_bindings_omitted_preserved_empty_cleared_map_replaced(admin_api, created, ns, secret):
    original = created["secretBindings"]
    kept = admin_api.patch(item(created), {"values": {}})
    assert kept.data["secretBindings"] == original
    other = SecretFactory(namespace=ns)
    replaced = admin_api.patch(item(created), {"values": {}, "secretBindings": {"OTHER": ref(ns.id, other.id)}})
    assert list(replaced.data["secretBindings"]) == ["OTHER"]
    assert replaced.data["secretBindings"]["OTHER"]["source"]["id"] == other.id
    cleared = admin_api.patch(item(created), {"values": {}, "secretBindings": {}})
    assert cleared.data["secretBindings"] == {}
    assert not SecretBinding.objects.filter(configuration_id=created["id"]).exists()
    assert cleared.data["generation"] == 4


def test_patch_never_touches_agents(admin_api, created, ns):
    agent = AgentFactory(namespace=ns, configuration=Configuration.objects.get(id=created["id"]))
    before = (agent.updated_at, agent.desired_runtime_state, agent.active_revision_id)
    assert admin_api.patch(item(created), {"values": marked_document({"changed": True})}).status == 200
    agent.refresh_from_db()
    assert (agent.updated_at, agent.desired_runtime_state, agent.active_revision_id) == before


@pytest.mark.parametrize(
    ("header", "status", "code"),
    [
        pytest.param('"1"', 200, None, id="quoted-match"),
        pytest.param("1", 200, None, id="unquoted-match"),
        pytest.param(' "1" ', 200, None, id="padded"),
        pytest.param("*", 200, None, id="any"),
        pytest.param('"2"', 409, "RESOURCE_CONFLICT", id="ahead"),
        pytest.param('"0"', 409, "RESOURCE_CONFLICT", id="zero"),
        pytest.param("abc", 400, "INVALID_REQUEST", id="not-a-number"),
        pytest.param('W/"1"', 400, "INVALID_REQUEST", id="weak-etag"),
        pytest.param('"1", "2"', 400, "INVALID_REQUEST", id="list"),
        pytest.param('""', 400, "INVALID_REQUEST", id="empty-quotes"),
        pytest.param("", 400, "INVALID_REQUEST", id="empty"),
        pytest.param('"-1"', 400, "INVALID_REQUEST", id="negative"),
        pytest.param('"1', 400, "INVALID_REQUEST", id="unbalanced"),
        pytest.param('"12345678901"', 400, "INVALID_REQUEST", id="too-long"),
    ],
)
def test_if_match(admin_api, created, header, status, code):
    before = state()
    response = admin_api.patch(item(created), {"values": marked_document({"edited": True})},
                               headers={"If-Match": header})
    assert response.status == status, response.body
    assert response.error_code == code
    if status == 200:
        assert response.data["generation"] == 2
    else:
        assert state() == before
        assert admin_api.get(item(created)).data == created


def test_if_match_stops_the_second_of_two_concurrent_editors(admin_api, created):
    seen = admin_api.get(item(created)).headers["ETag"]
    first = admin_api.patch(item(created), {"values": marked_document({"by": "first"})}, headers={"If-Match": seen})
    assert first.status == 200
    second = admin_api.patch(item(created), {"values": marked_document({"by": "second"})}, headers={"If-Match": seen})
    assert (second.status, second.error_code) == (409, "RESOURCE_CONFLICT")
    assert admin_api.get(item(created)).data["values"] == marked_document({"by": "first"})


# --- delete -------------------------------------------------------------------------------------

def test_delete_answers_204_and_removes_everything(admin_api, created):
    response = admin_api.delete(item(created))
    assert response.status == 204
    assert response.body is None
    assert not Configuration.objects.filter(id=created["id"]).exists()
    assert not SecretBinding.objects.filter(configuration_id=created["id"]).exists()
    assert AuditEvent.objects.filter(action="openclaw.configurations.delete", resource_id=created["id"]).count() == 1
    assert admin_api.get(item(created)).status == 404
    assert admin_api.delete(item(created)).status == 404


def test_delete_refused_while_an_agent_references_it(admin_api, created, ns):
    AgentFactory(namespace=ns, configuration=Configuration.objects.get(id=created["id"]))
    before = state()
    response = admin_api.delete(item(created))
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    assert state() == before
    assert admin_api.get(item(created)).data == created


# --- authentication and authorization -----------------------------------------------------------

def test_no_key_is_401_and_unaudited(anon_api, created):
    before = state()
    for response in (anon_api.get(item(created)), anon_api.patch(item(created), {"values": {}}),
                     anon_api.delete(item(created)),
                     anon_api.post(coll(created["namespaceId"]), {"kind": "agent", "values": {}})):
        assert (response.status, response.error_code) == (401, "UNAUTHENTICATED")
    assert state() == before


def denials() -> int:
    return AuditEvent.objects.filter(kind="authorization_denial").count()


def assert_denied_once(response, *, permission: str, resource_id: str | None, before) -> None:
    assert (response.status, response.error_code) == (403, "FORBIDDEN"), response.body
    configurations, bindings, events = before
    assert state() == (configurations, bindings, events + 1)
    event = AuditEvent.objects.filter(kind="authorization_denial").latest("occurred_at")
    assert event.details["permission"] == permission
    assert event.resource_id == resource_id


ALL_BUT_SECRET_OPERATE = [p for p in ADMINISTRATOR_PERMISSIONS if p != "operate:secret"]


def test_create_without_secret_operate_is_403_even_with_everything_else(ns, secret):
    client = caller(*ALL_BUT_SECRET_OPERATE)
    assert client.post(coll(ns.id), {"kind": "agent", "values": {}}).status == 201
    before = state()
    response = client.post(coll(ns.id), {"kind": "agent", "values": {},
                                         "secretBindings": {"TOKEN": ref(ns.id, secret.id)}})
    assert_denied_once(response, permission="operate:secret", resource_id=secret.id, before=before)


def test_create_needs_operate_on_each_bound_secret(ns, secret):
    second = SecretFactory(namespace=ns)
    principal = service_principal("exact-operate")
    grant(principal, "create:configuration", namespace=ns)
    grant(principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id=secret.id)
    client = ApiClient(key_for(principal))
    before = state()
    response = client.post(coll(ns.id), {"kind": "agent", "values": {}, "secretBindings": {
        "FIRST": ref(ns.id, secret.id), "SECOND": ref(ns.id, second.id)}})
    assert_denied_once(response, permission="operate:secret", resource_id=second.id, before=before)


def test_patch_keeping_bindings_still_needs_secret_operate(created, secret):
    client = caller(*ALL_BUT_SECRET_OPERATE)
    before = state()
    response = client.patch(item(created), {"values": marked_document({"edited": True})})
    assert_denied_once(response, permission="operate:secret", resource_id=secret.id, before=before)
    # Dropping every binding leaves nothing to operate on.
    cleared = client.patch(item(created), {"values": {}, "secretBindings": {}})
    assert cleared.status == 200


def test_patch_binding_a_new_secret_needs_operate_on_it(created, ns, secret):
    new_secret = SecretFactory(namespace=ns)
    principal = service_principal("old-secret-only")
    grant(principal, "update:configuration", "read:configuration", namespace=ns)
    grant(principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id=secret.id)
    client = ApiClient(key_for(principal))
    before = state()
    response = client.patch(item(created), {"values": {}, "secretBindings": {"NEW": ref(ns.id, new_secret.id)}})
    assert_denied_once(response, permission="operate:secret", resource_id=new_secret.id, before=before)


@pytest.mark.parametrize(
    ("method", "missing"),
    [
        pytest.param("POST", "create:configuration", id="create"),
        pytest.param("GET", "read:configuration", id="get"),
        pytest.param("PATCH", "update:configuration", id="patch"),
        pytest.param("DELETE", "delete:configuration", id="delete"),
    ],
)
def test_each_route_needs_its_own_permission(created, ns, method, missing):
    client = caller(*[p for p in ADMINISTRATOR_PERMISSIONS if p != missing])
    before = state()
    if method == "POST":
        response, resource_id = client.post(coll(ns.id), {"kind": "agent", "values": {}}), None
    else:
        body = {"values": {}} if method == "PATCH" else None
        response, resource_id = client.request(method, item(created), body), created["id"]
    assert_denied_once(response, permission=missing, resource_id=resource_id, before=before)


def test_exact_read_grant_reads_only_that_configuration(admin_api, created, ns):
    other = admin_api.post(coll(ns.id), {"kind": "agent", "values": {}}).data
    principal = service_principal("exact-reader")
    grant(principal, "read:configuration", namespace=ns, resource_kind="configuration", resource_id=created["id"])
    client = ApiClient(key_for(principal))
    assert client.get(item(created)).status == 200
    assert client.get(item(other)).status == 403


def test_key_of_another_namespace_is_403(created):
    elsewhere = NamespaceFactory()
    principal = service_principal("scoped", namespace=elsewhere)
    grant(principal, *ADMINISTRATOR_PERMISSIONS, namespace=elsewhere)
    client = ApiClient(key_for(principal, namespace=elsewhere))
    before = state()
    response = client.get(item(created))
    # Refused on the Namespace before the Configuration is looked up (a made-up id gets the same).
    assert_denied_once(response, permission="access:namespace", resource_id=created["namespaceId"], before=before)
    event = AuditEvent.objects.filter(kind="authorization_denial").latest("occurred_at")
    assert (event.actor_id, event.details["reason"]) == (principal.id, "out_of_scope")


# --- OpenAPI ------------------------------------------------------------------------------------

def test_routes_are_in_the_openapi_document(admin_api):
    paths = admin_api.get("/api/openapi.json").body["paths"]
    assert set(paths["/namespaces/{namespace_id}/configurations"]) == {"get", "post"}
    assert set(paths["/namespaces/{namespace_id}/configurations/{configuration_id}"]) == {"get", "patch", "delete"}
