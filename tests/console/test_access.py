"""Members and access: a Namespace's service principals, Roles and role bindings; a service
principal's keys; the Installation's accounts. HTMX fragments (root id, side effects,
``HX-Trigger``), confirmations, refusals on their fields, who may see any of it, and a new key
shown exactly once (never again, never in the audit log or the logs)."""

from __future__ import annotations

import json
import logging
import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from occ.commands.iam import RoleCreate, ServicePrincipalCreate
from occ.iam.keys import actor_for_token, digest
from occ.models import AccessBinding, AuditEvent, AuditKind, Principal, Role, ServiceKey
from occ.services.iam_policy import role_create, service_principal_create
from tests.console.conftest import ConsoleClient, fragment_root, is_error_toast
from tests.console.keyset import REFUSED_NOTE, link, walk
from tests.factories import AgentFactory, SecretFactory, grant, human

# Text cursors (a name and an id) no list gave out.
TAMPERED = ["garbage!", "Zm9v", "eAB5fHNwXzE", "x" * 5000]  # "Zm9v": no id; "eAB5fHNwXzE": NUL in the name

TOKEN = re.compile(r"occ_sk_[A-Za-z0-9_-]{20,}")


def triggers(response) -> dict:
    return json.loads(response.headers.get("HX-Trigger", "{}"))


def access_url(namespace) -> str:
    return f"/console/namespaces/{namespace.id}/access"


@pytest.fixture
def robot(console_actor, ready_namespace) -> Principal:
    return service_principal_create(actor=console_actor, namespace_id=ready_namespace.id,
                                    command=ServicePrincipalCreate(name="CI deploys"))


@pytest.fixture
def reader_role(console_actor, ready_namespace) -> Role:
    return role_create(actor=console_actor, namespace_id=ready_namespace.id, command=RoleCreate(
        name="Agent readers", permissions=[{"action": "read", "resource_kind": "agent"}]))


def sp_url(principal) -> str:
    return f"/console/namespaces/{principal.namespace_id}/access/service-principals/{principal.id}"


# --- the page and its service principals ---------------------------------------------------

def test_the_access_page_shows_every_section_with_empty_states(console, ready_namespace):
    response = console.get(access_url(ready_namespace))
    assert response.status_code == 200
    html = response.content.decode()
    for root in ("service-principals-panel", "bindings-panel", "roles-panel"):
        assert f'id="{root}"' in html
    assert "No service principals yet" in html
    assert "No role bindings yet" not in html  # the administrator's Installation-wide ones apply here
    assert "every Namespace (Installation-wide)" in html
    assert "No Roles yet" in html
    swapped = console.hx_get(access_url(ready_namespace)).content.decode()
    assert fragment_root(swapped) == "div#access-page"  # an htmx navigation gets the sections only
    assert "<html" not in swapped


def test_every_element_id_on_the_pages_is_unique(console, ready_namespace, robot, reader_role):
    """Several forms share a page: each label must name its own field."""
    for url in (access_url(ready_namespace), sp_url(robot), "/console/members", "/console/audit"):
        ids = re.findall(r'\sid="([^"]+)"', console.get(url).content.decode())
        assert ids
        assert len(ids) == len(set(ids)), (url, sorted({i for i in ids if ids.count(i) > 1}))


class StackedCells(HTMLParser):
    """Per table.stacked-table: its column count and, per body row that is not an empty state,
    each cell's data-label (None for the row actions)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.depth = 0  # inside a stacked table (tables do not nest here)
        self.row: list | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "table" and "stacked-table" in classes:
            self.tables.append({"columns": 0, "rows": []})
            self.depth = 1
        elif self.depth and tag == "th":
            self.tables[-1]["columns"] += 1
        elif self.depth and tag == "tr" and "list-state" not in classes:
            self.row = []
        elif self.depth and tag == "td" and self.row is not None:
            self.row.append(None if "row-actions" in classes else attrs.get("data-label", ""))
        elif self.row is not None and self.row and "row-actions" in classes:  # <td><div class="row-actions">
            self.row[-1] = None

    def handle_endtag(self, tag):
        if tag == "table":
            self.depth = 0
        elif tag == "tr" and self.row is not None:
            if self.row:
                self.tables[-1]["rows"].append(self.row)
            self.row = None


def test_every_cell_of_a_stacked_table_names_its_column(console, ready_namespace, robot, reader_role):
    """At 390 px a stacked table hides its header row: each cell shows its column's name from its
    data-label (components.css), so none may lack one."""
    console.post(f"{sp_url(robot)}/keys", {"name": "github-actions", "expires_in_days": "30"})
    agent = AgentFactory(namespace=ready_namespace, name="helper")
    console.post(f"{access_url(ready_namespace)}/bindings", {
        "subject": robot.id, "role": reader_role.id, "target": f"agent:{agent.id}"})
    SecretFactory(namespace=ready_namespace, name="model-key")
    ns = f"/console/namespaces/{ready_namespace.id}"
    tables = []
    for url in (access_url(ready_namespace), sp_url(robot), "/console/members", "/console/audit",
                f"{ns}/agents", f"{ns}/secrets", f"{ns}/configurations", "/console/namespaces"):
        parser = StackedCells()
        parser.feed(console.get(url).content.decode())
        tables += [(url, table) for table in parser.tables]
    assert len(tables) == 10, "service principals, bindings, Roles, keys, members, audit and the four lists"
    for url, table in tables:
        assert table["rows"], (url, table, "a table with rows, so its cells are checked")
        for row in table["rows"]:
            assert len(row) == table["columns"], (url, row)
            assert all(label for label in row if label is not None), (url, row)


def test_creating_a_service_principal_goes_to_its_page_and_is_audited(console, ready_namespace):
    response = console.hx_post(f"{access_url(ready_namespace)}/service-principals", {"name": "CI deploys"})
    principal = Principal.objects.get(name="CI deploys")
    assert response.headers["HX-Redirect"] == sp_url(principal)
    event = AuditEvent.objects.get(action="openclaw.iam.service_principals.create")
    assert event.resource_id == principal.id
    assert event.details["__occAuditMetadata"]["source"] == "console"


def test_a_refused_service_principal_name_is_marked_on_its_field(console, ready_namespace):
    response = console.hx_post(f"{access_url(ready_namespace)}/service-principals", {"name": " padded "})
    html = response.content.decode()
    assert response.status_code == 200
    assert fragment_root(html) == "div#service-principals-panel"
    assert re.search(r'<input[^>]*name="name"[^>]*aria-invalid="true"', html)
    assert "whitespace" in html
    assert not Principal.objects.filter(name=" padded ").exists()


def test_the_service_principal_search_answers_its_table(console, ready_namespace, robot, console_actor):
    service_principal_create(actor=console_actor, namespace_id=ready_namespace.id,
                             command=ServicePrincipalCreate(name="Nightly report"))
    response = console.hx_get(f"{access_url(ready_namespace)}/service-principals", {"q": "night"})
    html = response.content.decode()
    assert fragment_root(html) == "div#service-principals-table"
    assert "Nightly report" in html
    assert "CI deploys" not in html


def principal_names(html: str) -> list[str]:
    return re.findall(r"robot \d\d", html)


@pytest.mark.parametrize("htmx", [False, True], ids=["plain-links", "htmx"])
def test_service_principals_are_keyset_paged_by_name(console, ready_namespace, console_actor, monkeypatch, htmx):
    monkeypatch.setattr("console.views.access.PAGE_SIZE", 3)
    for n in (4, 0, 6, 2, 5, 1, 3):  # made out of name order
        service_principal_create(actor=console_actor, namespace_id=ready_namespace.id,
                                 command=ServicePrincipalCreate(name=f"robot {n:02}"))

    def get(url: str) -> str:
        html = (console.hx_get if htmx else console.get)(url).content.decode()
        if htmx:
            assert fragment_root(html) == "div#service-principals-table"
        return html

    pages = walk(get, f"{access_url(ready_namespace)}/service-principals", principal_names)
    assert pages == [["robot 00", "robot 01", "robot 02"], ["robot 03", "robot 04", "robot 05"], ["robot 06"]]
    searched = console.get(f"{access_url(ready_namespace)}/service-principals", {"q": "robot 0"}).content.decode()
    following = link(searched, "next")
    assert following is not None
    assert "q=robot" in following, "the search rides in the pager"


@pytest.mark.parametrize("cursor", TAMPERED, ids=["not-base64", "no-id", "nul", "too-long"])
def test_a_service_principal_cursor_that_is_not_ours_shows_the_first_page(console, ready_namespace, console_actor,
                                                                          monkeypatch, cursor):
    monkeypatch.setattr("console.views.access.PAGE_SIZE", 3)
    for n in range(4):
        service_principal_create(actor=console_actor, namespace_id=ready_namespace.id,
                                 command=ServicePrincipalCreate(name=f"robot {n:02}"))
    for get in (console.get, console.hx_get):
        response = get(f"{access_url(ready_namespace)}/service-principals", {"after": cursor})
        assert response.status_code == 200
        html = response.content.decode()
        assert principal_names(html) == ["robot 00", "robot 01", "robot 02"]
        assert REFUSED_NOTE in html


# --- keys: shown once -----------------------------------------------------------------------

def test_a_new_key_is_shown_once_works_and_is_never_shown_again(console, robot, caplog):
    caplog.set_level(logging.DEBUG)
    response = console.hx_post(f"{sp_url(robot)}/keys", {"name": "github-actions", "expires_in_days": "30"})
    html = response.content.decode()
    assert fragment_root(html) == "div#keys-panel"
    shown = TOKEN.findall(html)
    assert len(set(shown)) == 1
    token = shown[0]
    assert 'id="new-key"' in html
    assert 'data-copy-from="#new-key-value"' in html
    record = ServiceKey.objects.get(principal=robot)
    assert record.digest == digest(token)
    assert actor_for_token(token).id == robot.id

    again = console.get(sp_url(robot)).content.decode()  # a reload
    assert token not in again
    assert TOKEN.search(again) is None
    assert "github-actions" in again  # the key is listed, by name
    assert console.hx_get(sp_url(robot)).content.decode().count(token) == 0

    events = list(AuditEvent.objects.values_list("details", flat=True))
    assert token not in json.dumps(events)
    assert record.digest not in json.dumps(events)
    assert token not in caplog.text
    assert not any(token in str(r.args) for r in caplog.records)
    assert response["Cache-Control"].startswith("max-age=0") or "no-store" in response["Cache-Control"]


def test_a_refused_key_shows_no_key_and_marks_its_field(console, robot):
    response = console.hx_post(f"{sp_url(robot)}/keys", {"name": "x" * 40, "expires_in_days": "400"})
    html = response.content.decode()
    assert fragment_root(html) == "div#keys-panel"
    assert TOKEN.search(html) is None
    assert re.search(r'<input[^>]*name="expires_in_days"[^>]*aria-invalid="true"', html)
    assert not ServiceKey.objects.filter(principal=robot).exists()


def test_revoking_a_key_asks_first_then_refuses_it(console, robot):
    token = TOKEN.search(console.hx_post(f"{sp_url(robot)}/keys", {"name": "ci", "expires_in_days": "1"})
                         .content.decode()).group(0)
    key = ServiceKey.objects.get(principal=robot)
    dialog = console.hx_get(f"{sp_url(robot)}/keys/{key.id}/revoke")
    html = dialog.content.decode()
    assert fragment_root(html) == "dialog#key-revoke-dialog"
    assert '<div id="key-revoke-body">' in html  # the body the refused revoke would swap
    assert re.search(r"<button[^>]*data-close-modal[^>]*autofocus", html)  # Cancel takes focus
    assert ServiceKey.objects.filter(id=key.id).exists()
    response = console.hx_post(f"{sp_url(robot)}/keys/{key.id}/revoke")
    assert fragment_root(response.content.decode()) == "div#keys-panel"
    assert response.headers["HX-Retarget"] == "#keys-panel"
    assert "occ:close-modal" in triggers(response)
    assert not ServiceKey.objects.filter(id=key.id).exists()
    assert actor_for_token(token) is None
    assert AuditEvent.objects.filter(action="openclaw.service_keys.revoke", resource_id=key.id).exists()


def test_a_key_of_another_principal_cannot_be_revoked_through_this_one(console, robot, console_actor,
                                                                       ready_namespace):
    other = service_principal_create(actor=console_actor, namespace_id=ready_namespace.id,
                                     command=ServicePrincipalCreate(name="other"))
    console.hx_post(f"{sp_url(other)}/keys", {"name": "theirs", "expires_in_days": "1"})
    key = ServiceKey.objects.get(principal=other)
    response = console.hx_post(f"{sp_url(robot)}/keys/{key.id}/revoke")
    assert response.status_code == 404
    assert is_error_toast(response)
    assert ServiceKey.objects.filter(id=key.id).exists()


# --- Roles and bindings ---------------------------------------------------------------------

def test_creating_a_role_answers_its_panel_and_tells_the_bindings_panel(console, ready_namespace):
    response = console.hx_post(f"{access_url(ready_namespace)}/roles",
                               {"name": "Agent users", "permissions": ["read:agent", "invoke:agent"]})
    assert fragment_root(response.content.decode()) == "div#roles-panel"
    assert "occ:roles-changed" in triggers(response)
    role = Role.objects.get(name="Agent users")
    assert role.permissions == ["read:agent", "invoke:agent"]
    assert AuditEvent.objects.filter(action="openclaw.iam.roles.create", resource_id=role.id).exists()
    panel = console.hx_get(f"{access_url(ready_namespace)}/bindings").content.decode()
    assert fragment_root(panel) == "div#bindings-panel"
    assert f'<option value="{role.id}">Agent users</option>' in panel


def test_a_role_without_permissions_is_refused_on_its_field(console, ready_namespace):
    response = console.hx_post(f"{access_url(ready_namespace)}/roles", {"name": "Empty"})
    html = response.content.decode()
    assert fragment_root(html) == "div#roles-panel"
    assert 'id="role_permissions-error"' in html
    assert not Role.objects.filter(name="Empty").exists()


def test_granting_a_role_on_an_agent_and_revoking_it(console, ready_namespace, robot, reader_role):
    agent = AgentFactory(namespace=ready_namespace, name="helper")
    response = console.hx_post(f"{access_url(ready_namespace)}/bindings", {
        "subject": robot.id, "role": reader_role.id, "target": f"agent:{agent.id}"})
    html = response.content.decode()
    assert fragment_root(html) == "div#bindings-panel"
    binding = AccessBinding.objects.get(principal=robot)
    assert (binding.resource_kind, binding.resource_id) == ("agent", agent.id)
    assert "Agent helper" in html
    assert AuditEvent.objects.filter(action="openclaw.iam.access_bindings.create", resource_id=binding.id).exists()
    [toast] = triggers(response)["occ:toast"]["messages"]
    assert toast["text"] == "Granted Agent readers to CI deploys.", "named, never the binding's id"

    dialog = console.hx_get(f"{access_url(ready_namespace)}/bindings/{binding.id}/revoke")
    assert fragment_root(dialog.content.decode()) == "dialog#binding-revoke-dialog"
    assert '<div id="binding-revoke-body">' in dialog.content.decode()
    assert AccessBinding.objects.filter(id=binding.id).exists()
    revoked = console.hx_post(f"{access_url(ready_namespace)}/bindings/{binding.id}/revoke")
    assert revoked.headers["HX-Retarget"] == "#bindings-panel"
    assert "occ:close-modal" in triggers(revoked)
    assert not AccessBinding.objects.filter(id=binding.id).exists()
    assert AuditEvent.objects.filter(action="openclaw.iam.access_bindings.delete", resource_id=binding.id).exists()


def test_a_refused_grant_is_marked_on_the_field_the_service_names(console, ready_namespace, robot, reader_role):
    # The Role holds agent permissions only: it cannot be bound on the Namespace itself.
    response = console.hx_post(f"{access_url(ready_namespace)}/bindings", {
        "subject": robot.id, "role": reader_role.id, "target": f"namespace:{ready_namespace.id}"})
    html = response.content.decode()
    assert fragment_root(html) == "div#bindings-panel"
    assert re.search(r'<select[^>]*name="role"[^>]*aria-invalid="true"', html)
    assert "no permission for the target" in html
    assert not AccessBinding.objects.filter(principal=robot).exists()


def test_a_duplicate_grant_is_refused(console, ready_namespace, robot, reader_role):
    agent = AgentFactory(namespace=ready_namespace)
    data = {"subject": robot.id, "role": reader_role.id, "target": f"agent:{agent.id}"}
    console.hx_post(f"{access_url(ready_namespace)}/bindings", data)
    html = console.hx_post(f"{access_url(ready_namespace)}/bindings", data).content.decode()
    assert "already holds this Role" in html
    assert AccessBinding.objects.filter(principal=robot).count() == 1


def test_a_bound_role_is_not_deleted_and_the_dialog_says_why(console, ready_namespace, robot, reader_role):
    agent = AgentFactory(namespace=ready_namespace)
    console.hx_post(f"{access_url(ready_namespace)}/bindings",
                    {"subject": robot.id, "role": reader_role.id, "target": f"agent:{agent.id}"})
    dialog = console.hx_get(f"{access_url(ready_namespace)}/roles/{reader_role.id}/delete")
    assert fragment_root(dialog.content.decode()) == "dialog#role-delete-dialog"
    refused = console.hx_post(f"{access_url(ready_namespace)}/roles/{reader_role.id}/delete")
    assert refused.status_code == 409
    assert fragment_root(refused.content.decode()) == "div#role-delete-body"
    assert Role.objects.filter(id=reader_role.id).exists()
    AccessBinding.objects.filter(principal=robot).delete()
    deleted = console.hx_post(f"{access_url(ready_namespace)}/roles/{reader_role.id}/delete")
    assert deleted.headers["HX-Retarget"] == "#roles-panel"
    assert {"occ:close-modal", "occ:roles-changed"} <= set(triggers(deleted))
    assert not Role.objects.filter(id=reader_role.id).exists()


def test_the_bindings_search_answers_its_table(console, ready_namespace, robot, reader_role):
    agent = AgentFactory(namespace=ready_namespace, name="helper")
    console.hx_post(f"{access_url(ready_namespace)}/bindings",
                    {"subject": robot.id, "role": reader_role.id, "target": f"agent:{agent.id}"})
    hit = console.hx_get(f"{access_url(ready_namespace)}/bindings", {"bq": "CI dep"}).content.decode()
    assert fragment_root(hit) == "div#bindings-table"
    assert "Agent helper" in hit
    miss = console.hx_get(f"{access_url(ready_namespace)}/bindings", {"bq": "nobody"}).content.decode()
    assert "No matching bindings" in miss


# --- who may ------------------------------------------------------------------------------

@pytest.fixture
def namespace_reader(db, bootstrap, ready_namespace) -> ConsoleClient:
    """A person who reads the Namespace (and its Agents) but does not administer the Installation."""
    grant(human("reader"), "read:namespace", "read:agent", namespace=ready_namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    return client


def test_a_reader_without_administer_gets_403_and_nothing_of_the_policy(namespace_reader, ready_namespace,
                                                                         robot, reader_role):
    for url in (access_url(ready_namespace), sp_url(robot), "/console/members"):
        response = namespace_reader.get(url)
        assert response.status_code == 403, url
        html = response.content.decode()
        assert robot.name not in html
        assert reader_role.name not in html
        # The console's own page: in the shell, what happened, who can help, and the way back.
        assert 'id="error-page"' in html
        assert 'aria-label="Console"' in html
        assert '<h1 id="error-title">Access denied</h1>' in html
        assert "An administrator of this installation can grant you one" in html
        assert f'<a class="button primary" href="{reverse("console:home")}">' in html
        assert f"Request ID: <code>{response.headers['X-Request-Id']}</code>" in html
    denials = AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL, actor_id__isnull=False)
    # The Access page asks for administer:namespace (an Installation administrator passes through
    # administer:installation); a service principal's keys and Members ask for administer:installation.
    assert denials.filter(details__permission="administer:namespace").count() >= 1
    assert denials.filter(details__permission="administer:installation").count() >= 1


@pytest.mark.parametrize(("path", "data"), [
    pytest.param("access/service-principals", {"name": "sneaky"}, id="create-principal"),
    pytest.param("access/roles", {"name": "sneaky", "permissions": ["read:agent"]}, id="create-role"),
])
def test_a_reader_cannot_write(namespace_reader, ready_namespace, path, data):
    response = namespace_reader.hx_post(f"/console/namespaces/{ready_namespace.id}/{path}", data)
    assert response.status_code == 403
    assert is_error_toast(response)
    assert not Principal.objects.filter(name="sneaky").exists()
    assert not Role.objects.filter(name="sneaky").exists()


def test_a_reader_cannot_issue_a_key(namespace_reader, robot):
    response = namespace_reader.hx_post(f"{sp_url(robot)}/keys", {"name": "mine", "expires_in_days": "1"})
    assert response.status_code == 403
    assert TOKEN.search(response.content.decode()) is None
    assert not ServiceKey.objects.filter(principal=robot).exists()


def test_a_namespace_the_viewer_cannot_read_is_unavailable(db, bootstrap, ready_namespace):
    human("outsider")
    client = ConsoleClient()
    client.sign_in("outsider", "a-long-test-password")
    assert client.get(access_url(ready_namespace)).status_code == 404


# --- members ------------------------------------------------------------------------------

def test_members_lists_people_and_creates_an_account(console):
    page = console.get("/console/members").content.decode()
    assert 'id="accounts-panel"' in page
    assert "admin" in page
    role_id = re.search(r'<select name="role"[^>]*>.*?<option value="(role_[^"]+)"', page, re.S).group(1)
    response = console.hx_post("/console/members", {"username": "grace", "name": "Grace Hopper",
                                                    "password": "a-fine-long-passphrase", "role": role_id})
    html = response.content.decode()
    assert fragment_root(html) == "div#accounts-panel"
    assert "Grace Hopper" in html
    assert "a-fine-long-passphrase" not in html
    grace = Principal.objects.get(user__username="grace")
    assert AuditEvent.objects.filter(action="openclaw.accounts.create", resource_id=grace.id).exists()
    ConsoleClient().sign_in("grace", "a-fine-long-passphrase")  # asserts the sign-in succeeds


def test_a_refused_account_never_echoes_the_password(console):
    page = console.get("/console/members").content.decode()
    role_id = re.search(r'<select name="role"[^>]*>.*?<option value="(role_[^"]+)"', page, re.S).group(1)
    response = console.hx_post("/console/members", {"username": "admin", "password": "tiny-secret",
                                                    "role": role_id})
    html = response.content.decode()
    assert fragment_root(html) == "div#accounts-panel"
    assert "tiny-secret" not in html
    assert re.search(r'<input[^>]*name="password"[^>]*aria-invalid="true"', html)


def test_the_members_search_answers_its_table(console):
    human("zelda")
    response = console.hx_get("/console/members", {"q": "zel"})
    html = response.content.decode()
    assert fragment_root(html) == "div#accounts-table"
    assert "zelda" in html
    assert ">admin<" not in html


def test_a_taken_username_is_refused_on_its_field(console):
    page = console.get("/console/members").content.decode()
    role_id = re.search(r'<select name="role"[^>]*>.*?<option value="(role_[^"]+)"', page, re.S).group(1)
    html = console.hx_post("/console/members", {"username": "admin", "password": "a-fine-long-passphrase",
                                                "role": role_id}).content.decode()
    assert re.search(r'<input[^>]*name="username"[^>]*aria-invalid="true"', html)
    assert "already exists" in html

