"""The console shell (console/common.py, console/middleware.py, console/views/shell.py): the
landing redirect, the Namespace switch, unknown paths, unavailable Namespaces, identities
without an OCC principal, HTMX error fragments, toasts through HX-Trigger, and anonymous
HTMX requests."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from occ.models import AuditEvent, Namespace, NamespaceStatus
from tests.console.conftest import ConsoleClient, fragment_root, is_error_toast
from tests.factories import NamespaceFactory, grant, human

HOME = "/console/"
SWITCH = "/console/switch-namespace"


def signed_in_as(person) -> ConsoleClient:
    client = ConsoleClient()
    client.force_login(person.user)
    return client


# --- landing ---------------------------------------------------------------------------------

def test_home_lands_on_the_first_ready_namespaces_agents(console, bootstrap):
    default = Namespace.objects.get(name="default")
    assert default.status == NamespaceStatus.PROVISIONING
    ready = NamespaceFactory(name="ready-later", status=NamespaceStatus.READY)

    response = console.get(HOME)

    assert response.status_code == 302
    assert response.headers["Location"] == f"/console/namespaces/{ready.id}/agents"
    landed = console.get(response.headers["Location"])
    assert landed.status_code == 200
    assert re.search(r"<h1[^>]*>Agents</h1>", landed.content.decode())


def test_home_falls_back_to_the_first_readable_namespace_when_none_is_ready(console, bootstrap):
    default = Namespace.objects.get(name="default")
    response = console.get(HOME)
    assert response.headers["Location"] == f"/console/namespaces/{default.id}/agents"


def test_home_without_a_readable_namespace_lands_on_namespaces(bootstrap, ready_namespace):
    person = human("nobody-much")
    client = signed_in_as(person)

    response = client.get(HOME)

    assert response.status_code == 302
    assert response.headers["Location"] == "/console/namespaces"
    page = client.get("/console/namespaces").content.decode()
    assert "No Namespaces you can read" in page
    assert ready_namespace.id not in page


# --- the Namespace switch ----------------------------------------------------------------

@pytest.mark.parametrize(
    ("page", "lands_on"),
    [
        pytest.param("agents", "agents", id="agents"),
        pytest.param("secrets", "secrets", id="secrets"),
        pytest.param("configurations", "configurations", id="configurations"),
        pytest.param("agent-detail", "agents", id="deeper-page-returns-to-list"),
        pytest.param("", "agents", id="no-page"),
    ],
)
def test_switch_namespace_keeps_the_kind_of_page(console, ready_namespace, page, lands_on):
    other = NamespaceFactory(name="other", status=NamespaceStatus.READY)

    response = console.get(SWITCH, {"namespace": other.id, "page": page})

    assert response.status_code == 302
    assert response.headers["Location"] == f"/console/namespaces/{other.id}/{lands_on}"


def test_switch_namespace_refuses_an_unreadable_id(bootstrap, ready_namespace):
    hidden = NamespaceFactory(name="hidden-team")
    person = human("one-team")
    grant(person, "read:namespace", namespace=ready_namespace)
    client = signed_in_as(person)

    response = client.get(SWITCH, {"namespace": hidden.id, "page": "secrets"})

    assert response.status_code == 302
    assert response.headers["Location"] == "/console/namespaces"
    page = client.get("/console/namespaces").content.decode()
    assert "That Namespace is unavailable. Choose another one." in page
    assert "hidden-team" not in page


def test_the_selector_lists_readable_namespaces_and_names_the_page(console, ready_namespace):
    other = NamespaceFactory(name="second", status=NamespaceStatus.PROVISIONING)

    html = console.get(f"/console/namespaces/{ready_namespace.id}/secrets").content.decode()

    selector = re.search(r'<form class="namespace-selector".*?</form>', html, re.S).group(0)
    assert f'<option value="{ready_namespace.id}" selected>default</option>' in selector
    assert f'<option value="{other.id}">second (provisioning)</option>' in selector
    assert '<input type="hidden" name="page" value="secrets">' in selector


def test_the_selector_lists_the_first_namespaces_this_pages_and_more(console, ready_namespace, monkeypatch):
    monkeypatch.setattr("console.common.SWITCHER_SIZE", 2)
    made = [NamespaceFactory(name=f"team-{index}") for index in range(4)]
    first_two = list(Namespace.objects.live().order_by("created_at", "id"))[:2]
    further = made[-1]

    html = console.get(f"/console/namespaces/{further.id}/secrets").content.decode()

    selector = re.search(r'<form class="namespace-selector".*?</form>', html, re.S).group(0)
    options = re.findall(r'<option value="([^"]*)"', selector)
    assert options == [*(ns.id for ns in first_two), further.id, "*"]
    assert f'<option value="{further.id}" selected>team-3</option>' in selector
    assert '<option value="*">More Namespaces…</option>' in selector

    response = console.get(SWITCH, {"namespace": "*", "page": "secrets"})
    assert response.status_code == 302
    assert response.headers["Location"] == "/console/namespaces"
    assert "unavailable" not in console.get("/console/namespaces").content.decode()


def test_the_selector_offers_no_more_when_every_namespace_fits(console, ready_namespace):
    html = console.get(f"/console/namespaces/{ready_namespace.id}/secrets").content.decode()
    assert "More Namespaces…" not in html


# --- unknown and unavailable ---------------------------------------------------------------

def test_unknown_console_path_is_a_404_inside_the_shell(console, ready_namespace):
    response = console.get("/console/no/such/page")

    assert response.status_code == 404
    html = response.content.decode()
    assert "Page not found" in html
    assert 'aria-label="Console"' in html  # the shell's navigation is there
    assert 'id="error-page"' in html


@pytest.mark.parametrize("page", ["agents", "secrets"])
def test_an_unreadable_namespace_is_unavailable_without_saying_whether_it_exists(bootstrap, ready_namespace, page):
    hidden = NamespaceFactory(name="hidden-team")
    person = human("one-team")
    grant(person, "read:namespace", "read:agent", "read:secret", namespace=ready_namespace)
    client = signed_in_as(person)

    existing = client.get(f"/console/namespaces/{hidden.id}/{page}")
    missing = client.get(f"/console/namespaces/ns_missing/{page}")

    for response in (existing, missing):
        assert response.status_code == 404
        html = response.content.decode()
        assert "Namespace unavailable" in html
        assert "it does not exist or you may not read it" in html
    assert "hidden-team" not in existing.content.decode()


# --- identities ------------------------------------------------------------------------------

def test_a_django_user_without_an_occ_identity_is_refused_and_audited(bootstrap):
    user = get_user_model().objects.create_user(username="stranger", password="a-long-test-password")
    client = Client()
    client.force_login(user)

    response = client.get("/console/namespaces")

    assert response.status_code == 403
    assert "Your account has no OCC identity" in response.content.decode()
    denial = AuditEvent.objects.get(action="openclaw.authorization.principal.authenticate")
    assert denial.outcome == "denied"
    assert denial.details["userId"] == str(user.pk)

    fragment = client.get("/console/namespaces", headers={"HX-Request": "true"})
    assert fragment.status_code == 403
    assert is_error_toast(fragment)


def test_anonymous_htmx_request_gets_401_and_a_redirect_to_sign_in(bootstrap, ready_namespace):
    client = Client()
    current = f"/console/namespaces/{ready_namespace.id}/agents"

    response = client.get(current, headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{current}"})

    assert response.status_code == 401
    assert response.headers["HX-Redirect"] == f"/console/sign-in?next={current.replace('/', '%2F')}"
    assert response.content == b""


def test_anonymous_full_page_request_redirects_to_sign_in(bootstrap, ready_namespace):
    path = f"/console/namespaces/{ready_namespace.id}/secrets"
    response = Client().get(path)
    assert response.status_code == 302
    assert response.headers["Location"] == f"/console/sign-in?next={path}"


# --- HTMX errors and toasts ------------------------------------------------------------------

def test_htmx_domain_error_is_an_error_fragment_with_its_status_and_request_id(console, ready_namespace):
    response = console.hx_post(f"/console/namespaces/{ready_namespace.id}/secrets/sec_missing/value",
                               {"value": "irrelevant-value"})

    assert response.status_code == 404
    assert is_error_toast(response)
    html = response.content.decode()
    assert fragment_root(html) == "div"
    assert 'class="error-panel" role="alert" data-error-code="NOT_FOUND"' in html
    assert "Resource unavailable" in html
    request_id = response.headers["X-Request-Id"]
    assert f"Request ID: <code>{request_id}</code>" in html
    assert "<html" not in html


def test_the_same_error_without_htmx_is_a_full_error_page(console, ready_namespace):
    response = console.get(f"/console/namespaces/{ready_namespace.id}/secrets/sec_missing/delete")

    assert response.status_code == 404
    html = response.content.decode()
    assert "<html" in html
    assert 'id="error-page"' in html
    assert f"Request ID: <code>{response.headers['X-Request-Id']}</code>" in html
    assert not response.has_header("HX-Retarget")


def test_messages_ride_on_htmx_responses_as_toast_events(console, bootstrap):
    response = console.hx_post("/console/namespaces", {"name": "toasted"})

    assert response.status_code == 200
    assert json.loads(response.headers["HX-Trigger"]) == {
        "occ:toast": {"messages": [{"level": "success", "text": "Namespace toasted created. Status: Provisioning."}]}}
    # Consumed by the header: the next full page does not show it again.
    assert "Namespace toasted created" not in console.get("/console/namespaces").content.decode()


def test_messages_on_a_full_page_render_in_the_toast_region(console, bootstrap):
    console.post("/console/namespaces", {"name": "plain-toast"})

    html = console.get("/console/namespaces").content.decode()

    region = re.search(r'<div id="toasts"[^>]*role="status"[^>]*>(.*?)</div>\s*<div id="modal-root"', html, re.S)
    assert region
    assert "Namespace plain-toast created. Status: Provisioning." in region.group(1)


def test_the_namespaces_page_links_to_the_landing_namespaces_agents_and_secrets(console, ready_namespace):
    """The Namespaces page belongs to no Namespace; its navigation still leads back."""
    text = console.get("/console/namespaces").content.decode()
    nav = text[text.index('aria-label="Console"'):text.index("</nav>")]
    assert f'href="/console/namespaces/{ready_namespace.id}/agents"' in nav
    assert f'href="/console/namespaces/{ready_namespace.id}/secrets"' in nav
    assert 'href="/console/namespaces" aria-current="page"' in nav


def test_an_error_report_of_a_console_post_shows_no_posted_value(console, ready_namespace, monkeypatch):
    """Whatever fails inside a console view, Django's error report masks every posted field."""
    from django.views.debug import SafeExceptionReporterFilter

    from console.views import secrets as secrets_views

    def failing(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(secrets_views, "secret_create", failing)
    console.raise_request_exception = False
    response = console.post(f"/console/namespaces/{ready_namespace.id}/secrets",
                            {"name": "leaky", "value": "sk-canary-never-reported"})
    assert response.status_code == 500
    reported = SafeExceptionReporterFilter().get_post_parameters(response.wsgi_request)
    assert reported["value"] == SafeExceptionReporterFilter.cleansed_substitute
    assert reported["name"] == SafeExceptionReporterFilter.cleansed_substitute
    assert "sk-canary-never-reported" not in str(dict(reported))


def test_an_unhandled_failure_says_the_outcome_is_unknown_with_the_request_id(console, ready_namespace, monkeypatch):
    from console.views import secrets as secrets_views

    def failing(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(secrets_views, "secret_create", failing)
    console.raise_request_exception = False
    response = console.post(f"/console/namespaces/{ready_namespace.id}/secrets",
                            {"name": "leaky", "value": "sk-canary-never-shown"})
    text = response.content.decode()
    assert response.status_code == 500
    assert "Outcome unknown" in text
    assert f"Request ID: <code>{response.headers['X-Request-Id']}</code>" in text
    assert "sk-canary-never-shown" not in text
    assert "boom" not in text


def test_htmx_swaps_our_error_fragments_by_response_handling(console, ready_namespace):
    """htmx 2's ``responseHandling`` (no private swap header): the statuses of our own refused or
    unconfirmed writes swap like a 200, anything else that fails is not swapped."""
    html = console.get(f"/console/namespaces/{ready_namespace.id}/agents").content.decode()
    config = json.loads(unescape(re.search(r'<meta name="htmx-config" content=\'([^\']+)\'>', html).group(1)))
    rules = config["responseHandling"]

    def rule(status: int) -> dict:
        return next(r for r in rules if re.search(r["code"], str(status)))

    assert rule(204)["swap"] is False
    assert rule(286)["swap"] is True
    for status in (400, 403, 404, 409, 429, 503):
        assert (rule(status)["swap"], rule(status)["error"]) == (True, False), status
    for status in (401, 405, 413, 500, 502, 504):
        assert (rule(status)["swap"], rule(status)["error"]) == (False, True), status
    assert "X-OCC" not in html
