"""Console sign-in and sign-out through Django's test client, with CSRF enforced."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from occ.models import Namespace
from tests.conftest import ADMIN_PASSWORD
from tests.factories import grant, human

SIGN_IN = "/console/sign-in"
SIGN_OUT = "/console/sign-out"
HOME = "/console/"


@pytest.fixture
def browser(bootstrap) -> Client:
    return Client(enforce_csrf_checks=True)


def csrf_token(client: Client, path: str = SIGN_IN) -> str:
    response = client.get(path)
    assert response.status_code == 200
    return response.cookies["csrftoken"].value


def sign_in(client: Client, username: str, password: str, **extra: str):
    token = csrf_token(client)
    return client.post(SIGN_IN, {"username": username, "password": password, "csrfmiddlewaretoken": token, **extra})


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_console_sends_anonymous_visitors_to_the_sign_in_page(browser):
    response = browser.get(HOME)
    assert response.status_code == 302
    assert response.headers["Location"] == f"{SIGN_IN}?next={HOME}"
    page = browser.get(response.headers["Location"])
    assert page.status_code == 200
    body = page.content.decode()
    assert 'name="username"' in body
    assert 'type="password"' in body
    assert 'name="csrfmiddlewaretoken"' in body
    assert f'name="next" value="{HOME}"' in body


def test_bootstrap_admin_signs_in(browser):
    response = sign_in(browser, "admin", ADMIN_PASSWORD, next=HOME)
    assert response.status_code == 302
    assert response.headers["Location"] == HOME
    assert signed_in(browser)
    home = browser.get(HOME)  # the landing redirect: the default Namespace's Agents
    default = Namespace.objects.get(name="default")
    assert home.status_code == 302
    assert home.headers["Location"] == f"/console/namespaces/{default.id}/agents"
    page = browser.get(home.headers["Location"])
    assert page.status_code == 200
    body = page.content.decode()
    assert "<span>admin</span>" in body
    assert ">Sign out</button>" in body


def test_a_signed_in_person_is_sent_home_from_the_sign_in_page(browser):
    sign_in(browser, "admin", ADMIN_PASSWORD)
    response = browser.get(SIGN_IN)
    assert response.status_code == 302
    assert response.headers["Location"] == HOME


@pytest.mark.parametrize(
    ("next_url", "lands_on"),
    [
        pytest.param("/admin/", "/admin/", id="same-site"),
        pytest.param("https://evil.example/steal", HOME, id="other-site-ignored"),
        pytest.param("//evil.example/steal", HOME, id="scheme-relative-ignored"),
    ],
)
def test_next_is_followed_only_within_the_site(browser, next_url, lands_on):
    response = sign_in(browser, "admin", ADMIN_PASSWORD, next=next_url)
    assert response.status_code == 302
    assert response.headers["Location"] == lands_on


@pytest.mark.parametrize(
    ("username", "password"),
    [
        pytest.param("admin", "wrong-password-zq7x", id="wrong-password"),
        pytest.param("nobody-zq7x", "some-password-zq7x", id="unknown-user"),
        pytest.param("admin", "", id="empty-password"),
    ],
)
def test_failed_sign_in_says_so_without_echoing_input(browser, username, password):
    response = sign_in(browser, username, password)
    assert response.status_code == 200
    body = response.content.decode()
    assert "Your username or password is not right" in body
    assert 'role="alert"' in body
    # The typed username stays in its field (to correct it), and only there.
    assert f'value="{username}"' in body
    if username != "admin":
        assert body.count(username) == 1
    if password:
        assert password not in body
    assert not signed_in(browser)


def test_sign_in_without_csrf_token_is_refused(browser):
    browser.get(SIGN_IN)
    response = browser.post(SIGN_IN, {"username": "admin", "password": ADMIN_PASSWORD})
    assert response.status_code == 403
    assert not signed_in(browser)


def test_inactive_account_cannot_sign_in(browser):
    get_user_model().objects.filter(username="admin").update(is_active=False)
    response = sign_in(browser, "admin", ADMIN_PASSWORD)
    assert response.status_code == 200
    assert not signed_in(browser)


def test_sign_out_is_post_with_csrf(browser):
    sign_in(browser, "admin", ADMIN_PASSWORD)
    assert browser.get(SIGN_OUT).status_code == 405
    assert signed_in(browser)
    assert browser.post(SIGN_OUT).status_code == 403
    assert signed_in(browser)
    token = csrf_token(browser, "/console/namespaces")
    response = browser.post(SIGN_OUT, {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert response.headers["Location"] == SIGN_IN
    assert not signed_in(browser)
    assert "You are signed out." in browser.get(SIGN_IN).content.decode()
    assert browser.get(HOME).status_code == 302


def test_a_person_without_namespaces_lands_on_the_namespaces_page(bootstrap):
    person = human("reader")
    grant(person, "read:installation")
    client = Client()
    client.force_login(person.user)
    response = client.get(HOME)
    assert response.status_code == 302
    assert response.headers["Location"] == "/console/namespaces"
    body = client.get(response.headers["Location"]).content.decode()
    assert "<span>reader</span>" in body
    assert "No Namespaces you can read" in body
