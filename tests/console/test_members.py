"""Members, issue 26: a person added with a Role on Namespaces or none; disabling, re-enabling
and removing them (sessions end at once, audited); a one-time password that must be changed at
first sign-in; everyone's own password. Through the console as a browser uses it, and the API."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model

from occ.iam.roles import ADMINISTRATOR, DEVELOPER, VIEWER
from occ.models import AccessBinding, AuditEvent, Namespace, Principal, Role
from tests.conftest import ApiClient
from tests.console.conftest import ConsoleClient, fragment_root
from tests.console.keyset import REFUSED_NOTE, walk
from tests.factories import NamespaceFactory, human

MEMBERS = "/console/members"
PASSWORD = "a-fine-long-passphrase"
ONE_TIME = "tidal-ochre-lantern-57"


def role(name: str) -> Role:
    return Role.objects.get(name=name, namespace__isnull=True)


def signed_in(username: str, password: str = PASSWORD) -> ConsoleClient:
    client = ConsoleClient()
    client.sign_in(username, password)
    return client


def add(console: ConsoleClient, username: str, **fields) -> Principal:
    response = console.hx_post("/console/members", {"username": username, "password": PASSWORD, **fields})
    assert fragment_root(response.content.decode()) == "div#accounts-panel"
    return Principal.objects.get(user__username=username)


def test_a_person_gets_a_role_on_chosen_namespaces_and_sees_only_those(console, bootstrap):
    default = Namespace.objects.get(name="default")
    NamespaceFactory(name="team-elsewhere")
    page = console.get("/console/members").content.decode()
    assert f'value="{role(VIEWER).id}"' in page
    assert f'value="{default.id}"' in page
    person = add(console, "vic", role=role(VIEWER).id, namespaces=[default.id])
    assert list(AccessBinding.objects.filter(principal=person).values_list("role__name", "namespace_id")) == [
        (VIEWER, default.id)]
    event = AuditEvent.objects.get(action="openclaw.accounts.create", resource_id=person.id)
    assert event.details["namespaceIds"] == [default.id]
    assert PASSWORD not in json.dumps(event.details)
    vic = signed_in("vic")
    namespaces = vic.get("/console/namespaces").content.decode()
    assert "default" in namespaces
    assert "team-elsewhere" not in namespaces
    assert vic.get("/console/members").status_code == 403


def test_a_person_without_a_role_signs_in_and_holds_nothing(console):
    person = add(console, "nora")
    assert not AccessBinding.objects.filter(principal=person).exists()
    assert "None" in console.get("/console/members/people/" + person.id).content.decode()
    assert signed_in("nora").get("/console/namespaces").status_code == 200


def test_disable_ends_sessions_at_once_and_enable_lets_them_back(console):
    person = add(console, "dev", role=role(DEVELOPER).id)
    dev = signed_in("dev")
    assert dev.get("/console/namespaces").status_code == 200
    response = console.hx_post(f"/console/members/people/{person.id}/active", {"active": "0"})
    assert fragment_root(response.content.decode()) == "div#member-panel"
    assert "Enable account" in response.content.decode()
    assert dev.get("/console/namespaces").status_code == 302  # the session ended
    refused = ConsoleClient().post("/console/sign-in", {"username": "dev", "password": PASSWORD})
    assert refused.status_code == 200
    assert "not right" in refused.content.decode()
    assert AuditEvent.objects.filter(action="openclaw.accounts.disable", resource_id=person.id).count() == 1
    console.post(f"/console/members/people/{person.id}/active", {"active": "1"})
    assert AuditEvent.objects.filter(action="openclaw.accounts.enable", resource_id=person.id).count() == 1
    assert signed_in("dev").get("/console/namespaces").status_code == 200


def test_remove_deletes_the_account_its_bindings_and_ends_its_session(console):
    person = add(console, "gone", role=role(VIEWER).id)
    gone = signed_in("gone")
    response = console.post(f"/console/members/people/{person.id}/delete", {"confirm": "on"})
    assert response.status_code == 302
    assert response.headers["Location"] == "/console/members"
    assert not Principal.objects.filter(id=person.id).exists()
    assert not get_user_model().objects.filter(username="gone").exists()
    assert not AccessBinding.objects.filter(principal_id=person.id).exists()
    assert gone.get("/console/namespaces").status_code == 302
    event = AuditEvent.objects.get(action="openclaw.accounts.delete", resource_id=person.id)
    assert event.details["username"] == "gone"
    assert len(event.details["removedAccessBindings"]) == 1


def test_nobody_disables_themselves_nor_the_last_active_administrator(console, api, bootstrap):
    me = Principal.objects.get(user__username="admin")
    console.post(f"/console/members/people/{me.id}/active", {"active": "0"})
    assert get_user_model().objects.get(username="admin").is_active
    other = add(console, "root2", role=role(ADMINISTRATOR).id)
    signed_in("root2").post(f"/console/members/people/{me.id}/active", {"active": "0"})
    assert not get_user_model().objects.get(username="admin").is_active
    # root2 is now the last active person with the administrator Role everywhere.
    refused = api.request("DELETE", f"/api/auth/accounts/{other.id}")
    assert refused.status == 409
    assert "last active administrator" in refused.body["error"]["message"]
    assert api.post(f"/api/auth/accounts/{other.id}/disable", {}).status == 409
    assert Principal.objects.filter(id=other.id).exists()


def test_a_one_time_password_must_be_changed_at_first_sign_in(console):
    person = add(console, "temp", role=role(VIEWER).id)
    old_session = signed_in("temp")
    response = console.hx_post(f"/console/members/people/{person.id}/password", {"password": ONE_TIME})
    assert fragment_root(response.content.decode()) == "div#member-panel"
    assert ONE_TIME not in response.content.decode()
    assert old_session.get("/console/namespaces").status_code == 302  # the password changed: signed out
    temp = signed_in("temp", ONE_TIME)
    forced = temp.get("/console/namespaces")
    assert forced.status_code == 302
    assert forced.headers["Location"] == "/console/account/password"
    assert temp.get("/api/auth/session").status_code == 200  # who they are, still answered
    assert temp.get("/namespaces").status_code == 403  # nothing else through the API either
    page = temp.hx_post("/console/account/password", {"current_password": "wrong", "new_password": PASSWORD + "x"})
    assert fragment_root(page.content.decode()) == "div#password-panel"
    assert "not right" in page.content.decode()
    done = temp.post("/console/account/password", {"current_password": ONE_TIME, "new_password": PASSWORD + "!"})
    assert done.status_code == 302
    assert temp.get("/console/namespaces").status_code == 200  # this session goes on
    assert not Principal.objects.get(id=person.id).must_change_password
    actions = list(AuditEvent.objects.filter(resource_id=person.id).order_by("occurred_at")
                   .values_list("action", flat=True))
    assert actions[-2:] == ["openclaw.accounts.password.set", "openclaw.accounts.password.change"]
    for event in AuditEvent.objects.filter(resource_id=person.id):
        assert ONE_TIME not in json.dumps(event.details)
        assert PASSWORD not in json.dumps(event.details)


def test_the_api_manages_accounts_too(api, bootstrap):
    default = Namespace.objects.get(name="default")
    created = api.post("/api/auth/accounts", {"username": "ana", "password": PASSWORD,
                                              "roleId": role(DEVELOPER).id, "namespaceIds": [default.id]})
    assert created.status == 201
    principal_id = created.data["principalId"]
    assert api.post(f"/api/auth/accounts/{principal_id}/disable", {}).data == {
        "principalId": principal_id, "active": False, "mustChangePassword": False}
    assert api.post(f"/api/auth/accounts/{principal_id}/enable", {}).data["active"] is True
    assert api.post(f"/api/auth/accounts/{principal_id}/password", {"password": ONE_TIME}).data[
        "mustChangePassword"] is True
    assert api.request("DELETE", f"/api/auth/accounts/{principal_id}").status == 204
    assert api.request("DELETE", f"/api/auth/accounts/{principal_id}").status == 404
    unknown = api.post("/api/auth/accounts", {"username": "bo", "password": PASSWORD, "roleId": role(VIEWER).id,
                                              "namespaceIds": ["ns_00000000-0000-4000-8000-000000000000"]})
    assert unknown.status == 400
    assert unknown.body["error"]["details"][0]["path"] == "/namespaceIds"
    assert not get_user_model().objects.filter(username="bo").exists()


@pytest.mark.parametrize("path", ["/api/auth/accounts/{p}/disable", "/api/auth/accounts/{p}/password"])
def test_a_key_that_cannot_administer_is_refused(bootstrap, path):
    from tests.factories import grant, key_for, service_principal

    reader = service_principal("reader")
    grant(reader, "read:namespace", namespace=Namespace.objects.get(name="default"))
    admin = Principal.objects.get(user__username="admin")
    response = ApiClient(key_for(reader)).post(path.format(p=admin.id), {"password": ONE_TIME})
    assert response.status == 403
    assert get_user_model().objects.get(username="admin").is_active


def test_the_access_page_shows_every_binding_that_grants_and_offers_only_existing_kinds(console, bootstrap):
    default = Namespace.objects.get(name="default")
    person = add(console, "vera", role=role(VIEWER).id, namespaces=[default.id])
    auditor = Role.objects.create(name="auditor-only", permissions=["read:installation"])
    AccessBinding.objects.create(principal=person, role=auditor)  # grants nothing inside a Namespace
    page = console.get(f"/console/namespaces/{default.id}/access").content.decode()
    rows = {row for row in page.split("<tr id=\"binding-")[1:]}
    administrator = [r for r in rows if ">administrator<" in r]
    assert len(administrator) == 2  # the bootstrap person and the Installation's service principal
    assert all("every Namespace (Installation-wide)" in r for r in administrator)
    assert any(">Viewer<" in r and "vera" in r and f"/console/members/people/{person.id}" in r for r in rows)
    assert "auditor-only" not in page
    assert 'value="read:agent"' in page
    for kind in ("preset", "service_account", "credential_source"):
        assert f':{kind}"' not in page


# --- keyset pages ----------------------------------------------------------------------------

def people_shown(html: str) -> list[str]:
    return re.findall(r"person \d\d", html)


@pytest.mark.parametrize("htmx", [False, True], ids=["plain-links", "htmx"])
def test_people_are_keyset_paged_by_name_and_the_search_rides_in_the_pager(console, monkeypatch, htmx):
    monkeypatch.setattr("console.views.members.PAGE_SIZE", 3)
    for n in (4, 0, 6, 2, 5, 1, 3):  # made out of name order
        Principal.objects.filter(id=human(f"person-{n}").id).update(name=f"person {n:02}")

    def get(url: str) -> str:
        html = (console.hx_get if htmx else console.get)(url).content.decode()
        if htmx:
            assert fragment_root(html) == "div#accounts-table"
        return html

    pages = walk(get, f"{MEMBERS}?q=person", people_shown)  # the next links keep q=person
    assert pages == [["person 00", "person 01", "person 02"], ["person 03", "person 04", "person 05"], ["person 06"]]


@pytest.mark.parametrize("cursor", ["garbage!", "Zm9v", "eAB5fHNwXzE", "x" * 5000],
                         ids=["not-base64", "no-id", "nul", "too-long"])
def test_a_people_cursor_that_is_not_ours_shows_the_first_page_with_a_note(console, cursor):
    for get in (console.get, console.hx_get):
        response = get(MEMBERS, {"after": cursor})
        assert response.status_code == 200
        html = response.content.decode()
        assert 'id="account-' in html
        assert REFUSED_NOTE in html
