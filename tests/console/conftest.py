"""Console fixtures: a signed-in browser-like client (CSRF enforced) and an HTMX variant."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from occ.iam.actor import Actor, Source
from occ.models import Principal
from tests.conftest import ADMIN_PASSWORD


class ConsoleClient(Client):
    """Django's test client signed in as a console user, CSRF enforced like a browser.

    ``hx_get``/``hx_post`` send the headers htmx sends (``HX-Request``, the CSRF header);
    ``post`` sends a form with the CSRF token as a real form does.
    """

    def __init__(self) -> None:
        super().__init__(enforce_csrf_checks=True)

    def token(self) -> str:
        if "csrftoken" not in self.cookies:
            self.get("/console/sign-in")
        return self.cookies["csrftoken"].value

    def sign_in(self, username: str, password: str) -> None:
        response = super().post("/console/sign-in", {"username": username, "password": password,
                                                      "csrfmiddlewaretoken": self.token()})
        assert response.status_code == 302, "sign-in failed"

    def post(self, path, data=None, **extra):  # type: ignore[override]
        data = dict(data or {})
        data.setdefault("csrfmiddlewaretoken", self.token())
        return super().post(path, data, **extra)

    def hx_get(self, path, data=None, **extra):
        return self.get(path, data, headers={"HX-Request": "true", **extra.pop("headers", {})}, **extra)

    def hx_post(self, path, data=None, **extra):
        headers = {"HX-Request": "true", "X-CSRFToken": self.token(), **extra.pop("headers", {})}
        return super().post(path, dict(data or {}), headers=headers, **extra)


@pytest.fixture
def console(bootstrap) -> ConsoleClient:
    """Signed in as the bootstrap administrator (Installation-wide authority)."""
    client = ConsoleClient()
    client.sign_in("admin", ADMIN_PASSWORD)
    return client


@pytest.fixture
def console_actor(bootstrap) -> Actor:
    """The administrator's human Actor, for arranging state through the services."""
    principal = Principal.objects.get(user__username="admin")
    return Actor(principal=principal, source=Source.CONSOLE)


def fragment_root(html: str) -> str:
    """The first element's tag and id, e.g. ``section#agents-table`` (asserts a fragment's root)."""
    match = re.search(r"<([a-zA-Z][\w-]*)\b([^>]*)>", html.lstrip())
    assert match, "no element in the response"
    found = re.search(r'\bid="([^"]+)"', match.group(2))
    return f"{match.group(1)}#{found.group(1)}" if found else match.group(1)


def is_error_toast(response) -> bool:
    """An htmx error answer of ours: the error fragment, retargeted into the shell's toasts."""
    return (response.headers.get("HX-Retarget"), response.headers.get("HX-Reswap")) == ("#toasts", "beforeend") and \
        'class="toast toast-error"' in response.content.decode()


def current_nav(html: str) -> str:
    """The label of the shell navigation's link marked ``aria-current="page"`` (its icon aside)."""
    nav = html[html.index('aria-label="Console"'):]
    nav = nav[:nav.index("</nav>")]
    found = re.findall(r'<a href="[^"]*" aria-current="page">(?:<svg .*?</svg>)?<span>([^<]*)</span></a>', nav)
    assert len(found) == 1, f"expected one current navigation link, found {found}"
    return found[0]
