"""A refused CSRF check (``CSRF_FAILURE_VIEW`` = ``project.csrf.csrf_failure``) answers as the face
that was asked: htmx gets the console's error toast (never Django's whole 403 page swapped
into the page), a plain console form the console's error page, the API its JSON envelope, and
the admin keeps Django's page."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.test import Client, RequestFactory
from django.urls import reverse

from project.csrf import CSRF_MESSAGE, csrf_failure
from tests.console.conftest import is_error_toast

pytestmark = pytest.mark.django_db

SWITCH = "/console/switch-namespace"


def test_the_setting_names_the_view():
    assert settings.CSRF_FAILURE_VIEW == "project.csrf.csrf_failure"


def test_an_htmx_write_with_a_wrong_token_gets_the_error_toast(console):
    response = Client.post(console, SWITCH, {}, headers={"HX-Request": "true", "X-CSRFToken": "wrong" * 8})

    assert response.status_code == 403
    assert is_error_toast(response)
    html = response.content.decode()
    assert 'data-error-code="FORBIDDEN"' in html
    assert CSRF_MESSAGE in html
    assert "<html" not in html
    assert "CSRF verification failed" not in html


def test_a_console_form_without_its_token_gets_the_console_error_page(console):
    response = Client.post(console, SWITCH, {})

    assert response.status_code == 403
    html = response.content.decode()
    assert '<h1 id="error-title">Page expired</h1>' in html
    assert CSRF_MESSAGE in html
    assert f'href="{reverse("console:home")}"' in html
    assert "CSRF verification failed" not in html


def test_an_api_path_gets_the_json_envelope():
    request = RequestFactory().post("/namespaces/ns_1/configurations", data="{}", content_type="application/json")

    response = csrf_failure(request, reason="CSRF cookie not set.")

    assert response.status_code == 403
    body = json.loads(response.content)
    assert body["error"] == {"code": "FORBIDDEN", "message": CSRF_MESSAGE}
    assert set(body["meta"]) == {"requestId"}


def test_the_admin_keeps_djangos_page(bootstrap):
    response = Client(enforce_csrf_checks=True).post("/admin/login/", {"username": "x", "password": "y"})

    assert response.status_code == 403
    assert "CSRF verification failed" in response.content.decode()
