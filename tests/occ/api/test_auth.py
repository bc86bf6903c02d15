"""Contract tests for /api/auth: session, service keys and accounts."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from occ.iam.keys import digest
from occ.models import AccessBinding, AuditEvent, AuditKind, Principal, Role, ServiceKey
from occ.services.bootstrap import ADMINISTRATOR_ROLE_NAME
from occ.timestamps import rfc3339
from tests.conftest import ApiClient
from tests.factories import AgentFactory, NamespaceFactory, grant, human, key_for, service_principal

MISSING = "sp_00000000-0000-4000-8000-000000000000"
STRONG_PASSWORD = "tidal-ochre-lantern-57"


def session_api(principal: Principal) -> ApiClient:
    client = ApiClient(None)
    client.client.force_login(principal.user)
    return client


def counts() -> tuple[int, ...]:
    user_model = get_user_model()
    return (ServiceKey.objects.count(), AuditEvent.objects.count(), user_model.objects.count(),
            Principal.objects.count(), AccessBinding.objects.count(), Role.objects.count())


def denials(actor_id: str | None = None) -> int:
    events = AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL)
    return (events if actor_id is None else events.filter(actor_id=actor_id)).count()


def without_audit(values: tuple[int, ...]) -> tuple[int, ...]:
    return values[:1] + values[2:]


def admin_human(bootstrap) -> Principal:
    return Principal.objects.get(user__username=bootstrap.admin_username)


# -- GET /api/auth/session ---------------------------------------------------------------


def test_session_is_null_when_anonymous(anon_api):
    response = anon_api.get("/api/auth/session")
    assert response.status == 200
    assert response.body["data"] is None
    assert response.body["meta"]["requestId"].startswith("req_")


def test_session_of_a_service_key(api, bootstrap):
    response = api.get("/api/auth/session")
    assert response.status == 200
    assert response.data == {"authenticated": True, "id": bootstrap.key.principal_id,
                             "name": "installation-administrator", "username": None, "via": "service_key"}


def test_session_of_a_signed_in_person(bootstrap):
    person = admin_human(bootstrap)
    response = session_api(person).get("/api/auth/session")
    assert response.status == 200
    assert response.data == {"authenticated": True, "id": person.id, "name": "admin", "username": "admin",
                             "via": "session"}


def test_session_never_carries_tokens_or_session_keys(bootstrap, admin_key):
    client = session_api(admin_human(bootstrap))
    response = client.get("/api/auth/session")
    raw = json.dumps(response.body)
    assert client.client.session.session_key not in raw
    assert admin_key not in raw


def test_session_of_a_user_without_identity_is_null_and_unaudited(bootstrap):
    user = get_user_model().objects.create_user(username="stray", password="a-long-test-password")
    client = ApiClient(None)
    client.client.force_login(user)
    before = AuditEvent.objects.count()
    response = client.get("/api/auth/session")
    assert response.status == 200
    assert response.body["data"] is None
    assert AuditEvent.objects.count() == before


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"x-api-key": "occ_sk_not-a-real-key"}, id="unknown-key"),
        pytest.param({"x-api-key": ""}, id="blank-key"),
        pytest.param({"Authorization": "Bearer something"}, id="authorization-header"),
    ],
)
def test_session_with_bad_credentials_is_401(bootstrap, headers):
    client = session_api(admin_human(bootstrap))
    before = AuditEvent.objects.count()
    response = client.get("/api/auth/session", key=None, headers=headers)
    assert response.status == 401
    assert response.error_code == "UNAUTHENTICATED"
    assert AuditEvent.objects.count() == before


def test_session_rejects_a_body(anon_api):
    assert anon_api.request("GET", "/api/auth/session", {"x": 1}).status == 400


def test_session_rejects_other_methods(anon_api):
    response = anon_api.post("/api/auth/session", {})
    assert response.status == 405
    assert response.error_code == "METHOD_NOT_ALLOWED"
    assert "GET" in response.headers["Allow"]


# -- POST /api/auth/service-keys ---------------------------------------------------------


def test_issue_key_for_installation_principal(api, bootstrap):
    principal = service_principal("automation")
    before = timezone.now()
    response = api.post("/api/auth/service-keys", {"servicePrincipalId": principal.id, "name": "ci"})
    assert response.status == 201
    data = response.data
    assert set(data) == {"id", "key", "name", "servicePrincipalId", "expiresAt"}
    assert data["id"].startswith("key_")
    assert data["name"] == "ci"
    assert data["servicePrincipalId"] == principal.id
    record = ServiceKey.objects.get(id=data["id"])
    assert record.digest == digest(data["key"]) != data["key"]
    assert record.namespace_id is None
    assert record.created_by == bootstrap.key.principal_id
    assert before + timedelta(days=30) <= record.expires_at <= timezone.now() + timedelta(days=30)
    assert data["expiresAt"] == rfc3339(record.expires_at)
    event = AuditEvent.objects.get(action="openclaw.service_keys.create")
    assert event.resource_id == record.id
    assert event.actor_id == bootstrap.key.principal_id
    assert data["key"] not in json.dumps(event.details)
    assert record.digest not in json.dumps(event.details)


def test_issued_key_authenticates_as_its_principal(api):
    principal = service_principal("reader")
    grant(principal, "read:installation")
    key = api.post("/api/auth/service-keys", {"servicePrincipalId": principal.id, "name": "r"}).data["key"]
    session = ApiClient(key).get("/api/auth/session")
    assert session.data["id"] == principal.id
    assert ApiClient(key).get("/installation").status == 200


def test_issue_namespace_key_with_expiry(api):
    namespace = NamespaceFactory()
    principal = service_principal("ns-bot", namespace)
    before = timezone.now()
    response = api.post("/api/auth/service-keys", {"servicePrincipalId": principal.id, "namespaceId": namespace.id,
                                                   "name": "n" * 32, "expiresIn": 86400})
    assert response.status == 201
    assert response.data["namespaceId"] == namespace.id
    record = ServiceKey.objects.get(id=response.data["id"])
    assert record.namespace_id == namespace.id
    assert before + timedelta(days=1) <= record.expires_at <= timezone.now() + timedelta(days=1)
    assert AuditEvent.objects.get(action="openclaw.service_keys.create").namespace_id == namespace.id


def test_longest_expiry_is_accepted(api):
    principal = service_principal("long")
    response = api.post("/api/auth/service-keys",
                        {"servicePrincipalId": principal.id, "name": "long", "expiresIn": 31536000})
    assert response.status == 201


def _key_body_cases():
    return [
        pytest.param(lambda p, ns, o: {"name": "k"}, "REQUIRED", "/servicePrincipalId", id="missing-principal"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id}, "REQUIRED", "/name", id="missing-name"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": "k", "key": "x"}, "UNKNOWN_FIELD",
                     "/key", id="unknown-field"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": 5, "name": "k"}, "INVALID_TYPE",
                     "/servicePrincipalId", id="int-principal"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": "k", "expiresIn": "86400"},
                     "INVALID_TYPE", "/expiresIn", id="string-expiry"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": "k", "expiresIn": True},
                     "INVALID_TYPE", "/expiresIn", id="bool-expiry"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": "k", "expiresIn": 86400.5},
                     "INVALID_TYPE", "/expiresIn", id="float-expiry"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": "k", "expiresIn": 86399},
                     "INVALID_VALUE", "/expiresIn", id="expiry-below-one-day"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": "k", "expiresIn": 31536001},
                     "INVALID_VALUE", "/expiresIn", id="expiry-above-one-year"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": ""}, "INVALID_FORMAT", "/name",
                     id="empty-name"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": "   "}, "INVALID_FORMAT", "/name",
                     id="blank-name"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": " k"}, "INVALID_FORMAT", "/name",
                     id="leading-space"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": "a\nb"}, "INVALID_FORMAT", "/name",
                     id="control-char"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "name": "k" * 33}, "TOO_LONG", "/name",
                     id="name-too-long"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": o["human"].id, "name": "k"}, "INVALID_VALUE",
                     "/servicePrincipalId", id="human-principal"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": o["agent_sp"].id, "namespaceId": ns.id, "name": "k"},
                     "INVALID_VALUE", "/servicePrincipalId", id="agent-principal"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": p.id, "namespaceId": ns.id, "name": "k"},
                     "INVALID_VALUE", "/namespaceId", id="installation-principal-with-namespace"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": o["ns_sp"].id, "name": "k"},
                     "INVALID_VALUE", "/namespaceId", id="namespace-principal-without-namespace"),
        pytest.param(lambda p, ns, o: {"servicePrincipalId": o["ns_sp"].id, "namespaceId": o["other"].id,
                                       "name": "k"},
                     "INVALID_VALUE", "/namespaceId", id="namespace-principal-other-namespace"),
    ]


@pytest.mark.parametrize(("make_body", "code", "path"), _key_body_cases())
def test_issue_key_rejects_bad_input_and_changes_nothing(api, make_body, code, path):
    namespace, other = NamespaceFactory(), NamespaceFactory()
    others = {"human": human("person"), "agent_sp": AgentFactory(namespace=namespace).service_principal,
              "ns_sp": service_principal("ns-bot", namespace), "other": other}
    body = make_body(service_principal("automation"), namespace, others)
    before = counts()
    response = api.post("/api/auth/service-keys", body)
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert counts() == before


def test_issue_key_for_unknown_principal_is_404(api):
    before = counts()
    response = api.post("/api/auth/service-keys", {"servicePrincipalId": MISSING, "name": "k"})
    assert response.status == 404
    assert response.error_code == "NOT_FOUND"
    assert counts() == before


def test_issue_key_by_a_signed_in_administrator(bootstrap):
    principal = service_principal("automation")
    response = session_api(admin_human(bootstrap)).post("/api/auth/service-keys",
                                                        {"servicePrincipalId": principal.id, "name": "k"})
    assert response.status == 201
    assert AuditEvent.objects.get(action="openclaw.service_keys.create").actor_id == admin_human(bootstrap).id


def _namespace_admin_key() -> tuple[str, Principal]:
    namespace = NamespaceFactory()
    bot = service_principal("ns-admin", namespace)
    # Even an administrator Role bound inside the Namespace cannot reach Installation business.
    AccessBinding.objects.create(principal=bot, role=Role.objects.get(name=ADMINISTRATOR_ROLE_NAME),
                                 namespace=namespace)
    return key_for(bot, namespace=namespace), bot


def _installation_reader_key() -> tuple[str, Principal]:
    bot = service_principal("reader")
    grant(bot, "read:installation")
    return key_for(bot), bot


def _person_without_administer() -> tuple[ApiClient, Principal]:
    person = human("viewer")
    grant(person, "read:installation")
    return session_api(person), person


@pytest.mark.parametrize("caller", [
    pytest.param(lambda: (lambda k, p: (ApiClient(k), p))(*_namespace_admin_key()), id="namespace-key"),
    pytest.param(lambda: (lambda k, p: (ApiClient(k), p))(*_installation_reader_key()), id="key-without-administer"),
    pytest.param(_person_without_administer, id="person-without-administer"),
])
def test_issue_and_revoke_need_installation_administer(bootstrap, caller):
    client, principal = caller()
    target = service_principal("automation")
    existing = key_for(target)
    existing_id = ServiceKey.objects.get(digest=digest(existing)).id
    before = counts()
    response = client.post("/api/auth/service-keys", {"servicePrincipalId": target.id, "name": "k"})
    assert response.status == 403
    assert response.error_code == "FORBIDDEN"
    assert denials(principal.id) == 1
    assert AuditEvent.objects.count() == before[1] + 1
    revoke = client.delete(f"/api/auth/service-keys/{existing_id}")
    assert revoke.status == 403
    assert denials(principal.id) == 2
    assert AuditEvent.objects.count() == before[1] + 2
    assert without_audit(counts()) == without_audit(before)
    assert ServiceKey.objects.filter(id=existing_id).exists()


def test_issue_key_anonymous_is_401_without_audit(anon_api):
    principal = service_principal("automation")
    before = counts()
    response = anon_api.post("/api/auth/service-keys", {"servicePrincipalId": principal.id, "name": "k"})
    assert response.status == 401
    assert counts() == before


# -- DELETE /api/auth/service-keys/{id} --------------------------------------------------


def test_revoke_key(api, bootstrap):
    principal = service_principal("automation")
    grant(principal, "read:installation")
    issued = api.post("/api/auth/service-keys", {"servicePrincipalId": principal.id, "name": "k"}).data
    assert ApiClient(issued["key"]).get("/installation").status == 200
    bindings = AccessBinding.objects.count()
    response = api.delete(f"/api/auth/service-keys/{issued['id']}")
    assert response.status == 200
    assert response.data == {"id": issued["id"], "revoked": True}
    assert not ServiceKey.objects.filter(id=issued["id"]).exists()
    event = AuditEvent.objects.get(action="openclaw.service_keys.revoke")
    assert event.resource_id == issued["id"]
    assert event.details["servicePrincipalId"] == principal.id
    # The principal and its grants stay; only the credential is gone.
    assert Principal.objects.filter(id=principal.id).exists()
    assert AccessBinding.objects.count() == bindings
    before = AuditEvent.objects.count()
    assert ApiClient(issued["key"]).get("/installation").status == 401
    assert AuditEvent.objects.count() == before


def test_revoke_twice_is_404(api):
    principal = service_principal("automation")
    issued = api.post("/api/auth/service-keys", {"servicePrincipalId": principal.id, "name": "k"}).data
    assert api.delete(f"/api/auth/service-keys/{issued['id']}").status == 200
    before = counts()
    response = api.delete(f"/api/auth/service-keys/{issued['id']}")
    assert response.status == 404
    assert response.error_code == "NOT_FOUND"
    assert counts() == before


def test_revoke_unknown_key_is_404(api):
    before = counts()
    assert api.delete("/api/auth/service-keys/key_00000000-0000-4000-8000-000000000000").status == 404
    assert counts() == before


def test_revoke_rejects_a_body(api, bootstrap):
    before = counts()
    response = api.request("DELETE", f"/api/auth/service-keys/{bootstrap.key.id}", {"x": 1})
    assert response.status == 400
    assert counts() == before


def test_a_key_can_revoke_itself(api, bootstrap, admin_key):
    assert api.delete(f"/api/auth/service-keys/{bootstrap.key.id}").status == 200
    assert ApiClient(admin_key).get("/installation").status == 401


# -- POST /api/auth/accounts -------------------------------------------------------------


def _administrator_role() -> Role:
    return Role.objects.get(name=ADMINISTRATOR_ROLE_NAME, namespace__isnull=True)


def test_create_account(api, bootstrap):
    role = Role.objects.create(name="auditor", permissions=["read:installation", "read:namespace"])
    response = api.post("/api/auth/accounts", {"username": "jo", "name": "Jo Doe", "password": STRONG_PASSWORD,
                                               "roleId": role.id})
    assert response.status == 201
    data = response.data
    user = get_user_model().objects.get(username="jo")
    principal = Principal.objects.get(user=user)
    binding = AccessBinding.objects.get(principal=principal)
    assert data == {"id": str(user.pk), "username": "jo", "name": "Jo Doe", "principalId": principal.id,
                    "accessBindingIds": [binding.id]}
    assert principal.kind == "human"
    assert principal.name == "Jo Doe"
    assert user.check_password(STRONG_PASSWORD)
    assert (binding.role_id, binding.namespace_id, binding.resource_id) == (role.id, None, None)
    event = AuditEvent.objects.get(action="openclaw.accounts.create")
    assert event.resource_id == principal.id
    assert event.details["roleId"] == role.id
    assert STRONG_PASSWORD not in json.dumps(event.details)
    assert STRONG_PASSWORD not in json.dumps(response.body)
    # The new person can sign in and holds exactly the Role's grants.
    session = session_api(principal)
    assert session.get("/api/auth/session").data["username"] == "jo"
    assert session.get("/installation").status == 200
    assert session.post("/namespaces", {"name": "nope"}).status == 403


def test_create_account_name_defaults_to_username(api, bootstrap):
    response = api.post("/api/auth/accounts", {"username": "sam", "password": STRONG_PASSWORD,
                                               "roleId": _administrator_role().id})
    assert response.status == 201
    assert response.data["name"] == "sam"


def test_create_account_by_a_signed_in_administrator(bootstrap):
    client = session_api(admin_human(bootstrap))
    response = client.post("/api/auth/accounts", {"username": "kim", "password": STRONG_PASSWORD,
                                                  "roleId": _administrator_role().id})
    assert response.status == 201


@pytest.mark.parametrize("username", ["admin", "ADMIN"])
def test_duplicate_username_conflicts(api, bootstrap, username):
    before = counts()
    response = api.post("/api/auth/accounts", {"username": username, "password": STRONG_PASSWORD,
                                               "roleId": _administrator_role().id})
    assert response.status == 409
    assert response.error_code == "RESOURCE_CONFLICT"
    assert counts() == before


@pytest.mark.parametrize(
    ("change", "code", "path"),
    [
        pytest.param({"password": "short-pass1"}, "INVALID_VALUE", "/password", id="password-too-short"),
        pytest.param({"password": "password1234"}, "INVALID_VALUE", "/password", id="common-password"),
        pytest.param({"password": "p" * 129}, "TOO_LONG", "/password", id="password-too-long"),
        pytest.param({"password": 123456789012345}, "INVALID_TYPE", "/password", id="int-password"),
        pytest.param({"username": "has space"}, "INVALID_FORMAT", "/username", id="username-space"),
        pytest.param({"username": ""}, "INVALID_FORMAT", "/username", id="empty-username"),
        pytest.param({"username": "u" * 151}, "TOO_LONG", "/username", id="username-too-long"),
        pytest.param({"name": " padded"}, "INVALID_FORMAT", "/name", id="padded-name"),
        pytest.param({"roleId": "role_00000000-0000-4000-8000-000000000000"}, "INVALID_VALUE", "/roleId",
                     id="unknown-role"),
        pytest.param({"roleId": "namespace-role"}, "INVALID_VALUE", "/roleId", id="namespace-role"),
        pytest.param({"email": "a@example.com"}, "UNKNOWN_FIELD", "/email", id="unknown-field"),
        pytest.param({"username": None}, "INVALID_TYPE", "/username", id="null-username"),
    ],
)
def test_create_account_rejects_bad_input_and_changes_nothing(api, bootstrap, change, code, path):
    namespace_role = Role.objects.create(namespace=NamespaceFactory(), name="ns-role", permissions=["read:agent"])
    body = {"username": "newbie", "password": STRONG_PASSWORD, "roleId": _administrator_role().id, **change}
    if body["roleId"] == "namespace-role":
        body["roleId"] = namespace_role.id
    before = counts()
    response = api.post("/api/auth/accounts", body)
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"
    assert {"code": code, "path": path} in response.body["error"]["details"]
    if isinstance(body["password"], str):
        assert body["password"] not in json.dumps(response.body)
    assert counts() == before


@pytest.mark.parametrize("field", ["username", "password"])
def test_create_account_requires_fields(api, bootstrap, field):
    body = {"username": "newbie", "password": STRONG_PASSWORD, "roleId": _administrator_role().id}
    del body[field]
    before = counts()
    response = api.post("/api/auth/accounts", body)
    assert response.status == 400
    assert {"code": "REQUIRED", "path": f"/{field}"} in response.body["error"]["details"]
    assert counts() == before


def test_create_account_needs_installation_administer(bootstrap):
    key, principal = _namespace_admin_key()
    client, person = _person_without_administer()
    for caller, who in ((ApiClient(key), principal), (client, person)):
        before = counts()
        response = caller.post("/api/auth/accounts", {"username": "newbie", "password": STRONG_PASSWORD,
                                                      "roleId": _administrator_role().id})
        assert response.status == 403
        assert denials(who.id) == 1
        assert AuditEvent.objects.count() == before[1] + 1
        assert without_audit(counts()) == without_audit(before)


def test_create_account_anonymous_is_401(anon_api, bootstrap):
    before = counts()
    response = anon_api.post("/api/auth/accounts", {"username": "newbie", "password": STRONG_PASSWORD,
                                                    "roleId": _administrator_role().id})
    assert response.status == 401
    assert counts() == before
