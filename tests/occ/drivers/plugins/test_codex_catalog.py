"""The hosted Codex catalog client against the loopback fake (real HTTP, no mocks)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from occ.drivers.plugins.base import (
    PluginDiscoveryCredentialsRejected,
    PluginDiscoveryInvalidResponse,
    PluginDiscoveryRateLimited,
    PluginDiscoveryUnavailable,
    PluginNotFound,
)
from occ.drivers.plugins.codex_catalog import (
    NEEDS_LOCAL,
    NO_APPS,
    UNAVAILABLE_REASONS,
    UNSUPPORTED_COMPONENTS,
    forget_identities,
    list_plugins,
    plugin_details,
)
from occ.errors import InvalidRequest
from tests.fakes.fake_codex import ACCOUNT_ID, TOKEN, FakeCodex, serving

# A short deadline only where the deadline is the subject; elsewhere it would race the outcome
# on a loaded machine (a 5 MiB body not read in time is "unavailable", not "too large").
SHORT_DEADLINE_SECONDS = 0.5
ROOMY_DEADLINE_SECONDS = 30.0
LOADED_MACHINE_SECONDS = 3.0
FAKE_DELAY_SECONDS = 6.0


@pytest.fixture
def fake(settings) -> Iterator[FakeCodex]:
    forget_identities()
    yield from serving(settings, timeout=ROOMY_DEADLINE_SECONDS)
    forget_identities()


def _catalog_requests(fake: FakeCodex) -> list[dict]:
    return [r for r in fake.requests if r["path"].startswith("/backend-api/")]


def test_pages_the_global_catalog_with_sealed_cursors(fake):
    first = list_plugins(TOKEN)
    assert len(first.plugins) == 20
    assert first.plugins[0].id == "codex-plugin:linear@openai-curated-remote"
    assert first.plugins[0].remote_id == "plugins~Plugin_linear"
    assert first.plugins[0].tools is None  # loaded on demand
    assert first.next_cursor
    assert "page-" not in first.next_cursor
    second = list_plugins(TOKEN, cursor=first.next_cursor)
    third = list_plugins(TOKEN, cursor=second.next_cursor)
    assert len(second.plugins) == 20
    assert third.next_cursor is None
    ids = [e.id for e in first.plugins + second.plugins + third.plugins]
    assert len(ids) == len(set(ids)) == 50  # the entry with a bad name was skipped
    catalog = _catalog_requests(fake)
    assert [r["query"].get("pageToken") for r in catalog] == [None, "page-20", "page-40"]
    assert all(r["query"]["scope"] == "GLOBAL" and r["query"]["limit"] == "20" for r in catalog)
    assert all(r["authorized"] and r["account"] and r["sku"] == "codex" for r in catalog)
    # The identity is hydrated once and reused while paging.
    assert [r["path"] for r in fake.requests].count("/api/accounts/v1/user-auth-credential/whoami") == 1


def test_search_uses_q_and_a_cursor_stays_with_its_query(fake):
    page = list_plugins(TOKEN, query="  tool ")
    assert [e.name for e in page.plugins][:2] == ["Tool 01", "Tool 02"]
    assert _catalog_requests(fake)[-1]["path"] == "/backend-api/ps/plugins/search"
    assert _catalog_requests(fake)[-1]["query"]["q"] == "tool"
    assert page.next_cursor is not None
    with pytest.raises(InvalidRequest) as refused:
        list_plugins(TOKEN, query="linear", cursor=page.next_cursor)
    assert refused.value.details[0].path == "/cursor"
    with pytest.raises(InvalidRequest):
        list_plugins(TOKEN, cursor="not-a-cursor")


def test_unavailable_entries_say_why_in_our_words(fake):
    entries = {e.name: e for e in list_plugins(TOKEN).plugins}
    assert entries["Linear"].available
    assert entries["Figma"].unavailable_reason == UNAVAILABLE_REASONS["DISABLED_BY_ADMIN"]
    assert entries["Figma"].unavailable_help is not None
    assert entries["Canva"].unavailable_reason == UNAVAILABLE_REASONS["PLAN_NOT_ELIGIBLE"]
    assert entries["Notion"].unavailable_reason == NEEDS_LOCAL
    assert entries["Sentry"].unavailable_reason == NO_APPS
    # Only https links survive; a javascript: URL is dropped.
    assert entries["Linear"].logo_url == "https://cdn.example.test/linear.png"
    assert entries["Linear"].privacy_policy_url is None


def test_details_bring_tools_with_their_policy_facts(fake):
    linear = plugin_details(TOKEN, "plugins~Plugin_linear")
    assert linear.id == "codex-plugin:linear@openai-curated-remote"
    tools = {t.id: t for t in linear.tools or []}
    assert set(tools) == {"asdk_app_linear/search_issues", "asdk_app_linear/create_issue",
                          "asdk_app_linear/delete_issue"}
    assert not tools["asdk_app_linear/search_issues"].writes
    assert tools["asdk_app_linear/create_issue"].writes
    assert tools["asdk_app_linear/delete_issue"].destructive
    assert tools["asdk_app_linear/search_issues"].owner_id == "asdk_app_linear"
    github = plugin_details(TOKEN, "plugins~Plugin_github")
    by_name = {t.name: t for t in github.tools or []}
    assert by_name["get_pull_request"].available  # ONLY_ME apps count as enabled
    assert not by_name["merge_pull_request"].available
    slack = plugin_details(TOKEN, "plugins~Plugin_slack")
    assert all(not t.available for t in slack.tools or [])
    datadog = plugin_details(TOKEN, "plugins~Plugin_datadog")
    assert datadog.tools == ()
    assert datadog.unavailable_reason == UNSUPPORTED_COMPONENTS
    batch = [r for r in fake.requests if r["path"] == "/backend-api/ps/apps/batch"]
    assert batch
    assert all(r["method"] == "POST" and r["authorized"] for r in batch)


def test_a_token_that_is_not_a_codex_access_token_is_refused_before_any_request(fake):
    for bad in ("sk-not-a-codex-token-123", "at-has a space-1234", "eyJhbGciOi.jwt.sig", "at-short"):
        with pytest.raises(PluginDiscoveryCredentialsRejected):
            list_plugins(bad)
    assert fake.requests == []


def test_a_rejected_token_is_credentials_rejected(fake):
    with pytest.raises(PluginDiscoveryCredentialsRejected) as rejected:
        list_plugins("at-some-other-valid-looking-token")
    assert "UPSTREAM" not in rejected.value.message
    assert rejected.value.status == 400


@pytest.mark.parametrize(("mode", "error", "status"), [
    pytest.param("unauthorized", PluginDiscoveryCredentialsRejected, 400, id="401"),
    pytest.param("forbidden", PluginDiscoveryCredentialsRejected, 400, id="403"),
    pytest.param("rate_limited", PluginDiscoveryRateLimited, 429, id="429"),
    pytest.param("server_error", PluginDiscoveryUnavailable, 503, id="500"),
    pytest.param("redirect", PluginDiscoveryUnavailable, 503, id="redirect-refused"),
    pytest.param("bad_json", PluginDiscoveryInvalidResponse, 503, id="bad-json"),
    pytest.param("echo", PluginDiscoveryInvalidResponse, 503, id="echo"),
    pytest.param("echo_escaped", PluginDiscoveryInvalidResponse, 503, id="echo-escaped"),
    pytest.param("huge", PluginDiscoveryInvalidResponse, 503, id="size-cap-declared"),
    pytest.param("huge_stream", PluginDiscoveryInvalidResponse, 503, id="size-cap-streamed"),
])
def test_upstream_failures_become_our_codes_without_upstream_text(fake, mode, error, status, caplog):
    if mode == "huge_stream":
        fake.huge_bytes = 64 * 1024 * 1024  # far more than any socket buffer holds
    fake.configure(mode=mode)
    with pytest.raises(error) as failed:
        list_plugins(TOKEN)
    assert failed.value.status == status
    assert failed.value.code.startswith("PLUGIN_DISCOVERY_")
    assert "UPSTREAM" not in failed.value.message
    assert TOKEN not in failed.value.message
    assert TOKEN not in caplog.text
    assert "UPSTREAM" not in caplog.text
    if mode == "redirect":  # never followed
        assert not [r for r in fake.requests if r["path"] == "/elsewhere"]
    if mode == "huge_stream":
        deadline = time.monotonic() + ROOMY_DEADLINE_SECONDS
        while fake.abandoned_bodies == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.abandoned_bodies >= 1  # we hung up, we did not read 5 MiB


def test_a_repeated_page_token_is_an_invalid_response(fake):
    first = list_plugins(TOKEN)
    fake.configure(mode="cursor_repeat")
    with pytest.raises(PluginDiscoveryInvalidResponse):
        list_plugins(TOKEN, cursor=first.next_cursor)


@pytest.mark.parametrize("mode", ["slow", "drip"])
def test_one_deadline_bounds_the_call(fake, settings, mode):
    settings.OCC_PLUGIN_DISCOVERY_TIMEOUT_SECONDS = SHORT_DEADLINE_SECONDS
    fake.configure(mode=mode, delay=FAKE_DELAY_SECONDS)
    started = time.monotonic()
    with pytest.raises(PluginDiscoveryUnavailable):
        list_plugins(TOKEN)
    assert time.monotonic() - started < SHORT_DEADLINE_SECONDS + LOADED_MACHINE_SECONDS < FAKE_DELAY_SECONDS


def test_fedramp_accounts_send_the_fedramp_header(fake):
    fake.configure(fedramp=True)
    list_plugins(TOKEN)
    assert _catalog_requests(fake)[-1]["fedramp"] == "true"


def test_the_account_id_comes_from_the_identity_call(fake):
    fake.account_id = "acct-rotated"
    list_plugins(TOKEN)
    assert _catalog_requests(fake)[-1]["account"]
    assert fake.account_id != ACCOUNT_ID


def test_details_of_a_plugin_the_catalog_does_not_have_is_not_found(fake):
    with pytest.raises(PluginNotFound):
        plugin_details(TOKEN, "plugins~Plugin_nothing")
    with pytest.raises(InvalidRequest):
        plugin_details(TOKEN, "has spaces")
