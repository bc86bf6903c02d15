"""Single sign-on's settings as start-up reads them (each case a fresh interpreter loading
project.settings): off by default; once the issuer is set, the endpoints and the client are
required; recovery-only passwords need single sign-on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings

LOAD = "import project.settings as s; print(repr(s.OCC_OIDC_ISSUER), s.OCC_PASSWORD_SIGN_IN, s.OIDC_USE_PKCE)"
CONFIGURED = {
    "OCC_OIDC_ISSUER": "https://id.example.test", "OCC_OIDC_AUTHORIZATION_ENDPOINT": "https://id.example.test/auth",
    "OCC_OIDC_TOKEN_ENDPOINT": "https://id.example.test/token",
    "OCC_OIDC_USERINFO_ENDPOINT": "https://id.example.test/userinfo",
    "OCC_OIDC_JWKS_ENDPOINT": "https://id.example.test/jwks", "OCC_OIDC_CLIENT_ID": "occ",
    "OCC_OIDC_CLIENT_SECRET": "settings-test-secret"}


def load(**values: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("OCC_OIDC_", "OCC_PASSWORD"))}
    return subprocess.run([sys.executable, "-c", LOAD], env={**env, **values}, cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=60, check=False)


def test_off_unless_configured():
    result = load()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["''", "everyone", "True"]


def test_configured_with_recovery_only_passwords():
    result = load(**CONFIGURED, OCC_PASSWORD_SIGN_IN="recovery")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["'https://id.example.test'", "recovery", "True"]
    assert "settings-test-secret" not in result.stdout + result.stderr


@pytest.mark.parametrize("missing", ["OCC_OIDC_TOKEN_ENDPOINT", "OCC_OIDC_JWKS_ENDPOINT", "OCC_OIDC_CLIENT_SECRET"])
def test_an_issuer_without_its_endpoints_or_client_is_refused(missing):
    result = load(**{name: value for name, value in CONFIGURED.items() if name != missing})
    assert result.returncode != 0
    assert f"so {missing} must be set too" in result.stderr


def test_an_endpoint_with_credentials_is_refused():
    result = load(**{**CONFIGURED, "OCC_OIDC_TOKEN_ENDPOINT": "https://user:pw@id.example.test/token"})
    assert result.returncode != 0
    assert "OCC_OIDC_TOKEN_ENDPOINT must be an http(s) URL without credentials" in result.stderr


@pytest.mark.parametrize(("values", "says"), [
    ({"OCC_PASSWORD_SIGN_IN": "recovery"}, "needs single sign-on"),
    ({"OCC_PASSWORD_SIGN_IN": "nobody"}, "must be everyone or recovery"),
])
def test_password_sign_in_setting_is_checked(values, says):
    result = load(**values)
    assert result.returncode != 0
    assert says in result.stderr
