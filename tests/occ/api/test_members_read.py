"""Issue 27, the API on par with the console: the Members list (``GET /api/auth/accounts`` and
one person) and the Share form's choices (``GET …/agents/{agt}/shares/subjects``) read the
console's own selectors, authorized as the console's pages are."""

from __future__ import annotations

from occ.models import Principal
from tests.conftest import ApiClient
from tests.factories import AgentFactory, NamespaceFactory, grant, human, key_for, service_principal


def test_the_members_list_and_one_person_as_the_console_shows_them(api, bootstrap):
    ana = human("ana")
    Principal.objects.filter(id=ana.id).update(name="Ana Lima")
    ana.user.is_active = False
    ana.user.save(update_fields=["is_active"])
    human("bruno")

    people = api.get("/api/auth/accounts").data["accounts"]
    by_username = {person["username"]: person for person in people}
    assert {"admin", "ana", "bruno"} <= set(by_username)
    assert by_username["ana"] == {**by_username["ana"], "principalId": ana.id, "name": "Ana Lima", "active": False,
                                  "mustChangePassword": False, "roles": []}
    assert by_username["admin"]["roles"]  # the Installation administrator's Role, by name
    assert [p["username"] for p in api.get("/api/auth/accounts?q=LIMA").data["accounts"]] == ["ana"]
    assert api.get(f"/api/auth/accounts/{ana.id}").data == by_username["ana"]

    roles = {role["name"]: role["id"] for role in api.get("/api/auth/roles").data["roles"]}
    assert {"Viewer", "Agent user", "Developer"} <= set(roles)
    assert all(role_id.startswith("role_") for role_id in roles.values())

    assert api.get("/api/auth/accounts?q=%00").status == 400  # never reaches the database
    assert api.get("/api/auth/accounts?search=x").status == 400
    assert api.get("/api/auth/accounts/prn_00000000-0000-4000-8000-000000000000").status == 404


def test_only_an_installation_administrator_reads_the_members(db):
    namespace = NamespaceFactory()
    reader = service_principal("reader")
    grant(reader, "read:namespace", "read:agent", namespace=namespace)
    client = ApiClient(key_for(reader))
    assert client.get("/api/auth/accounts").status == 403
    assert client.get("/api/auth/roles").status == 403
    assert client.get(f"/api/auth/accounts/{human('carla').id}").status == 403


def test_share_subjects_are_the_share_forms_choices(api, ready_namespace):
    agent = AgentFactory(namespace=ready_namespace, name="helpdesk")
    person = human("dora")
    local = service_principal("ci bot", namespace=ready_namespace)
    elsewhere = service_principal("other bot", namespace=NamespaceFactory())
    subjects = api.get(f"/namespaces/{ready_namespace.id}/agents/{agent.id}/shares/subjects").data["subjects"]
    found = {(s["id"], s["name"], s["kind"]) for s in subjects}
    assert (person.id, "dora", "human") in found
    assert (local.id, "ci bot", "service") in found
    assert elsewhere.id not in {s["id"] for s in subjects}
    assert agent.service_principal.id not in {s["id"] for s in subjects}  # not the Agent's own

    chatter = service_principal("chatter")
    grant(chatter, "read:namespace", "read:agent", "invoke:agent", namespace=ready_namespace)
    refused = ApiClient(key_for(chatter)).get(f"/namespaces/{ready_namespace.id}/agents/{agent.id}/shares/subjects")
    assert refused.status == 403  # sharing, and whom to, needs administer:agent
