"""The Installation's own service principals (no Namespace): the list (search, pages, empty state),
creating one, its keys (shown exactly once; revoke behind the confirmation, Cancel focused),
deleting it, and who may see any of it (a 403 for a person without ``installation:administer``)."""

from __future__ import annotations

import json
import re

import pytest

from occ.commands.iam import ServicePrincipalCreate
from occ.iam.keys import actor_for_token, digest
from occ.models import AuditEvent, AuditKind, Principal, ServiceKey
from occ.services.iam_policy import service_principal_create
from tests.console.conftest import ConsoleClient, fragment_root, is_error_toast
from tests.console.keyset import REFUSED_NOTE, link
from tests.factories import grant, human

TOKEN = re.compile(r"occ_sk_[A-Za-z0-9_-]{20,}")
LIST = "/console/members/service-principals"


def triggers(response) -> dict:
    return json.loads(response.headers.get("HX-Trigger", "{}"))


@pytest.fixture
def fleet(console_actor) -> Principal:
    return service_principal_create(actor=console_actor, namespace_id=None,
                                    command=ServicePrincipalCreate(name="Fleet automation"))


def url(principal) -> str:
    return f"{LIST}/{principal.id}"


def test_the_list_names_each_principal_with_its_roles_and_keys(console, fleet):
    html = console.get(LIST).content.decode()
    assert 'id="installation-principals-panel"' in html
    assert "Fleet automation" in html
    assert "installation-administrator" in html  # the bootstrap's, with its key and Role
    row = re.search(r'<tr id="principal-[^"]+">(?:(?!</tr>).)*installation-administrator.*?</tr>', html, re.S)
    assert "administrator" in row.group(0)
    assert "1 API key" in row.group(0)
    assert 'aria-current="page"' in html
    assert "Service principals" in html


def test_the_search_answers_its_table_with_an_empty_state(console, fleet):
    response = console.hx_get(LIST, {"q": "fleet"})
    html = response.content.decode()
    assert fragment_root(html) == "div#installation-principals-table"
    assert "Fleet automation" in html
    assert "installation-administrator" not in html
    none = console.hx_get(LIST, {"q": "nothing-like-this"}).content.decode()
    assert "No matching service principals" in none


def test_the_list_is_keyset_paged_by_name(console, console_actor):
    for n in (25, 3, 17, 0, 9, 21, 12, 6, 1, 24, 14, 19, 2, 8, 11, 4, 23, 16, 7, 22, 10, 5, 20, 13, 18, 15):
        service_principal_create(actor=console_actor, namespace_id=None,
                                 command=ServicePrincipalCreate(name=f"bot {n:02}"))
    first = console.get(LIST).content.decode()
    following = link(first, "next")
    assert following is not None
    second = console.hx_get(following).content.decode()
    assert fragment_root(second) == "div#installation-principals-table"
    # 27 by name, 25 a page: the second holds "bot 25" and the bootstrap's, not the first.
    assert "bot 25" in second
    assert "installation-administrator" in second
    assert "bot 00" not in second
    assert link(second, "next") is None
    assert link(second, "first") == LIST


@pytest.mark.parametrize("cursor", ["garbage!", "Zm9v", "eAB5fHNwXzE", "x" * 5000],
                         ids=["not-base64", "no-id", "nul", "too-long"])
def test_a_cursor_that_is_not_ours_shows_the_first_page_with_a_note(console, cursor):
    for get in (console.get, console.hx_get):
        response = get(LIST, {"after": cursor})
        assert response.status_code == 200
        html = response.content.decode()
        assert "installation-administrator" in html
        assert REFUSED_NOTE in html


def test_creating_one_goes_to_its_page_and_is_audited(console):
    response = console.hx_post(LIST, {"name": "Nightly reports"})
    principal = Principal.objects.get(name="Nightly reports")
    assert principal.namespace_id is None
    assert response.headers["HX-Redirect"] == url(principal)
    assert AuditEvent.objects.filter(action="openclaw.iam.service_principals.create", resource_id=principal.id,
                                     namespace_id__isnull=True).exists()
    page = console.get(url(principal)).content.decode()
    assert "Nightly reports" in page
    assert "No keys" in page


def test_a_refused_name_is_marked_on_its_field(console):
    html = console.hx_post(LIST, {"name": " padded "}).content.decode()
    assert fragment_root(html) == "div#installation-principals-panel"
    assert re.search(r'<input[^>]*name="name"[^>]*aria-invalid="true"', html)
    assert not Principal.objects.filter(name__contains="padded").exists()


def test_a_new_key_is_shown_once_and_never_again(console, fleet):
    response = console.hx_post(f"{url(fleet)}/keys", {"name": "fleet-ci", "expires_in_days": "7"})
    html = response.content.decode()
    assert fragment_root(html) == "div#keys-panel"
    token = TOKEN.search(html).group(0)
    assert 'data-copy-from="#new-key-value"' in html
    record = ServiceKey.objects.get(principal=fleet)
    assert record.digest == digest(token)
    assert actor_for_token(token).scope_namespace_id is None
    for again in (console.get(url(fleet)), console.hx_get(url(fleet))):
        assert TOKEN.search(again.content.decode()) is None
    assert token not in json.dumps(list(AuditEvent.objects.values_list("details", flat=True)))


def test_revoking_asks_first_with_cancel_focused(console, fleet):
    token = TOKEN.search(console.hx_post(f"{url(fleet)}/keys", {"name": "ci", "expires_in_days": "1"})
                         .content.decode()).group(0)
    key = ServiceKey.objects.get(principal=fleet)
    dialog = console.hx_get(f"{url(fleet)}/keys/{key.id}/revoke").content.decode()
    assert fragment_root(dialog) == "dialog#key-revoke-dialog"
    assert re.search(r"<button[^>]*data-close-modal[^>]*autofocus", dialog)
    assert ServiceKey.objects.filter(id=key.id).exists()
    response = console.hx_post(f"{url(fleet)}/keys/{key.id}/revoke")
    assert fragment_root(response.content.decode()) == "div#keys-panel"
    assert response.headers["HX-Retarget"] == "#keys-panel"
    assert "occ:close-modal" in triggers(response)
    assert actor_for_token(token) is None
    assert console.get(f"{url(fleet)}/keys/{key.id}/revoke").status_code == 404


def test_deleting_asks_first_then_ends_its_keys(console, fleet):
    token = TOKEN.search(console.hx_post(f"{url(fleet)}/keys", {"name": "ci", "expires_in_days": "1"})
                         .content.decode()).group(0)
    dialog = console.hx_get(f"{url(fleet)}/delete").content.decode()
    assert fragment_root(dialog) == "dialog#principal-delete-dialog"
    assert re.search(r"<button[^>]*data-close-modal[^>]*autofocus", dialog)
    assert "1 API key stops working" in dialog
    assert console.get(f"{url(fleet)}/delete").status_code == 200  # the page form, without JavaScript
    response = console.hx_post(f"{url(fleet)}/delete")
    assert response.headers["HX-Redirect"] == LIST
    assert not Principal.objects.filter(id=fleet.id).exists()
    assert actor_for_token(token) is None
    assert AuditEvent.objects.filter(action="openclaw.iam.service_principals.delete", resource_id=fleet.id).exists()
    assert console.get(url(fleet)).status_code == 404


def test_a_namespace_principal_is_not_reachable_here(console, console_actor, ready_namespace):
    theirs = service_principal_create(actor=console_actor, namespace_id=ready_namespace.id,
                                      command=ServicePrincipalCreate(name="Namespace bot"))
    assert console.get(url(theirs)).status_code == 404
    response = console.hx_post(f"{url(theirs)}/delete")
    assert response.status_code == 404
    assert is_error_toast(response)
    assert Principal.objects.filter(id=theirs.id).exists()
    assert "Namespace bot" not in console.get(LIST).content.decode()


@pytest.fixture
def namespace_reader(db, bootstrap, ready_namespace) -> ConsoleClient:
    grant(human("reader"), "read:namespace", "read:agent", namespace=ready_namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    return client


def test_a_person_without_administer_gets_403_and_no_link(namespace_reader, fleet):
    for page in (LIST, url(fleet), f"{url(fleet)}/delete"):
        response = namespace_reader.get(page)
        assert response.status_code == 403, page
        assert "Fleet automation" not in response.content.decode()
    assert LIST not in namespace_reader.get("/console/namespaces").content.decode()
    for post, data in ((LIST, {"name": "sneaky"}), (f"{url(fleet)}/keys", {"name": "mine", "expires_in_days": "1"}),
                       (f"{url(fleet)}/delete", {})):
        response = namespace_reader.hx_post(post, data)
        assert response.status_code == 403, post
        assert is_error_toast(response), post
        assert TOKEN.search(response.content.decode()) is None
    assert not Principal.objects.filter(name="sneaky").exists()
    assert Principal.objects.filter(id=fleet.id).exists()
    assert not ServiceKey.objects.filter(principal=fleet).exists()
    assert AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL,
                                     details__permission="administer:installation").count() >= 6
