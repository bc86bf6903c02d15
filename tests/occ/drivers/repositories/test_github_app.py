"""The GitHub App driver against a loopback fake of GitHub's App endpoints (real HTTP)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from occ.documents import RepositoryBinding
from occ.drivers.repositories import (
    PROFILE_PERMISSIONS,
    RepositoryDriverError,
    RepositoryDriverMisconfigured,
    RepositoryGrantRefused,
    RepositoryInstallationRevoked,
    RepositoryProviderRateLimited,
    repository_driver,
)
from occ.drivers.repositories.github_app import GitHubAppDriver
from tests.fakes.fake_github import FakeGitHub, serving


@pytest.fixture
def github(settings: Any) -> Iterator[FakeGitHub]:
    yield from serving(settings)


@pytest.fixture
def driver(github: FakeGitHub) -> GitHubAppDriver:
    found = repository_driver()
    assert isinstance(found, GitHubAppDriver)
    return found


def test_lists_the_installations_repositories_sorted_and_lowercase(driver, github):
    options = driver.list_options()
    assert [(o.repository_ref, o.display_name, o.repository_id) for o in options] == [
        ("acme/docs", "acme/docs", 1002), ("acme/secret-plans", "acme/secret-plans", 1003),
        ("acme/widgets", "Acme/Widgets", 1001)]  # archived repositories are not offered
    assert options[2].description == "The widget factory"
    assert options[0].description is None
    token_request = github.requests[0]
    assert (token_request["path"], token_request["body"]) == (
        f"/app/installations/{github.installation_id}/access_tokens", {"permissions": {"metadata": "read"}})


def test_the_listing_token_is_reused_then_replaced_once_it_expired(driver, github):
    driver.list_options()
    driver.list_options()
    assert [r["method"] for r in github.requests] == ["POST", "GET", "GET"]
    github.expire_tokens()
    github.clear_requests()
    assert len(driver.list_options()) == 3
    assert [(r["method"], r["path"].split("/")[1]) for r in github.requests] == [
        ("GET", "installation"), ("POST", "app"), ("GET", "installation")]


def test_listing_pages_through_many_repositories(driver, github):
    github.repositories = [{"id": 5000 + n, "full_name": f"acme/repo-{n:03}"} for n in range(250)]
    options = driver.list_options()
    assert len(options) == 250
    assert [r["query"].get("page") for r in github.requests if r["method"] == "GET"] == ["1", "2", "3"]


@pytest.mark.parametrize("profile", ["git-read", "git-write", "git-full"])
def test_a_minted_token_reaches_exactly_the_selection_with_the_profiles_permissions(driver, github, profile):
    token = driver.mint_token(["acme/widgets", "ACME/docs.git"], profile)
    grant = github.grant_of(token.token)
    assert grant is not None
    assert grant.repository_ids == [1001, 1002]
    assert grant.permissions == dict(PROFILE_PERMISSIONS[profile])
    assert token.repository_refs == ("acme/docs", "acme/widgets")
    assert token.token not in repr(token)


def test_profiles_are_the_documented_access_levels():
    assert {p: (m["contents"], m["pull_requests"], m["issues"]) for p, m in PROFILE_PERMISSIONS.items()} == {
        "git-read": ("read", "read", "read"), "git-write": ("write", "write", "read"),
        "git-full": ("write", "write", "write")}
    assert all(m["metadata"] == "read" for m in PROFILE_PERMISSIONS.values())


def test_a_token_with_a_different_grant_is_discarded(driver, github):
    github.wrong_grant = True
    with pytest.raises(RepositoryGrantRefused):
        driver.mint_token(["acme/widgets"], "git-read")


def test_a_permission_the_app_lacks_is_refused_not_widened(driver, github):
    github.app_permissions["issues"] = "read"
    assert driver.mint_token(["acme/widgets"], "git-write").permissions["issues"] == "read"
    with pytest.raises(RepositoryGrantRefused):
        driver.mint_token(["acme/widgets"], "git-full")


def test_an_unreachable_repository_is_refused_before_any_token(driver, github):
    with pytest.raises(RepositoryGrantRefused):
        driver.mint_token(["acme/elsewhere"], "git-read")
    assert not [r for r in github.requests if "repository_ids" in (r.get("body") or {})]


def test_check_bindings_names_each_problem(driver):
    problems = driver.check_bindings([RepositoryBinding(repository_ref="acme/widgets", profile="git-read"),
                                      RepositoryBinding(repository_ref="acme/nope", profile="git-full")])
    assert [(p.index, p.field) for p in problems] == [(1, "repository_ref")]
    assert "acme/nope" in problems[0].message
    assert "repository options" in problems[0].message


def test_a_revoked_installation_says_so(driver, github):
    github.revoke()
    with pytest.raises(RepositoryInstallationRevoked) as caught:
        driver.list_options()
    assert caught.value.status == 503
    assert caught.value.code == "REPOSITORY_OPTIONS_UNAVAILABLE"
    assert "UPSTREAM" not in caught.value.message


@pytest.mark.parametrize("limit", ["403", "429"])
def test_rate_limiting_is_told_apart_from_a_refused_credential(driver, github, limit):
    github.rate_limit = limit
    with pytest.raises(RepositoryProviderRateLimited) as caught:
        driver.list_options()
    assert "limiting" in caught.value.message


def test_a_wrong_key_is_a_refused_installation(github, tmp_path):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key = tmp_path / "other.pem"
    key.write_bytes(other.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))
    driver = GitHubAppDriver(api_base_url=github.origin, app_id=github.app_id,
                             installation_id=github.installation_id, private_key_file=str(key))
    with pytest.raises(RepositoryInstallationRevoked):
        driver.list_options()


@pytest.mark.parametrize("change", [
    pytest.param({"private_key_file": "/nonexistent/app.pem"}, id="missing-key-file"),
    pytest.param({"app_id": ""}, id="no-app-id"),
    pytest.param({"installation_id": "abc"}, id="bad-installation-id"),
])
def test_misconfiguration_is_a_503_that_says_what_to_set(github, change):
    arguments = {"api_base_url": github.origin, "app_id": github.app_id, "installation_id": github.installation_id,
                 "private_key_file": str(github.key_file), **change}
    with pytest.raises(RepositoryDriverMisconfigured) as caught:
        GitHubAppDriver(**arguments).list_options()
    assert caught.value.status == 503
    assert "private key file" in caught.value.message


def test_a_garbled_key_file_never_reaches_the_message(github, tmp_path):
    key = tmp_path / "app.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nTOPSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n")
    driver = GitHubAppDriver(api_base_url=github.origin, app_id=github.app_id,
                             installation_id=github.installation_id, private_key_file=str(key))
    with pytest.raises(RepositoryDriverMisconfigured) as caught:
        driver.list_options()
    assert "TOPSECRET" not in str(caught.value)
    assert caught.value.__cause__ is None


def test_an_unreachable_github_after_signing(github):
    driver = GitHubAppDriver(api_base_url="http://127.0.0.1:9", app_id=github.app_id,
                             installation_id=github.installation_id, private_key_file=str(github.key_file),
                             timeout=2.0)
    with pytest.raises(RepositoryDriverError) as caught:
        driver.list_options()
    assert caught.value.code == "REPOSITORY_OPTIONS_UNAVAILABLE"


def test_a_short_token_lifetime_is_replaced_before_use(driver, github):
    github.token_ttl = timedelta(minutes=2)  # inside the driver's margin: never reused
    driver.list_options()
    driver.list_options()
    assert [r["method"] for r in github.requests] == ["POST", "GET", "POST", "GET"]


def test_no_driver_when_none_is_configured(settings):
    settings.OCC_REPOSITORY_DRIVER = ""
    assert repository_driver() is None
