"""Single sign-on with OpenID Connect, end to end over real HTTP: OCC's console served by Django's
live server, a real OpenID Connect provider process on loopback (tests/fakes/oidc_provider.py:
RS256 ID tokens, JWKS, PKCE checked at its token endpoint), and an httpx client that follows
every redirect as a browser would (console -> provider -> console callback; the callback's code
exchange is OCC's own request to the provider)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.contrib.auth import get_user_model

from occ.models import AuditEvent, SingleSignOnIdentity
from occ.services.single_sign_on import account_sso_set
from tests.factories import human
from tests.fakes.oidc_provider import OidcProvider

CLIENT_ID = "occ-console"
CLIENT_SECRET = "a-client-secret-for-tests-only-7f3a"  # the provider process reads it from its environment
PROVIDER = "Example ID"
SIGN_IN = "/console/sign-in"
START = "/console/sign-in/oidc"


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(client_id=CLIENT_ID, client_secret=CLIENT_SECRET) as running:
        yield running


@pytest.fixture
def sso(settings, provider, live_server, bootstrap) -> OidcProvider:
    oidc = provider.settings(PROVIDER)
    settings.OCC_OIDC_ISSUER = oidc["OCC_OIDC_ISSUER"]
    settings.OCC_OIDC_PROVIDER_NAME = PROVIDER
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = oidc["OCC_OIDC_AUTHORIZATION_ENDPOINT"]
    settings.OIDC_OP_TOKEN_ENDPOINT = oidc["OCC_OIDC_TOKEN_ENDPOINT"]
    settings.OIDC_OP_USER_ENDPOINT = oidc["OCC_OIDC_USERINFO_ENDPOINT"]
    settings.OIDC_OP_JWKS_ENDPOINT = oidc["OCC_OIDC_JWKS_ENDPOINT"]
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    return provider


@pytest.fixture
def browser(live_server, settings) -> Iterator[httpx.Client]:
    # The live server speaks plain http: cookies marked Secure would never come back.
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    with httpx.Client(base_url=live_server.url, follow_redirects=True, timeout=20) as client:
        yield client


def person(username: str, *, email: str | None = None, active: bool = True):
    principal = human(username)
    user = principal.user
    user.email = email or ""
    user.is_active = active
    user.save()
    return principal


def linked(admin_actor, username: str, *, active: bool = True):
    """A person whose subject at the provider, ``<username>-subject``, an administrator linked."""
    principal = person(username, active=active)
    account_sso_set(actor=admin_actor, principal_id=principal.id, subject=f"{username}-subject", email="")
    return principal


def signed_in_as(browser: httpx.Client) -> str | None:
    """The username the console shows for this browser's session, or None when signed out."""
    page = browser.get("/console/namespaces")
    if urlsplit(str(page.url)).path == SIGN_IN:
        return None
    assert page.status_code == 200
    from django.contrib.sessions.models import Session

    session = Session.objects.get(session_key=browser.cookies["sessionid"]).get_decoded()
    return get_user_model().objects.get(pk=session["_auth_user_id"]).username


def refusal_text(page: httpx.Response) -> str:
    assert urlsplit(str(page.url)).path == SIGN_IN
    body = page.text
    start = body.index('id="sign-in-refused">') + len('id="sign-in-refused">')
    return body[start:body.index("</p>", start)]


def last_audit(action: str) -> AuditEvent:
    event = AuditEvent.objects.filter(action=action).order_by("-occurred_at").first()
    assert event is not None, f"no {action} event"
    return event


def test_sign_in_page_offers_the_provider_when_configured(sso, browser):
    page = browser.get(SIGN_IN)
    assert f"Sign in with {PROVIDER}</a>" in page.text
    assert 'name="password"' in page.text  # passwords still open to everyone by default


def test_sign_in_page_without_single_sign_on_has_no_provider_button(browser, bootstrap):
    page = browser.get(SIGN_IN)
    assert "Sign in with" not in page.text
    assert browser.get(START).status_code == 404
    assert browser.get(f"{START}/callback?code=x&state=y").status_code == 404


def test_full_code_flow_signs_a_linked_person_in_and_sign_out_ends_the_session(sso, browser, admin_actor, caplog):
    caplog.set_level(logging.DEBUG)
    alice = linked(admin_actor, "alice")
    sso.sign_in_as(sub="alice-subject", email="someone-else@example.test", email_verified=True)

    landed = browser.get(f"{START}?next=/console/namespaces")
    hops = [str(r.url) for r in landed.history]
    assert hops[0].endswith(f"{START}?next=/console/namespaces")
    authorize = urlsplit(hops[1])
    assert f"{authorize.scheme}://{authorize.netloc}" == sso.origin
    assert authorize.path == "/authorize"
    query = parse_qs(authorize.query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["code_challenge"][0]
    assert query["state"][0]
    assert query["nonce"][0]
    assert "/console/sign-in/oidc/callback?" in hops[2]
    assert urlsplit(str(landed.url)).path == "/console/namespaces"
    assert landed.status_code == 200
    assert signed_in_as(browser) == "alice"

    token = [e for e in sso.events() if e["endpoint"] == "token"][-1]
    assert token == {"endpoint": "token", "outcome": "issued", "pkce": "S256 verified", "sub": "alice-subject"}
    event = last_audit("openclaw.auth.sign_in")
    assert event.actor_id == alice.id
    assert event.outcome == "succeeded"
    assert event.kind == "access"
    assert event.details["method"] == "oidc"
    assert event.details["subject"] == "alice-subject"
    assert event.details["linkedBy"] == "linked"
    assert CLIENT_SECRET not in str(AuditEvent.objects.values_list("details", flat=True))
    assert CLIENT_SECRET not in caplog.text  # OCC's and its libraries' logs, at every level
    assert any("/token" in record.getMessage() for record in caplog.records)  # the exchange was logged (no secret)

    csrf = browser.cookies["csrftoken"]
    out = browser.post("/console/sign-out", data={"csrfmiddlewaretoken": csrf})
    assert urlsplit(str(out.url)).path == SIGN_IN
    assert signed_in_as(browser) is None


def test_first_sign_in_links_by_verified_email(sso, browser):
    bob = person("bob", email="Bob@Example.test")
    sso.sign_in_as(sub="bob-subject", email="bob@example.test", email_verified=True)
    browser.get(START)
    assert signed_in_as(browser) == "bob"
    assert SingleSignOnIdentity.objects.get(principal=bob).subject == "bob-subject"
    link = last_audit("openclaw.accounts.sso.link")
    assert link.details["linkedBy"] == "verifiedEmail"
    assert link.resource_id == bob.id


def test_unverified_email_does_not_link(sso, browser):
    person("carol", email="carol@example.test")
    sso.sign_in_as(sub="carol-subject", email="carol@example.test", email_verified=False)
    page = browser.get(START)
    assert "is not linked to an OCC account" in refusal_text(page)
    assert signed_in_as(browser) is None
    assert not SingleSignOnIdentity.objects.exists()


def test_unknown_subject_is_refused_with_a_clear_message_and_no_account_is_made(sso, browser):
    users_before = get_user_model().objects.count()
    sso.sign_in_as(sub="stranger", email="stranger@example.test", email_verified=True)
    page = browser.get(START)
    assert refusal_text(page) == (
        f"Your {PROVIDER} account is not linked to an OCC account, and OCC does not create accounts at sign-in. "
        f"Ask an OCC administrator to add you (with your email) or to link your {PROVIDER} account to yours.")
    assert signed_in_as(browser) is None
    assert get_user_model().objects.count() == users_before
    event = last_audit("openclaw.auth.sign_in.refused")
    assert event.outcome == "denied"
    assert event.details["reason"] == "unknown_subject"
    assert event.details["subject"] == "stranger"


def test_disabled_account_is_refused(sso, browser, admin_actor):
    dave = linked(admin_actor, "dave", active=False)
    sso.sign_in_as(sub="dave-subject")
    page = browser.get(START)
    assert refusal_text(page) == "Your OCC account is disabled. Ask an OCC administrator to re-enable it."
    assert signed_in_as(browser) is None
    event = last_audit("openclaw.auth.sign_in.refused")
    assert event.details["reason"] == "account_disabled"
    assert event.resource_id == dave.id


def test_disabling_an_account_ends_its_single_sign_on_session(sso, browser, admin_actor):
    erin = linked(admin_actor, "erin")
    sso.sign_in_as(sub="erin-subject")
    browser.get(START)
    assert signed_in_as(browser) == "erin"
    get_user_model().objects.filter(pk=erin.user_id).update(is_active=False)
    assert signed_in_as(browser) is None


def test_wrong_state_is_refused(sso, browser, admin_actor):
    linked(admin_actor, "frank")
    sso.sign_in_as(sub="frank-subject")
    # Start a real sign-in, but stop at the provider's redirect back and alter the state.
    start = browser.get(START, follow_redirects=False)
    at_provider = httpx.get(start.headers["Location"], follow_redirects=False)
    back = urlsplit(at_provider.headers["Location"])
    query = parse_qs(back.query)
    forged = f"{back.path}?code={query['code'][0]}&state=not-the-state-{query['state'][0][:4]}"
    page = browser.get(forged)
    assert "was not started from this browser or has expired" in refusal_text(page)
    assert signed_in_as(browser) is None
    assert last_audit("openclaw.auth.sign_in.refused").details["reason"] == "state_mismatch"
    # The code was never exchanged.
    assert not [e for e in sso.events() if e["endpoint"] == "token" and e.get("sub") == "frank-subject"]


def test_replayed_callback_is_refused(sso, browser, admin_actor):
    linked(admin_actor, "grace")
    sso.sign_in_as(sub="grace-subject")
    landed = browser.get(START)
    callback = next(str(r.url) for r in landed.history if "/callback?" in str(r.url))
    browser.post("/console/sign-out", data={"csrfmiddlewaretoken": browser.cookies["csrftoken"]})
    page = browser.get(callback)
    assert "was not started from this browser" in refusal_text(page)
    assert signed_in_as(browser) is None


def test_nonce_mismatch_is_refused(sso, browser, admin_actor):
    linked(admin_actor, "heidi")
    sso.sign_in_as(sub="heidi-subject", nonce="a-nonce-from-another-sign-in")
    page = browser.get(START)
    assert "did not belong to this sign-in" in refusal_text(page)
    assert signed_in_as(browser) is None
    event = last_audit("openclaw.auth.sign_in.refused")
    assert event.details["reason"] == "nonce_mismatch"
    assert event.details["subject"] == "heidi-subject"


def test_provider_checks_the_pkce_verifier(sso, browser, admin_actor):
    linked(admin_actor, "ivan")
    sso.sign_in_as(sub="ivan-subject")
    start = browser.get(START, follow_redirects=False)
    # The session's verifier is replaced, as an attacker holding a stolen code would lack it.
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore(session_key=browser.cookies["sessionid"])
    states = session["oidc_states"]
    for entry in states.values():
        entry["code_verifier"] = "x" * 64
    session["oidc_states"] = states
    session.save()
    page = browser.get(start.headers["Location"])
    assert "could not complete the sign-in" in refusal_text(page)
    assert signed_in_as(browser) is None
    assert [e["outcome"] for e in sso.events() if e["endpoint"] == "token"][-1] == "pkce_mismatch"
    assert last_audit("openclaw.auth.sign_in.refused").details["reason"] == "code_rejected"


def test_provider_refusal_is_shown(sso, browser):
    sso.sign_in_as(sub="judy-subject", deny=True)
    page = browser.get(START)
    assert f"{PROVIDER} did not sign you in" in refusal_text(page)
    assert last_audit("openclaw.auth.sign_in.refused").details["reason"] == "provider_refused"


def test_userinfo_of_another_subject_is_refused(sso, browser, admin_actor):
    linked(admin_actor, "kim")
    sso.sign_in_as(sub="kim-subject", userinfo_sub="someone-else")
    page = browser.get(START)
    assert "could not be verified" in refusal_text(page)
    assert signed_in_as(browser) is None


def test_id_token_of_another_issuer_is_refused(sso, browser, admin_actor, settings):
    linked(admin_actor, "lee")
    sso.sign_in_as(sub="lee-subject")
    settings.OCC_OIDC_ISSUER = "http://127.0.0.1:1/not-this-provider"  # the token's iss no longer matches
    page = browser.get(START)
    assert "could not be verified" in refusal_text(page)
    assert last_audit("openclaw.auth.sign_in.refused").details["reason"] == "token_invalid"


def test_recovery_only_passwords_admit_administrators_only(sso, browser, settings, admin_actor):
    settings.OCC_PASSWORD_SIGN_IN = "recovery"
    person("mallory")
    page = browser.get(SIGN_IN)
    assert "Administrator recovery: sign in with a password" in page.text
    refused = browser.post(SIGN_IN, data={"username": "mallory", "password": "a-long-test-password",
                                          "csrfmiddlewaretoken": browser.cookies["csrftoken"]})
    assert refused.status_code == 200
    assert "Password sign-in is for administrators' recovery only" in refused.text
    assert signed_in_as(browser) is None
    event = last_audit("openclaw.auth.sign_in.refused")
    assert event.details == {**event.details, "method": "password", "reason": "password_recovery_only"}

    from tests.conftest import ADMIN_PASSWORD

    admitted = browser.post(SIGN_IN, data={"username": "admin", "password": ADMIN_PASSWORD,
                                           "csrfmiddlewaretoken": browser.cookies["csrftoken"]})
    assert admitted.status_code == 200
    assert urlsplit(str(admitted.url)).path != SIGN_IN
    assert signed_in_as(browser) == "admin"
    recovery = last_audit("openclaw.auth.sign_in")
    assert recovery.details["method"] == "password"
    assert recovery.details["recoveryOnly"] is True
