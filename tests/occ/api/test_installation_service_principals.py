"""Issue 27, the API on par with the console: the Installation's own service principals
(``/installation/service-principals``), as the console's Members, Service principals page has
them: list (search, keyset pages), create, show, delete; their keys through
``/api/auth/service-keys`` without a ``namespaceId``. The same services and selectors as the
console (``service_principal_create`` / ``service_principal_delete`` with ``namespace_id=None``),
authorized with ``installation:administer`` and audited in the service's transaction."""

from __future__ import annotations

import pytest
from django.test import Client

from occ.models import AccessBinding, AuditEvent, AuditKind, Principal, Role, ServiceKey
from occ.services.bootstrap import ADMINISTRATOR_ROLE_NAME
from tests.conftest import ApiClient
from tests.factories import NamespaceFactory, grant, key_for, service_principal

PRINCIPALS = "/installation/service-principals"
KEYS = "/api/auth/service-keys"
MISSING = "sp_00000000-0000-4000-8000-000000000000"


def test_create_issue_a_key_show_list_and_delete_audited(api, bootstrap):
    created = api.post(PRINCIPALS, {"name": "nightly exports"})
    assert created.status == 201, created.body
    principal = created.data
    assert principal["id"].startswith("sp_")
    assert {k: principal[k] for k in ("name", "namespaceId", "installationRoles", "keyCount")} == {
        "name": "nightly exports", "namespaceId": None, "installationRoles": [], "keyCount": 0}
    record = Principal.objects.get(id=principal["id"])
    assert record.namespace_id is None
    assert record.agent_id is None
    event = AuditEvent.objects.get(action="openclaw.iam.service_principals.create", resource_id=principal["id"])
    assert (event.kind, event.actor_id, event.namespace_id) == (AuditKind.MUTATION, bootstrap.key.principal_id, None)

    issued = api.post(KEYS, {"servicePrincipalId": principal["id"], "name": "exports"})
    assert issued.status == 201
    assert "namespaceId" not in issued.data
    AccessBinding.objects.create(principal=record, namespace=None,
                                 role=Role.objects.get(name=ADMINISTRATOR_ROLE_NAME, namespace__isnull=True))
    shown = api.get(f"{PRINCIPALS}/{principal['id']}")
    assert shown.status == 200
    assert (shown.data["keyCount"], shown.data["installationRoles"]) == (1, [ADMINISTRATOR_ROLE_NAME])
    listed = api.get(f"{PRINCIPALS}?q=NIGHTLY").data
    assert listed == {"servicePrincipals": [shown.data], "nextCursor": None}
    assert ApiClient(issued.data["key"]).get("/installation").status == 200  # the key acts with its Role

    assert api.delete(f"{PRINCIPALS}/{principal['id']}").status == 204
    assert not Principal.objects.filter(id=principal["id"]).exists()
    assert not ServiceKey.objects.filter(id=issued.data["id"]).exists()
    deleted = AuditEvent.objects.get(action="openclaw.iam.service_principals.delete", resource_id=principal["id"])
    assert deleted.details["revokedServiceKeys"] == [issued.data["id"]]
    assert ApiClient(issued.data["key"]).get("/installation").status == 401
    assert api.get(f"{PRINCIPALS}/{principal['id']}").status == 404


def test_the_list_pages_by_name_with_a_cursor_and_holds_only_installation_principals(api):
    names = [f"bot {i:02d}" for i in range(5)]
    for name in reversed(names):
        service_principal(name)
    namespace = NamespaceFactory()
    service_principal("bot namespace-only", namespace)  # a Namespace's: on its Access page, not here

    seen: list[str] = []
    cursor = ""
    pages = 0
    while True:
        page = api.get(f"{PRINCIPALS}?q=bot&limit=2" + (f"&cursor={cursor}" if cursor else ""))
        assert page.status == 200, page.body
        seen += [p["name"] for p in page.data["servicePrincipals"]]
        pages += 1
        cursor = page.data["nextCursor"] or ""
        if not cursor:
            break
    assert seen == names
    assert pages == 3
    assert api.get(f"{PRINCIPALS}?cursor=not-a-cursor").status == 400
    assert api.get(f"{PRINCIPALS}?page=2").status == 400  # unknown query parameters are refused
    assert api.get(f"{PRINCIPALS}?q=%00").status == 400


@pytest.mark.parametrize("path", [
    pytest.param(lambda ns_sp: f"{PRINCIPALS}/{ns_sp}", id="a-namespace-principal"),
    pytest.param(lambda ns_sp: f"{PRINCIPALS}/{MISSING}", id="missing"),
])
def test_a_principal_not_of_the_installation_is_not_found_and_not_deleted(api, path):
    ns_sp = service_principal("ns bot", NamespaceFactory())
    assert api.get(path(ns_sp.id)).status == 404
    assert api.delete(path(ns_sp.id)).status == 404
    assert Principal.objects.filter(id=ns_sp.id).exists()


def test_nobody_deletes_the_principal_they_act_as(db):
    principal = service_principal("self")
    grant(principal, "administer:installation")
    client = ApiClient(key_for(principal))
    response = client.delete(f"{PRINCIPALS}/{principal.id}")
    assert (response.status, response.error_code) == (409, "RESOURCE_CONFLICT")
    assert Principal.objects.filter(id=principal.id).exists()


def test_a_namespace_administrator_is_refused_and_the_denial_is_audited(db):
    namespace = NamespaceFactory()
    target = service_principal("installation bot")
    admin = service_principal("ns admin", namespace)
    grant(admin, "administer:namespace", "read:namespace", namespace=namespace)
    client = ApiClient(key_for(admin, namespace=namespace))
    before = AuditEvent.objects.count()
    for method, path, body in (("GET", PRINCIPALS, None), ("POST", PRINCIPALS, {"name": "sneaky"}),
                               ("GET", f"{PRINCIPALS}/{target.id}", None),
                               ("DELETE", f"{PRINCIPALS}/{target.id}", None)):
        response = client.request(method, path, body)
        assert (response.status, response.error_code) == (403, "FORBIDDEN"), (method, path)
    assert AuditEvent.objects.count() - before == 4
    assert AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL).count() == 4
    assert Principal.objects.filter(id=target.id).exists()
    assert not Principal.objects.filter(name="sneaky").exists()


def test_the_list_is_documented_as_a_keyset_page(db):
    document = Client().get("/api/openapi.json").json()
    operation = document["paths"][PRINCIPALS]["get"]
    query = {p["name"]: p["schema"] for p in operation["parameters"] if p["in"] == "query"}
    assert set(query) == {"q", "cursor", "limit"}
    assert (query["limit"]["minimum"], query["limit"]["maximum"]) == (1, 100)
    envelope = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    data = document["components"]["schemas"][envelope]["properties"]["data"]["$ref"].rsplit("/", 1)[-1]
    assert set(document["components"]["schemas"][data]["properties"]) == {"servicePrincipals", "nextCursor"}
    assert {"post", "get"} <= set(document["paths"][PRINCIPALS])
    assert {"get", "delete"} <= set(document["paths"][PRINCIPALS + "/{principal_id}"])
