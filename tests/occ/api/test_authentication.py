"""Authentication semantics on real routes: keys, sessions, CSRF and key scope."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.test import Client
from django.utils import timezone

from occ.iam.keys import digest
from occ.models import AuditEvent, AuditKind, Namespace, Principal, ServiceKey
from tests.conftest import ApiClient
from tests.factories import AgentFactory, NamespaceFactory, grant, human, key_for, service_principal


def snapshot() -> tuple[int, int, int]:
    return Namespace.objects.count(), AuditEvent.objects.count(), ServiceKey.objects.count()


def denials_by(actor_id: str | None) -> int:
    return AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL, actor_id=actor_id).count()


def signed_in(principal: Principal | None = None, *, user=None, enforce_csrf: bool = False) -> ApiClient:
    client = ApiClient(None)
    client.client = Client(enforce_csrf_checks=enforce_csrf)
    client.client.force_login(user or principal.user)
    return client


def with_csrf_token(client: ApiClient) -> dict[str, str]:
    """Give the client a CSRF cookie, as a console page would, and return the matching header."""
    request = HttpRequest()
    token = get_token(request)
    client.client.cookies[settings.CSRF_COOKIE_NAME] = request.META["CSRF_COOKIE"]
    return {"X-CSRFToken": token}


def admin_person(bootstrap) -> Principal:
    return Principal.objects.get(user__username=bootstrap.admin_username)


def expired_key(bootstrap) -> str:
    token = key_for(bootstrap.key.principal)
    ServiceKey.objects.filter(digest=digest(token)).update(expires_at=timezone.now() - timedelta(seconds=1))
    return token


def revoked_key(bootstrap) -> str:
    token = key_for(bootstrap.key.principal)
    ServiceKey.objects.filter(digest=digest(token)).delete()
    return token


ROUTES = [
    pytest.param("GET", "/installation", None, id="get-installation"),
    pytest.param("POST", "/namespaces", {"name": "team"}, id="create-namespace"),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_no_credentials_is_401_without_audit(anon_api, bootstrap, method, path, body):
    before = snapshot()
    response = anon_api.request(method, path, body)
    assert response.status == 401
    assert response.error_code == "UNAUTHENTICATED"
    assert snapshot() == before


@pytest.mark.parametrize("make_key", [
    pytest.param(lambda b: "occ_sk_" + "A" * 43, id="unknown-key"),
    pytest.param(lambda b: "not-an-occ-key", id="malformed-key"),
    pytest.param(lambda b: "occ_sk_" + "A" * 300, id="oversize-key"),
    pytest.param(lambda b: "", id="blank-key"),
    pytest.param(lambda b: b.key_token + "x", id="altered-key"),
    pytest.param(expired_key, id="expired-key"),
    pytest.param(revoked_key, id="revoked-key"),
])
@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_bad_key_is_401_without_audit(bootstrap, make_key, method, path, body):
    key = make_key(bootstrap)
    before = snapshot()
    response = ApiClient(None).request(method, path, body, headers={"x-api-key": key})
    assert response.status == 401
    assert response.error_code == "UNAUTHENTICATED"
    assert snapshot() == before


def test_expired_key_just_before_expiry_still_works(bootstrap):
    token = key_for(bootstrap.key.principal)
    ServiceKey.objects.filter(digest=digest(token)).update(expires_at=timezone.now() + timedelta(minutes=1))
    assert ApiClient(token).get("/installation").status == 200


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_authorization_header_is_401_even_with_a_valid_session(bootstrap, method, path, body):
    client = signed_in(admin_person(bootstrap))
    assert client.get("/installation").status == 200
    before = snapshot()
    response = client.request(method, path, body, headers={"Authorization": "Bearer anything"})
    assert response.status == 401
    assert snapshot() == before


def test_authorization_header_is_401_even_with_a_valid_key(api):
    before = snapshot()
    response = api.get("/installation", headers={"Authorization": f"Bearer {api.key}"})
    assert response.status == 401
    assert snapshot() == before


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_invalid_key_never_falls_back_to_the_session(bootstrap, method, path, body):
    client = signed_in(admin_person(bootstrap))
    before = snapshot()
    response = client.request(method, path, body, key="occ_sk_" + "B" * 43)
    assert response.status == 401
    assert snapshot() == before


def test_key_takes_precedence_over_the_session(bootstrap):
    client = signed_in(admin_person(bootstrap))
    data = client.get("/api/auth/session", key=bootstrap.key_token).data
    assert (data["via"], data["id"]) == ("service_key", bootstrap.key.principal_id)


def test_session_write_without_csrf_token_is_403_and_audited(bootstrap):
    person = admin_person(bootstrap)
    client = signed_in(person, enforce_csrf=True)
    before = snapshot()
    response = client.post("/namespaces", {"name": "team"})
    assert response.status == 403
    assert response.error_code == "FORBIDDEN"
    assert denials_by(person.id) == 1
    assert snapshot() == (before[0], before[1] + 1, before[2])


def test_session_write_with_wrong_csrf_token_is_403(bootstrap):
    person = admin_person(bootstrap)
    client = signed_in(person, enforce_csrf=True)
    with_csrf_token(client)
    before = snapshot()
    response = client.post("/namespaces", {"name": "team"}, headers={"X-CSRFToken": "x" * 64})
    assert response.status == 403
    assert snapshot() == (before[0], before[1] + 1, before[2])


def test_session_write_with_csrf_token_succeeds(bootstrap):
    person = admin_person(bootstrap)
    client = signed_in(person, enforce_csrf=True)
    response = client.post("/namespaces", {"name": "team"}, headers=with_csrf_token(client))
    assert response.status == 201
    assert AuditEvent.objects.get(action="openclaw.namespaces.create").actor_id == person.id
    assert denials_by(person.id) == 0


def test_session_reads_need_no_csrf_token(bootstrap):
    client = signed_in(admin_person(bootstrap), enforce_csrf=True)
    assert client.get("/installation").status == 200


def test_key_writes_need_no_csrf_token(bootstrap, admin_key):
    client = ApiClient(admin_key)
    client.client = Client(enforce_csrf_checks=True)
    assert client.post("/namespaces", {"name": "team"}).status == 201


@pytest.fixture
def namespace_key(bootstrap):
    """A Namespace service principal with Namespace-wide read, and its Namespace-scoped key."""
    namespace = Namespace.objects.get(name="default")
    bot = service_principal("ns-bot", namespace)
    grant(bot, "read:namespace", namespace=namespace)
    return namespace, bot, key_for(bot, namespace=namespace)


def test_namespace_key_reaches_its_namespace(namespace_key):
    namespace, _, key = namespace_key
    NamespaceFactory()
    client = ApiClient(key)
    assert client.get(f"/namespaces/{namespace.id}").status == 200
    assert [ns["id"] for ns in client.get("/namespaces").data["namespaces"]] == [namespace.id]


@pytest.mark.parametrize(("method", "path", "body"), [
    *ROUTES,
    pytest.param("GET", "/namespaces/{other}", None, id="get-other-namespace"),
    pytest.param("DELETE", "/namespaces/{other}", None, id="delete-other-namespace"),
])
def test_namespace_key_is_403_outside_its_namespace(namespace_key, method, path, body):
    _, bot, key = namespace_key
    other = NamespaceFactory()
    # Even an Installation-wide grant does not widen a Namespace-scoped key.
    grant(bot, "read:installation", "create:namespace", "read:namespace", "delete:namespace")
    before = snapshot()
    response = ApiClient(key).request(method, path.format(other=other.id), body)
    assert response.status == 403
    assert response.error_code == "FORBIDDEN"
    assert denials_by(bot.id) == 1
    assert snapshot() == (before[0], before[1] + 1, before[2])
    assert Namespace.objects.get(id=other.id).status == other.status


def test_installation_key_needs_its_own_grants(bootstrap):
    """A key acts with its principal's grants, never its issuer's."""
    bot = service_principal("bare")
    key = key_for(bot)
    before = snapshot()
    response = ApiClient(key).get("/installation")
    assert response.status == 403
    assert denials_by(bot.id) == 1
    assert snapshot() == (before[0], before[1] + 1, before[2])


def test_person_without_principal_is_403_and_audited(bootstrap):
    user = get_user_model().objects.create_user(username="stray", password="a-long-test-password")
    client = signed_in(user=user)
    for method, path, body in (("GET", "/installation", None), ("POST", "/namespaces", {"name": "team"})):
        before = snapshot()
        response = client.request(method, path, body)
        assert response.status == 403
        assert response.error_code == "FORBIDDEN"
        assert snapshot() == (before[0], before[1] + 1, before[2])
        event = AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL).order_by("-occurred_at").first()
        assert event.actor_id is None
        assert event.details["userId"] == str(user.pk)


def test_key_of_a_principal_whose_scope_changed_fails_closed(bootstrap):
    bot = service_principal("mover")
    grant(bot, "read:installation")
    key = key_for(bot)
    assert ApiClient(key).get("/installation").status == 200
    Principal.objects.filter(id=bot.id).update(namespace=NamespaceFactory())
    assert ApiClient(key).get("/installation").status == 401


def test_key_of_an_agent_principal_is_401(bootstrap):
    agent = AgentFactory()
    key = key_for(agent.service_principal, namespace=agent.namespace)
    before = snapshot()
    assert ApiClient(key).get(f"/namespaces/{agent.namespace_id}").status == 401
    assert snapshot() == before


def test_person_session_acts_with_own_grants(bootstrap):
    person = human("reader")
    grant(person, "read:installation")
    client = signed_in(person)
    assert client.get("/installation").status == 200
    before = snapshot()
    assert client.post("/namespaces", {"name": "team"}).status == 403
    assert denials_by(person.id) == 1
    assert snapshot() == (before[0], before[1] + 1, before[2])
