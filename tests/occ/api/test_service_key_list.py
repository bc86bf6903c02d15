"""Issue 27, the API on par with the console: a service principal's API keys
(``GET /api/auth/service-keys``) as its console page lists them, read through the page's own
selector (``occ.selectors.access.service_key_list``) and authorized as issuing and revoking are.

Metadata only: the answer never holds a key or its digest. A revoked key is deleted (OCC keeps
no revoked record), so it is not listed; an expired one is, as ``"state": "expired"``.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from occ.iam.keys import digest
from occ.models import AccessBinding, AuditEvent, AuditKind, Principal, Role, ServiceKey
from occ.services.bootstrap import ADMINISTRATOR_ROLE_NAME
from occ.timestamps import rfc3339
from tests.conftest import ApiClient
from tests.factories import AgentFactory, NamespaceFactory, grant, human, key_for, service_principal

KEYS = "/api/auth/service-keys"
MISSING = "sp_00000000-0000-4000-8000-000000000000"


def _issue(api: ApiClient, principal: Principal, name: str, **body: object) -> dict:
    response = api.post(KEYS, {"servicePrincipalId": principal.id, "name": name, **body})
    assert response.status == 201
    return response.data


def test_lists_the_keys_metadata_newest_first_and_never_a_key_or_digest(api, bootstrap):
    principal = service_principal("automation")
    first = _issue(api, principal, "ci")
    second = _issue(api, principal, "deploys", expiresIn=86_400)
    revoked = _issue(api, principal, "old")
    assert api.delete(f"{KEYS}/{revoked['id']}").status == 200
    second_record = ServiceKey.objects.get(id=second["id"])
    ServiceKey.objects.filter(id=first["id"]).update(expires_at=timezone.now() - timedelta(minutes=1))
    key_for(service_principal("someone else"))  # another principal's key is not listed

    response = api.get(f"{KEYS}?servicePrincipalId={principal.id}")
    assert response.status == 200
    listed = response.data["serviceKeys"]
    assert response.data["nextCursor"] is None
    assert [key["id"] for key in listed] == [second["id"], first["id"]]  # newest first; the revoked one is gone
    admin = Principal.objects.get(id=bootstrap.key.principal_id)
    assert listed[0] == {"id": second["id"], "name": "deploys", "servicePrincipalId": principal.id,
                         "namespaceId": None, "createdAt": rfc3339(second_record.created_at), "createdBy": admin.id,
                         "createdByName": admin.name, "expiresAt": second["expiresAt"], "state": "active"}
    assert listed[1]["state"] == "expired"

    text = json.dumps(response.body)
    for issued in (first, second, revoked):
        assert issued["key"] not in text
        assert digest(issued["key"]) not in text
    assert "digest" not in text
    assert '"key"' not in text


def test_a_namespace_principals_keys_are_read_with_its_namespace(api):
    namespace = NamespaceFactory()
    principal = service_principal("ns-bot", namespace)
    issued = _issue(api, principal, "nightly", namespaceId=namespace.id)
    listed = api.get(f"{KEYS}?servicePrincipalId={principal.id}&namespaceId={namespace.id}").data["serviceKeys"]
    assert [(key["id"], key["namespaceId"]) for key in listed] == [(issued["id"], namespace.id)]
    assert listed[0]["servicePrincipalId"] == principal.id


def test_a_principal_with_no_keys_lists_none(api):
    assert api.get(f"{KEYS}?servicePrincipalId={service_principal('idle').id}").data == {"serviceKeys": [],
                                                                                           "nextCursor": None}


@pytest.mark.parametrize("query", [
    pytest.param(lambda ns, sp, agent_sp: f"servicePrincipalId={sp}", id="namespace-principal-without-its-namespace"),
    pytest.param(lambda ns, sp, agent_sp: f"servicePrincipalId={sp}&namespaceId={NamespaceFactory().id}",
                 id="namespace-principal-under-another-namespace"),
    pytest.param(lambda ns, sp, agent_sp: f"servicePrincipalId={agent_sp}&namespaceId={ns}", id="an-agents-principal"),
    pytest.param(lambda ns, sp, agent_sp: f"servicePrincipalId={MISSING}", id="missing"),
    pytest.param(lambda ns, sp, agent_sp: f"servicePrincipalId={human('pat').id}", id="a-person"),
])
def test_a_principal_not_of_the_scope_is_not_found(api, query):
    namespace = NamespaceFactory()
    principal = service_principal("ns-bot", namespace)
    key_for(principal, namespace=namespace)
    agent = AgentFactory(namespace=namespace)
    key_for(agent.service_principal, namespace=namespace)
    response = api.get(f"{KEYS}?{query(namespace.id, principal.id, agent.service_principal.id)}")
    assert response.status == 404
    assert response.error_code == "NOT_FOUND"
    assert "data" not in response.body


@pytest.mark.parametrize("query", [
    pytest.param("", id="no-principal"),
    pytest.param(f"servicePrincipalId={MISSING}&principalId=sp_x", id="unknown-parameter"),
    pytest.param(f"servicePrincipalId={MISSING}&servicePrincipalId={MISSING}", id="repeated"),
    pytest.param("servicePrincipalId=%00", id="control-character"),
    pytest.param("servicePrincipalId=" + "s" * 65, id="too-long"),
])
def test_a_bad_query_is_refused(api, query):
    response = api.get(f"{KEYS}?{query}" if query else KEYS)
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"


def _namespace_admin(namespace) -> tuple[ApiClient, Principal]:
    bot = service_principal("ns-admin", namespace)
    # Even an administrator Role bound inside the Namespace cannot read Installation business.
    AccessBinding.objects.create(principal=bot, role=Role.objects.get(name=ADMINISTRATOR_ROLE_NAME),
                                 namespace=namespace)
    return ApiClient(key_for(bot, namespace=namespace)), bot


def _installation_reader(namespace) -> tuple[ApiClient, Principal]:
    bot = service_principal("reader")
    grant(bot, "read:namespace", "read:installation", namespace=None)
    return ApiClient(key_for(bot)), bot


def _person_without_administer(namespace) -> tuple[ApiClient, Principal]:
    person = human("viewer")
    grant(person, "read:installation")
    client = ApiClient(None)
    client.client.force_login(person.user)
    return client, person


@pytest.mark.parametrize("caller", [
    pytest.param(_namespace_admin, id="namespace-administrator-key"),
    pytest.param(_installation_reader, id="installation-reader-key"),
    pytest.param(_person_without_administer, id="person-without-administer"),
])
def test_listing_needs_installation_administer_before_anything_is_looked_up(bootstrap, caller):
    namespace = NamespaceFactory()
    target = service_principal("ns-bot", namespace)
    key_for(target, namespace=namespace)
    client, principal = caller(namespace)
    for query in (f"servicePrincipalId={target.id}&namespaceId={namespace.id}", f"servicePrincipalId={MISSING}"):
        response = client.get(f"{KEYS}?{query}")
        assert response.status == 403  # the same for a principal that exists and one that does not
        assert response.error_code == "FORBIDDEN"
        assert "data" not in response.body
    assert AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL, actor_id=principal.id).count() == 2


def test_anonymous_is_401(anon_api):
    principal = service_principal("automation")
    key_for(principal)
    response = anon_api.get(f"{KEYS}?servicePrincipalId={principal.id}")
    assert response.status == 401
    assert response.error_code == "UNAUTHENTICATED"
