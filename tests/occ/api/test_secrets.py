from __future__ import annotations

import re

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from occ.drivers.secrets import backend_name_for
from occ.models import AccessBinding, AuditEvent, EncryptedSecretValue, NamespaceStatus, Secret, SecretBinding
from occ.services.secrets import runtime_credential_ensure, secret_value_use
from tests.conftest import ApiClient
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, grant, key_for, service_principal

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
MISSING_NS = "ns_00000000-0000-4000-8000-000000000000"
MISSING_SEC = "sec_00000000-0000-4000-8000-000000000000"


def secrets_path(namespace_id: str) -> str:
    return f"/namespaces/{namespace_id}/secrets"


def secret_path(namespace_id: str, secret_id: str) -> str:
    return f"/namespaces/{namespace_id}/secrets/{secret_id}"


def stored_value(secret_id: str) -> str:
    return secret_value_use(secret=Secret.objects.get(id=secret_id), consumer=lambda value: value)


def snapshot() -> tuple:
    """Everything a Secrets request may change."""
    return (
        sorted(Secret.objects.values_list("id", "name", "updated_at")),
        sorted(EncryptedSecretValue.objects.values_list("backend_name", "ciphertext")),
        AuditEvent.objects.count(),
        sorted(AccessBinding.objects.values_list("id", flat=True)),
    )


@pytest.fixture
def ns(ready_namespace):
    return ready_namespace


@pytest.fixture
def create(api, ns):
    def _create(name: str = "db-password", value: str = "s3cret-value", namespace_id: str | None = None) -> dict:
        response = api.post(secrets_path(namespace_id or ns.id), {"name": name, "value": value})
        assert response.status == 201, response.body
        return response.data
    return _create


@pytest.fixture
def principal_api(ns):
    """A service principal in ``ns`` holding only the given permissions (Namespace-wide)."""
    def _make(*permissions: str) -> ApiClient:
        principal = service_principal(f"caller-{len(permissions)}-{AccessBinding.objects.count()}", namespace=ns)
        if permissions:
            grant(principal, *permissions, namespace=ns)
        client = ApiClient(key_for(principal, namespace=ns))
        client.principal = principal  # type: ignore[attr-defined]
        return client
    return _make


# --- create -------------------------------------------------------------------------------


def test_create_returns_metadata_and_ref_but_never_the_value(api, ns):
    response = api.post(secrets_path(ns.id), {"name": "db-password", "value": "s3cret-value"})

    assert response.status == 201
    data = response.data
    assert set(data) == {"id", "namespaceId", "name", "ref", "createdAt", "updatedAt"}
    assert re.fullmatch(r"sec_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", data["id"])
    assert data["namespaceId"] == ns.id
    assert data["name"] == "db-password"
    assert data["ref"] == {"kind": "secret", "namespaceId": ns.id, "id": data["id"]}
    assert TIMESTAMP.match(data["createdAt"])
    assert TIMESTAMP.match(data["updatedAt"])
    assert "s3cret-value" not in repr(response.body)
    assert response.headers["Cache-Control"] == "no-store"

    secret = Secret.objects.get(id=data["id"])
    assert (secret.driver_id, secret.backend_name) == ("database", backend_name_for(secret.id))
    assert stored_value(secret.id) == "s3cret-value"
    event = AuditEvent.objects.get(action="openclaw.secrets.create")
    assert (event.resource_kind, event.resource_id, event.namespace_id) == ("secret", secret.id, ns.id)
    assert event.details["name"] == "db-password"


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        pytest.param({"name": "n"}, "REQUIRED", "/value", id="missing-value"),
        pytest.param({"name": "n", "value": ""}, "INVALID_VALUE", "/value", id="empty-value"),
        pytest.param({"name": "n", "value": "a\x00b"}, "INVALID_VALUE", "/value", id="nul-in-value"),
        pytest.param({"name": "n", "value": 12}, "INVALID_TYPE", "/value", id="int-value"),
        pytest.param({"name": "n", "value": None}, "INVALID_TYPE", "/value", id="null-value"),
        pytest.param({"name": "n", "value": True}, "INVALID_TYPE", "/value", id="bool-value"),
        pytest.param({"name": "n", "value": ["x"]}, "INVALID_TYPE", "/value", id="list-value"),
        pytest.param({"name": "n", "value": {"v": "x"}}, "INVALID_TYPE", "/value", id="object-value"),
        pytest.param({"name": "n", "value": "x", "extra": 1}, "UNKNOWN_FIELD", "/extra", id="unknown-field"),
        pytest.param({"name": "n", "value": "x", "namespaceId": "ns_x"}, "UNKNOWN_FIELD", "/namespaceId",
                     id="ownership-field"),
        pytest.param({"name": "n", "value": "x", "id": "sec_x"}, "UNKNOWN_FIELD", "/id", id="id-field"),
        pytest.param({"value": "x"}, "REQUIRED", "/name", id="missing-name"),
        pytest.param({"name": 5, "value": "x"}, "INVALID_TYPE", "/name", id="int-name"),
        pytest.param({"name": "", "value": "x"}, "INVALID_FORMAT", "/name", id="empty-name"),
        pytest.param({"name": " lead", "value": "x"}, "INVALID_FORMAT", "/name", id="leading-space"),
        pytest.param({"name": "trail ", "value": "x"}, "INVALID_FORMAT", "/name", id="trailing-space"),
        pytest.param({"name": "a\tb", "value": "x"}, "INVALID_FORMAT", "/name", id="control-char"),
        pytest.param({"name": "x" * 201, "value": "x"}, "TOO_LONG", "/name", id="name-too-long"),
        pytest.param({"name": "x" * 801, "value": "x"}, "TOO_LONG", "/name", id="name-far-too-long"),
    ],
)
def test_create_rejects_bad_input_and_changes_nothing(api, ns, body, code, path):
    before = snapshot()
    response = api.post(secrets_path(ns.id), body)
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert snapshot() == before


def test_create_rejects_a_value_that_is_not_utf8_text(api, ns):
    before = snapshot()
    response = api.post(secrets_path(ns.id), raw=b'{"name": "n", "value": "a\\ud800b"}')
    assert response.status == 400
    assert response.body["error"]["details"] == [{"code": "INVALID_VALUE", "path": "/value"}]
    assert snapshot() == before


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [
        pytest.param(b"", 400, "INVALID_REQUEST", id="no-body"),
        pytest.param(b"{not json", 400, "INVALID_REQUEST", id="malformed-json"),
        pytest.param(b'["name", "value"]', 400, "INVALID_REQUEST", id="array-body"),
    ],
)
def test_create_rejects_unusable_bodies(api, ns, raw, status, code):
    before = snapshot()
    response = api.post(secrets_path(ns.id), raw=raw)
    assert (response.status, response.error_code) == (status, code)
    assert snapshot() == before


def test_create_rejects_non_json_content_type(api, ns):
    before = snapshot()
    response = api.post(secrets_path(ns.id), raw=b"name=n&value=x", content_type="application/x-www-form-urlencoded")
    assert (response.status, response.error_code) == (415, "UNSUPPORTED_MEDIA_TYPE")
    assert snapshot() == before


def test_value_limit_is_65536_utf8_bytes(api, ns, settings):
    settings.OCC_API_BODY_LIMIT = 256 * 1024  # let the value rule, not the body limit, decide
    at_limit = api.post(secrets_path(ns.id), {"name": "at-limit", "value": "é" * 32768})
    assert at_limit.status == 201
    assert stored_value(at_limit.data["id"]) == "é" * 32768
    before = snapshot()
    over = api.post(secrets_path(ns.id), {"name": "over", "value": "é" * 32768 + "a"})
    assert over.status == 400
    assert over.body["error"]["details"] == [{"code": "TOO_LONG", "path": "/value"}]
    assert snapshot() == before


def test_oversize_body_is_413_and_changes_nothing(api, ns):
    before = snapshot()
    response = api.post(secrets_path(ns.id), {"name": "big", "value": "x" * 70_000})
    assert (response.status, response.error_code) == (413, "PAYLOAD_TOO_LARGE")
    assert snapshot() == before


def test_duplicate_name_conflicts_and_stores_no_value(api, ns, create):
    create(name="dup")
    before = snapshot()
    response = api.post(secrets_path(ns.id), {"name": "dup", "value": "other"})
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    assert snapshot() == before


def test_a_name_in_either_normal_form_is_the_same_name(api, ns, create):
    """The attacker made two Secrets named "café" (composed and decomposed) in one Namespace."""
    created = create(name="caf\u00e9")
    assert created["name"] == "caf\u00e9"
    response = api.post(secrets_path(ns.id), {"name": "cafe\u0301", "value": "other"})
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")


def test_a_look_alike_name_is_refused(api, ns, create):
    create(name="payroll")
    for look_alike in ("p\u0430yroll", "pay\u2060roll", "\uff50ayroll"):
        response = api.post(secrets_path(ns.id), {"name": look_alike, "value": "other"})
        assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), look_alike


def test_same_name_in_another_namespace_is_fine(api, ns, create):
    other = NamespaceFactory()
    first, second = create(name="shared"), create(name="shared", namespace_id=other.id)
    assert first["id"] != second["id"]


@pytest.mark.parametrize("status", [NamespaceStatus.PROVISIONING, NamespaceStatus.FAILED, NamespaceStatus.DELETING])
def test_create_needs_a_ready_namespace(api, status):
    namespace = NamespaceFactory(status=status)
    before = snapshot()
    response = api.post(secrets_path(namespace.id), {"name": "n", "value": "x"})
    assert (response.status, response.error_code) == (409, "NAMESPACE_NOT_READY")
    assert snapshot() == before


def test_create_in_missing_or_deleted_namespace_is_404(api, ns):
    tombstoned = NamespaceFactory()
    tombstoned.deleted_at = tombstoned.created_at
    tombstoned.save()
    before = snapshot()
    for namespace_id in (MISSING_NS, tombstoned.id, "not-an-id"):
        response = api.post(secrets_path(namespace_id), {"name": "n", "value": "x"})
        assert (response.status, response.error_code) == (404, "NOT_FOUND")
    assert snapshot() == before


def test_create_without_permission_is_403_audited_once_and_stores_nothing(ns, principal_api):
    caller = principal_api("read:namespace", "read:secret")
    before_events = AuditEvent.objects.count()
    before = snapshot()[:2]
    response = caller.post(secrets_path(ns.id), {"name": "n", "value": "x"})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert snapshot()[:2] == before
    denials = AuditEvent.objects.filter(kind="authorization_denial")
    assert AuditEvent.objects.count() == before_events + 1
    assert denials.get().details["permission"] == "create:secret"


def test_unauthenticated_create_is_401_without_audit(anon_api, ns):
    before = snapshot()
    response = anon_api.post(secrets_path(ns.id), {"name": "n", "value": "x"})
    assert (response.status, response.error_code) == (401, "UNAUTHENTICATED")
    assert snapshot() == before


def test_key_of_another_namespace_cannot_create(api, ns):
    other = NamespaceFactory()
    principal = service_principal("elsewhere", namespace=other)
    grant(principal, "create:secret", namespace=other)
    before = snapshot()[:2]
    response = ApiClient(key_for(principal, namespace=other)).post(secrets_path(ns.id), {"name": "n", "value": "x"})
    assert response.status == 403
    assert snapshot()[:2] == before


def test_audit_failure_on_create_is_503_and_removes_the_stored_value(api, ns, monkeypatch):
    def failing_save(*args, **kwargs):
        raise DatabaseError("audit table unavailable")

    before = snapshot()
    monkeypatch.setattr(AuditEvent, "save", failing_save)
    response = api.post(secrets_path(ns.id), {"name": "n", "value": "compensate-me"})
    monkeypatch.undo()
    assert (response.status, response.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    assert snapshot() == before
    assert not EncryptedSecretValue.objects.exists()


# --- list and get -------------------------------------------------------------------------


def test_list_returns_the_namespace_secrets_in_creation_order(api, ns, create):
    first, second = create(name="one"), create(name="two")
    create(name="elsewhere", namespace_id=NamespaceFactory().id)
    response = api.get(secrets_path(ns.id))
    assert response.status == 200
    assert response.data == {"secrets": [first, second], "nextCursor": None}


def test_list_is_empty_for_a_namespace_without_secrets(api, ns):
    assert api.get(secrets_path(ns.id)).data == {"secrets": [], "nextCursor": None}


def test_list_hides_runtime_credentials(api, ns, create):
    visible = create(name="mine")
    credential = runtime_credential_ensure(agent=AgentFactory(namespace=ns), purpose="gateway-password",
                                           value_factory=lambda: "generated")
    assert [s["id"] for s in api.get(secrets_path(ns.id)).data["secrets"]] == [visible["id"]]
    assert api.get(secret_path(ns.id, credential.id)).status == 404


def test_list_returns_only_secrets_the_caller_may_read_exactly(api, ns, create, principal_api):
    readable = create(name="readable")
    create(name="hidden")
    also = create(name="also")
    # Exact update/delete grants do not make an item discoverable.
    caller = principal_api("read:namespace", "update:secret", "delete:secret")
    for secret in (readable, also):
        grant(caller.principal, "read:secret", namespace=ns, resource_kind="secret", resource_id=secret["id"])
    assert [s["id"] for s in caller.get(secrets_path(ns.id)).data["secrets"]] == [readable["id"], also["id"]]


def test_list_needs_namespace_read(ns, create, principal_api):
    create()
    caller = principal_api("read:secret")
    before = AuditEvent.objects.count()
    response = caller.get(secrets_path(ns.id))
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert AuditEvent.objects.count() == before + 1
    assert AuditEvent.objects.latest("occurred_at").details["permission"] == "read:namespace"


def test_list_of_missing_namespace_is_404(api):
    assert api.get(secrets_path(MISSING_NS)).status == 404


def test_list_costs_the_same_queries_for_1_or_20_secrets(api, ns, create):
    create(name="only")
    with CaptureQueriesContext(connection) as one:
        assert len(api.get(secrets_path(ns.id)).data["secrets"]) == 1
    for n in range(19):
        create(name=f"more-{n}")
    with CaptureQueriesContext(connection) as many:
        assert len(api.get(secrets_path(ns.id)).data["secrets"]) == 20
    assert len(many) == len(one)


def test_get_returns_the_same_metadata(api, ns, create):
    created = create()
    response = api.get(secret_path(ns.id, created["id"]))
    assert response.status == 200
    assert response.data == created


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_secret_under_the_wrong_namespace_path_is_404(api, ns, create, method):
    created = create()
    other = NamespaceFactory()
    before = snapshot()
    body = {"value": "new"} if method == "PATCH" else None
    for namespace_id, secret_id in ((other.id, created["id"]), (ns.id, MISSING_SEC), (MISSING_NS, created["id"])):
        response = api.request(method, secret_path(namespace_id, secret_id), body)
        assert (response.status, response.error_code) == (404, "NOT_FOUND")
    assert snapshot() == before


def test_get_without_read_is_403_with_one_denial(ns, create, principal_api):
    created = create()
    caller = principal_api("read:namespace", "update:secret")
    before = AuditEvent.objects.count()
    response = caller.get(secret_path(ns.id, created["id"]))
    assert response.status == 403
    assert AuditEvent.objects.count() == before + 1
    event = AuditEvent.objects.latest("occurred_at")
    assert (event.kind, event.resource_id, event.details["permission"]) == (
        "authorization_denial", created["id"], "read:secret")


def test_exact_read_binding_reads_one_secret_only(ns, create, principal_api):
    mine, theirs = create(name="mine"), create(name="theirs")
    caller = principal_api("read:namespace")
    grant(caller.principal, "read:secret", namespace=ns, resource_kind="secret", resource_id=mine["id"])
    assert caller.get(secret_path(ns.id, mine["id"])).status == 200
    assert caller.get(secret_path(ns.id, theirs["id"])).status == 403


# --- patch --------------------------------------------------------------------------------


def test_patch_replaces_the_value_and_keeps_the_metadata(api, ns, create):
    created = create(value="before")
    response = api.patch(secret_path(ns.id, created["id"]), {"value": "after"})
    assert response.status == 200
    data = response.data
    assert {k: v for k, v in data.items() if k != "updatedAt"} == {
        k: v for k, v in created.items() if k != "updatedAt"}
    assert data["updatedAt"] >= created["updatedAt"]
    assert stored_value(created["id"]) == "after"
    assert Secret.objects.get(id=created["id"]).backend_name == backend_name_for(created["id"])
    assert EncryptedSecretValue.objects.count() == 1
    event = AuditEvent.objects.get(action="openclaw.secrets.update")
    assert event.resource_id == created["id"]


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        pytest.param({}, "REQUIRED", "/value", id="missing-value"),
        pytest.param({"value": ""}, "INVALID_VALUE", "/value", id="empty-value"),
        pytest.param({"value": "\x00"}, "INVALID_VALUE", "/value", id="nul"),
        pytest.param({"value": 1.5}, "INVALID_TYPE", "/value", id="float-value"),
        pytest.param({"value": None}, "INVALID_TYPE", "/value", id="null-value"),
        pytest.param({"value": "x", "name": "rename"}, "UNKNOWN_FIELD", "/name", id="rename"),
        pytest.param({"value": "x", "ref": {}}, "UNKNOWN_FIELD", "/ref", id="ref-field"),
    ],
)
def test_patch_rejects_bad_input_and_changes_nothing(api, ns, create, body, code, path):
    created = create(value="kept")
    before = snapshot()
    response = api.patch(secret_path(ns.id, created["id"]), body)
    assert response.status == 400
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert snapshot() == before
    assert stored_value(created["id"]) == "kept"


def test_patch_rejects_an_oversize_value(api, ns, create, settings):
    settings.OCC_API_BODY_LIMIT = 256 * 1024
    created = create(value="kept")
    before = snapshot()
    response = api.patch(secret_path(ns.id, created["id"]), {"value": "x" * 65_537})
    assert response.body["error"]["details"] == [{"code": "TOO_LONG", "path": "/value"}]
    assert snapshot() == before


def test_patch_needs_a_ready_namespace(api, ns, create):
    created = create(value="kept")
    ns.status = NamespaceStatus.FAILED
    ns.save()
    before = snapshot()
    response = api.patch(secret_path(ns.id, created["id"]), {"value": "new"})
    assert (response.status, response.error_code) == (409, "NAMESPACE_NOT_READY")
    assert snapshot() == before


def test_patch_without_update_is_403_with_one_denial_and_no_change(ns, create, principal_api):
    created = create(value="kept")
    caller = principal_api("read:namespace", "read:secret", "delete:secret")
    before = snapshot()
    response = caller.patch(secret_path(ns.id, created["id"]), {"value": "new"})
    assert response.status == 403
    after = snapshot()
    assert (after[0], after[1], after[3]) == (before[0], before[1], before[3])
    assert after[2] == before[2] + 1
    assert AuditEvent.objects.latest("occurred_at").details["permission"] == "update:secret"
    assert stored_value(created["id"]) == "kept"


def test_audit_failure_on_patch_is_503_and_keeps_the_old_value(api, ns, create, monkeypatch):
    created = create(value="kept")
    before = snapshot()
    monkeypatch.setattr(AuditEvent, "save", lambda *a, **k: (_ for _ in ()).throw(DatabaseError("down")))
    response = api.patch(secret_path(ns.id, created["id"]), {"value": "lost"})
    monkeypatch.undo()
    assert response.status == 503
    assert snapshot() == before
    assert stored_value(created["id"]) == "kept"


# --- delete -------------------------------------------------------------------------------


def test_delete_removes_metadata_value_and_bindings(api, ns, create, django_capture_on_commit_callbacks):
    created, kept = create(name="doomed"), create(name="kept")
    principal = service_principal("consumer", namespace=ns)
    binding = grant(principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id=created["id"])
    other_binding = grant(principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id=kept["id"])

    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(secret_path(ns.id, created["id"]))

    assert response.status == 204
    assert response.body is None
    assert not Secret.objects.filter(id=created["id"]).exists()
    assert list(EncryptedSecretValue.objects.values_list("backend_name", flat=True)) == [
        backend_name_for(kept["id"])]
    assert list(AccessBinding.objects.filter(principal=principal)) == [other_binding]
    event = AuditEvent.objects.get(action="openclaw.secrets.delete")
    assert event.resource_id == created["id"]
    assert event.details["removedAccessBindings"] == [binding.id]
    assert api.delete(secret_path(ns.id, created["id"])).status == 404


def test_delete_leaves_the_value_until_the_transaction_commits(api, ns, create, django_capture_on_commit_callbacks):
    created = create()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert api.delete(secret_path(ns.id, created["id"])).status == 204
    assert EncryptedSecretValue.objects.count() == 1
    for callback in callbacks:
        callback()
    assert EncryptedSecretValue.objects.count() == 0


@pytest.mark.parametrize(
    ("use", "kinds"),
    [
        pytest.param(("configuration",), ["configurations"], id="configuration-binding"),
        pytest.param(("agent",), ["agents"], id="agent-harness"),
        pytest.param(("configuration", "agent"), ["configurations", "agents"], id="both"),
    ],
)
def test_delete_refused_while_referenced(api, ns, create, use, kinds):
    created = create()
    secret = Secret.objects.get(id=created["id"])
    if "configuration" in use:
        SecretBinding.objects.create(configuration=ConfigurationFactory(namespace=ns), env_name="DB_PASSWORD",
                                     secret=secret)
    if "agent" in use:
        AgentFactory(namespace=ns, harness_auth_method="api_key", harness_secret=secret)
    before = snapshot()
    response = api.delete(secret_path(ns.id, created["id"]))
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    message = response.body["error"]["message"]
    assert all(kind in message for kind in kinds)
    assert all(kind not in message for kind in {"configurations", "agents"} - set(kinds))
    assert snapshot() == before


def test_delete_without_permission_is_403_with_one_denial_and_no_change(ns, create, principal_api):
    created = create()
    caller = principal_api("read:namespace", "read:secret", "update:secret")
    before = snapshot()
    response = caller.delete(secret_path(ns.id, created["id"]))
    assert response.status == 403
    after = snapshot()
    assert (after[0], after[1], after[3]) == (before[0], before[1], before[3])
    assert after[2] == before[2] + 1
    assert AuditEvent.objects.latest("occurred_at").details["permission"] == "delete:secret"


def test_audit_failure_on_delete_is_503_and_keeps_everything(api, ns, create, monkeypatch,
                                                            django_capture_on_commit_callbacks):
    created = create()
    grant(service_principal("consumer", namespace=ns), "operate:secret", namespace=ns, resource_kind="secret",
          resource_id=created["id"])
    before = snapshot()
    monkeypatch.setattr(AuditEvent, "save", lambda *a, **k: (_ for _ in ()).throw(DatabaseError("down")))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = api.delete(secret_path(ns.id, created["id"]))
    monkeypatch.undo()
    assert response.status == 503
    assert callbacks == []
    assert snapshot() == before


def test_delete_does_not_need_a_ready_namespace(api, ns, create):
    created = create()
    ns.status = NamespaceStatus.FAILED
    ns.save()
    assert api.delete(secret_path(ns.id, created["id"])).status == 204


def test_delete_takes_no_body(api, ns, create):
    created = create()
    response = api.request("DELETE", secret_path(ns.id, created["id"]), {"value": "x"})
    assert response.status == 400
    assert Secret.objects.filter(id=created["id"]).exists()


def test_unsupported_method_is_405_with_allow(api, ns, create):
    created = create()
    response = api.request("PUT", secret_path(ns.id, created["id"]), {"value": "x"})
    assert response.status == 405
    assert "PATCH" in response.headers["Allow"]


def test_secret_routes_are_in_the_openapi_document(api):
    paths = api.get("/api/openapi.json").body["paths"]
    assert set(paths["/namespaces/{namespace_id}/secrets"]) == {"get", "post"}
    assert set(paths["/namespaces/{namespace_id}/secrets/{secret_id}"]) == {"get", "patch", "delete"}
