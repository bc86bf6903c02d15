"""Model discovery with a service account token (``codex_pat``), against the loopback fake of the
identity host and the Codex models endpoint (real HTTP, no mocks)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from occ.drivers.model_providers import (
    ModelDiscoveryCredentialsRejected,
    ModelDiscoveryInvalidResponse,
    ModelDiscoveryRateLimited,
    ModelDiscoveryUnavailable,
    ModelDiscoveryUnsupportedProvider,
    discover_codex_models,
)
from occ.drivers.model_providers.discovery import CODEX_CLIENT_VERSION
from tests.fakes.fake_codex import ACCOUNT_ID, TOKEN, FakeCodex, serving

ROOMY_TIMEOUT_SECONDS = 30.0
SHORT_TIMEOUT_SECONDS = 0.5
LOADED_MACHINE_SECONDS = 3.0
FAKE_DELAY_SECONDS = 6.0
WHOAMI = "/api/accounts/v1/user-auth-credential/whoami"
MODELS = "/backend-api/codex/models"


@pytest.fixture
def fake(settings) -> Iterator[FakeCodex]:
    settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS = ROOMY_TIMEOUT_SECONDS
    yield from serving(settings)


def test_whoami_then_the_models_listed_for_the_account_in_priority_order(fake):
    models = discover_codex_models(TOKEN)
    # Dropped: the hidden model, the second gpt-6-astra (a duplicate), the slug with spaces.
    # Equal priorities (luna and mini, 2) keep the upstream order.
    assert [(m.id, m.display_name) for m in models] == [
        ("gpt-6-astra", "GPT-6 Astra"), ("gpt-6-luna", "GPT-6 Luna"), ("gpt-6-mini", "GPT-6 Mini"),
        ("gpt-5.6-sol", "gpt-5.6-sol")]
    assert [(r["path"], r["authorized"]) for r in fake.requests] == [(WHOAMI, True), (MODELS, True)]
    listing = fake.requests[1]
    assert listing["account"] is True  # ChatGPT-Account-ID from whoami, never from the caller
    assert listing["query"] == {"client_version": CODEX_CLIENT_VERSION}
    assert listing["fedramp"] is None


def test_a_fedramp_account_sends_the_fedramp_header(fake):
    fake.configure(fedramp=True)
    assert discover_codex_models(TOKEN)[0].id == "gpt-6-astra"
    assert fake.requests[1]["fedramp"] == "true"


@pytest.mark.parametrize("token", [
    pytest.param("sk-fake-openai-0123456789abcdef", id="an-api-key"),
    pytest.param("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.sig", id="an-identity-jwt"),
    pytest.param("at-short", id="too-short"),
    pytest.param("at-with spaces-0123456789", id="spaces"),
    pytest.param("at-" + "x" * 8190, id="too-long"),
])
def test_a_value_that_is_not_a_service_account_token_is_never_sent(fake, token):
    with pytest.raises(ModelDiscoveryCredentialsRejected, match="starts with at-") as raised:
        discover_codex_models(token)
    assert raised.value.status == 400
    assert token not in raised.value.message
    assert fake.requests == []


def test_a_token_the_identity_host_refuses_is_rejected_before_the_models_call(fake):
    with pytest.raises(ModelDiscoveryCredentialsRejected, match="service account token"):
        discover_codex_models("at-not-the-right-token-0123456789")
    assert [r["path"] for r in fake.requests] == [WHOAMI]


ERRORS = [
    pytest.param("forbidden", ModelDiscoveryCredentialsRejected, 400, id="403"),
    pytest.param("rate_limited", ModelDiscoveryRateLimited, 429, id="429"),
    pytest.param("server_error", ModelDiscoveryUnavailable, 503, id="500"),
    pytest.param("slow", ModelDiscoveryUnavailable, 503, id="slow-headers"),
    pytest.param("drip", ModelDiscoveryUnavailable, 503, id="slow-body"),
    pytest.param("redirect", ModelDiscoveryUnavailable, 503, id="redirect"),
    pytest.param("bad_json", ModelDiscoveryInvalidResponse, 503, id="bad-json"),
    pytest.param("huge", ModelDiscoveryInvalidResponse, 503, id="huge-declared"),
    pytest.param("huge_stream", ModelDiscoveryInvalidResponse, 503, id="huge-streamed"),
    pytest.param("echo", ModelDiscoveryInvalidResponse, 503, id="echo"),
    pytest.param("echo_escaped", ModelDiscoveryInvalidResponse, 503, id="echo-escaped"),
    pytest.param("bad_whoami", ModelDiscoveryInvalidResponse, 503, id="whoami-without-fedramp-flag"),
]


@pytest.mark.parametrize(("mode", "error", "status"), ERRORS)
def test_upstream_failures_of_the_models_call_become_our_errors(fake, settings, mode, error, status):
    fake.configure(mode=mode, delay=FAKE_DELAY_SECONDS)
    if mode in ("slow", "drip"):
        settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS = SHORT_TIMEOUT_SECONDS
    started = time.monotonic()
    with pytest.raises(error) as raised:
        discover_codex_models(TOKEN)
    if mode in ("slow", "drip"):  # one deadline for whoami and the models call, not the fake's delay
        assert time.monotonic() - started < SHORT_TIMEOUT_SECONDS + LOADED_MACHINE_SECONDS < FAKE_DELAY_SECONDS
    assert raised.value.status == status
    assert "manually" in raised.value.message
    assert "UPSTREAM-TEXT" not in raised.value.message
    assert TOKEN not in raised.value.message


@pytest.mark.parametrize("entries", [
    pytest.param([{"slug": "gpt-6-astra", "visibility": "list", "priority": "1"}], id="priority-text"),
    pytest.param([{"slug": "gpt-6-astra", "visibility": "list"}], id="priority-missing"),
    pytest.param([{"slug": "gpt-6-astra", "visibility": "list", "priority": True}], id="priority-bool"),
    pytest.param([{"slug": 7, "visibility": "list", "priority": 1}], id="slug-not-text"),
    pytest.param(["gpt-6-astra"], id="entry-not-object"),
])
def test_a_models_list_without_a_usable_order_or_slugs_is_invalid(fake, entries):
    fake.codex_models = entries
    with pytest.raises(ModelDiscoveryInvalidResponse):
        discover_codex_models(TOKEN)


def test_only_listed_models_are_kept(fake):
    fake.codex_models = [{"slug": "gpt-hidden", "visibility": "hide", "priority": 1},
                         {"slug": "gpt-none", "priority": 2}]
    assert discover_codex_models(TOKEN) == []


def test_the_size_bound_applies(fake, settings):
    settings.OCC_MODEL_DISCOVERY_MAX_RESPONSE_BYTES = 4096
    fake.codex_models = [{"slug": f"gpt-{n:03d}", "visibility": "list", "priority": n} for n in range(200)]
    with pytest.raises(ModelDiscoveryInvalidResponse):
        discover_codex_models(TOKEN)


def test_a_redirect_is_never_followed(fake):
    with FakeCodex() as elsewhere:
        fake.redirect_to = elsewhere.origin + MODELS
        fake.configure(mode="redirect")
        with pytest.raises(ModelDiscoveryUnavailable):
            discover_codex_models(TOKEN)
        assert elsewhere.requests == []


def test_discovery_is_off_without_the_codex_hosts(fake, settings):
    settings.OCC_CODEX_CHATGPT_BASE_URL = ""
    with pytest.raises(ModelDiscoveryUnsupportedProvider, match="turned off"):
        discover_codex_models(TOKEN)
    assert fake.requests == []


def test_the_account_id_comes_from_whoami(fake):
    fake.account_id = "acct other"  # whitespace: not an account id OCC would send as a header
    with pytest.raises(ModelDiscoveryInvalidResponse):
        discover_codex_models(TOKEN)
    assert [r["path"] for r in fake.requests] == [WHOAMI]
    assert fake.account_id != ACCOUNT_ID
