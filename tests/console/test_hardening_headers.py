"""The console's hardening: a Content-Security-Policy on every page with no inline script in
any template, ``no-store`` on console pages, a sliding idle session, and HSTS with Secure
cookies whenever OCC is served over HTTPS (``OCC_HTTPS``, on outside the embedded mode)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client, override_settings
from django.utils import timezone

from tests.factories import ConfigurationFactory

TEMPLATES = Path(settings.BASE_DIR) / "templates"
# What a policy without 'unsafe-inline' / 'unsafe-eval' refuses, as it is written in markup.
INLINE_CODE = [
    # A JSON data block (type="application/json") is never run, so the policy has nothing to refuse.
    pytest.param(re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I),
                 id="inline-script"),
    pytest.param(re.compile(r"\son[a-z]+\s*=", re.I), id="event-handler-attribute"),
    pytest.param(re.compile(r"\shx-on[:-]", re.I), id="htmx-hx-on"),
    pytest.param(re.compile(r"""\shx-(vals|vars|headers)\s*=\s*["']\s*js:""", re.I), id="htmx-js-value"),
    pytest.param(re.compile(r"<style[\s>]|\sstyle\s*=", re.I), id="inline-style"),
    pytest.param(re.compile(r"javascript:", re.I), id="javascript-url"),
]


def policy(response) -> dict[str, str]:
    header = response.headers["Content-Security-Policy"]
    return dict(part.strip().split(" ", 1) for part in header.split(";") if part.strip())


@pytest.mark.parametrize("pattern", INLINE_CODE)
def test_no_template_has_inline_code(pattern):
    found = [f"{path.relative_to(TEMPLATES)}: {match.group(0)!r}"
             for path in sorted(TEMPLATES.rglob("*.html")) for match in pattern.finditer(path.read_text())]
    assert found == []


def test_every_console_page_has_the_policy_signed_in_or_not(console, ready_namespace):
    for path in ("/console/sign-in", f"/console/namespaces/{ready_namespace.id}/agents",
                 f"/console/namespaces/{ready_namespace.id}/agents/new", "/console/namespaces"):
        anonymous = Client().get(path)
        signed_in = console.get(path)
        for response in (anonymous, signed_in):
            directives = policy(response)
            assert directives["default-src"] == "'self'", path
            assert directives["script-src"] == "'self'", path
            assert directives["style-src"] == "'self'", path
            assert directives["object-src"] == "'none'", path
            assert directives["frame-ancestors"] == "'none'", path
            assert "unsafe" not in response.headers["Content-Security-Policy"], path
        assert signed_in.status_code == (302 if path == "/console/sign-in" else 200), path


def test_console_pages_and_fragments_are_never_stored(console, ready_namespace):
    page = console.get(f"/console/namespaces/{ready_namespace.id}/agents")
    fragment = console.hx_get(f"/console/namespaces/{ready_namespace.id}/agents", {"q": "x"})
    sign_in = Client().get("/console/sign-in")
    for response in (page, fragment, sign_in):
        assert "no-store" in response.headers["Cache-Control"]
        assert "private" in response.headers["Cache-Control"]
    # Outside the console (the admin's static files) the caching stays as it was.
    assert "no-store" not in Client().get("/static/console/console.css").headers.get("Cache-Control", "")


def test_the_session_ends_after_an_idle_hour_and_each_request_moves_the_end(console, ready_namespace):
    assert settings.SESSION_COOKIE_AGE == 3600
    agents = f"/console/namespaces/{ready_namespace.id}/agents"
    response = console.get(agents)
    assert response.cookies["sessionid"]["max-age"] == 3600
    session = Session.objects.get(session_key=console.cookies["sessionid"].value)
    # Pretend the person was idle for 50 minutes: the next request extends the session again.
    Session.objects.filter(pk=session.pk).update(expire_date=timezone.now() + timedelta(minutes=10))
    assert console.get(agents).status_code == 200
    extended = Session.objects.get(pk=session.pk).expire_date
    assert extended > timezone.now() + timedelta(minutes=59)
    # Idle past the end: signed out.
    Session.objects.filter(pk=session.pk).update(expire_date=timezone.now() - timedelta(seconds=1))
    expired = console.get(agents)
    assert expired.status_code == 302
    assert expired.headers["Location"].startswith("/console/sign-in")


SETTINGS_PROBE = ("import json, django; django.setup(); from django.conf import settings as s; "
                  "print(json.dumps([s.OCC_HTTPS, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
                  "s.SECURE_HSTS_SECONDS]))")


@pytest.mark.parametrize(("env", "expected"), [
    pytest.param({}, [False, False, False, 0], id="embedded-make-run"),
    pytest.param({"DATABASE_URL": "postgres://occ@db.example/occ"}, [True, True, True, 31536000], id="production"),
    pytest.param({"DATABASE_URL": "postgres://occ@db.example/occ", "OCC_HTTPS": "false"}, [False, False, False, 0],
                 id="production-over-plain-http"),
    pytest.param({"OCC_HTTPS": "true"}, [True, True, True, 31536000], id="embedded-behind-https"),
])
def test_https_settings_follow_the_mode(env, expected, tmp_path):
    ours = {"DATABASE_URL", "OCC_HTTPS", "OCC_SECURE_COOKIES", "OCC_HSTS_SECONDS", "OCC_TEST_DATABASE_NAME"}
    clean = {k: v for k, v in os.environ.items() if k not in ours}
    result = subprocess.run([sys.executable, "-c", SETTINGS_PROBE], cwd=settings.BASE_DIR, capture_output=True,
                            text=True, check=True, env={**clean, "DJANGO_SETTINGS_MODULE": "project.settings", **env})
    assert json.loads(result.stdout) == expected


@override_settings(SECURE_HSTS_SECONDS=31536000, SESSION_COOKIE_SECURE=True, CSRF_COOKIE_SECURE=True)
def test_over_https_the_answer_has_hsts_and_secure_cookies(bootstrap):
    client = Client()
    page = client.get("/console/sign-in", secure=True)
    assert page.headers["Strict-Transport-Security"] == "max-age=31536000"
    assert page.cookies["csrftoken"]["secure"] is True
    plain = client.get("/console/sign-in")
    assert "Strict-Transport-Security" not in plain.headers  # never over plain http


def test_only_the_editor_pages_allow_a_style_element_with_their_nonce(console, ready_namespace):
    """CodeMirror adds one style element, carrying the nonce its script tag brings; a page
    without the editor names no nonce, and script-src never does."""
    configuration = ConfigurationFactory(namespace=ready_namespace, values={"agents": {"defaults": {}}})
    ns = f"/console/namespaces/{ready_namespace.id}"
    for path in (f"{ns}/configurations/new", f"{ns}/configurations/{configuration.id}/edit"):
        response = console.get(path)
        directives = policy(response)
        nonce = re.fullmatch(r"'self' 'nonce-([A-Za-z0-9+/=]+)'", directives["style-src"])
        assert nonce, directives["style-src"]
        assert f'src="/static/console/build/editor.js" defer nonce="{nonce.group(1)}"' in response.content.decode()
        assert directives["script-src"] == "'self'"
    again = policy(console.get(f"{ns}/configurations/new"))["style-src"]
    assert again != directives["style-src"], "a nonce is never reused"
    for path in (f"{ns}/configurations", f"{ns}/configurations/{configuration.id}"):
        assert policy(console.get(path))["style-src"] == "'self'", path
