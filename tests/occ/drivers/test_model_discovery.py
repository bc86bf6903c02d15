"""Model discovery's HTTP side, against the loopback fake providers (real HTTP, no mocks)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from occ.drivers.model_providers import (
    ModelDiscoveryCredentialsRejected,
    ModelDiscoveryInvalidResponse,
    ModelDiscoveryRateLimited,
    ModelDiscoveryUnavailable,
    ModelDiscoveryUnsupportedProvider,
    discover_models,
    discovery_target,
)
from occ.drivers.model_providers.discovery import MAX_PAGES
from tests.fakes.fake_model_providers import ANTHROPIC_KEY, OPENAI_KEY, FakeModelProviders, serving

KEYS = {"openai": OPENAI_KEY, "anthropic": ANTHROPIC_KEY}
# Only the tests of the timeout use a short one. Anywhere else it races the outcome on a loaded
# machine: a 5 MiB body not read within 0.5 s is "unavailable", not "too large".
SHORT_TIMEOUT_SECONDS = 0.5
ROOMY_TIMEOUT_SECONDS = 30.0
# Room on top of the short timeout for a loaded 2-core machine (load average about 10); the
# fake's delay stays longer than both, so "bounded by the timeout, not the server" is proven.
LOADED_MACHINE_SECONDS = 3.0
FAKE_DELAY_SECONDS = 6.0
TIMEOUT_MODES = {"slow", "drip"}


@pytest.fixture
def fake(settings) -> Iterator[FakeModelProviders]:
    yield from serving(settings, timeout=ROOMY_TIMEOUT_SECONDS)


def _discover(provider: str, key: str | None = None):
    return discover_models(discovery_target(provider), key or KEYS[provider])


def test_openai_lists_chat_models_newest_first_without_retired_ones(fake):
    models = _discover("openai")
    # Dropped: shut down in 2020, embeddings/speech/images/moderation, a duplicate, an id with spaces.
    assert [m.id for m in models] == ["gpt-6-astra", "gpt-6-luna", "gpt-5.6-sol", "gpt-odd-date", "gpt-no-date"]
    assert models[0].created_at == datetime.fromtimestamp(1_790_000_000, UTC)
    assert models[-1].created_at is None
    assert all(m.display_name is None for m in models)
    assert fake.requests == [{"method": "GET", "provider": "openai", "path": "/openai/v1/models", "query": {},
                              "authorized": True, "anthropicVersion": None}]


def test_openai_drops_a_model_whose_shutdown_date_is_today(fake):
    today = datetime.now(UTC).date().isoformat()
    fake.openai_models = [{"id": "gpt-today", "created": 1, "shutdown_date": today},
                          {"id": "gpt-kept", "created": 2}]
    assert [m.id for m in _discover("openai")] == ["gpt-kept"]


def test_anthropic_follows_has_more_and_last_id(fake):
    fake.configure(page_size=2)
    models = _discover("anthropic")
    assert [(m.id, m.display_name) for m in models] == [
        ("claude-opus-5-5", "Claude Opus 5.5"), ("claude-mythos-5-1", "Claude Mythos 5.1"),
        ("claude-sonnet-5", "Claude Sonnet 5"), ("claude-haiku-4-5", "Claude Haiku 4.5"),
        ("claude-sonnet-4-6", None),
    ]
    assert models[0].created_at == datetime(2026, 8, 1, tzinfo=UTC)
    assert [r["query"] for r in fake.requests] == [
        {"limit": "1000"},
        {"limit": "1000", "after_id": "claude-mythos-5-1"},
        {"limit": "1000", "after_id": "claude-haiku-4-5"},
    ]
    assert all(r["authorized"] and r["anthropicVersion"] == "2023-06-01" for r in fake.requests)


def test_anthropic_paging_stops_after_the_page_bound(fake):
    fake.anthropic_models = [{"id": f"claude-{n:02d}", "display_name": f"C {n}",
                              "created_at": f"2026-01-{n + 1:02d}T00:00:00Z"} for n in range(15)]
    fake.configure(page_size=1)
    models = _discover("anthropic")
    assert len(fake.requests) == MAX_PAGES
    assert [m.id for m in models] == [f"claude-{n:02d}" for n in reversed(range(MAX_PAGES))]


@pytest.mark.parametrize("mode", ["cursor_loop", "no_cursor"])
def test_anthropic_cursor_faults_are_invalid_responses(fake, mode):
    fake.configure(mode=mode, page_size=2)
    with pytest.raises(ModelDiscoveryInvalidResponse):
        _discover("anthropic")
    assert len(fake.requests) <= 2


ERRORS = [
    pytest.param("unauthorized", ModelDiscoveryCredentialsRejected, 400, id="401"),
    pytest.param("forbidden", ModelDiscoveryCredentialsRejected, 400, id="403"),
    pytest.param("rate_limited", ModelDiscoveryRateLimited, 429, id="429"),
    pytest.param("server_error", ModelDiscoveryUnavailable, 503, id="500"),
    pytest.param("drop", ModelDiscoveryUnavailable, 503, id="connection-dropped"),
    pytest.param("slow", ModelDiscoveryUnavailable, 503, id="slow-headers"),
    pytest.param("drip", ModelDiscoveryUnavailable, 503, id="slow-body"),
    pytest.param("redirect", ModelDiscoveryUnavailable, 503, id="redirect"),
    pytest.param("bad_json", ModelDiscoveryInvalidResponse, 503, id="bad-json"),
    pytest.param("bad_shape", ModelDiscoveryInvalidResponse, 503, id="bad-shape"),
    pytest.param("huge", ModelDiscoveryInvalidResponse, 503, id="huge-declared"),
    pytest.param("huge_stream", ModelDiscoveryInvalidResponse, 503, id="huge-streamed"),
    pytest.param("echo", ModelDiscoveryInvalidResponse, 503, id="echo"),
    pytest.param("echo_escaped", ModelDiscoveryInvalidResponse, 503, id="echo-escaped"),
]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(("mode", "error", "status"), ERRORS)
def test_upstream_failures_become_our_errors(fake, settings, provider, mode, error, status):
    fake.configure(mode=mode, delay=FAKE_DELAY_SECONDS)
    if mode in TIMEOUT_MODES:
        settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS = SHORT_TIMEOUT_SECONDS
    started = time.monotonic()
    with pytest.raises(error) as raised:
        _discover(provider)
    if mode in TIMEOUT_MODES:  # bounded by the timeout, not by the fake's delay
        assert time.monotonic() - started < SHORT_TIMEOUT_SECONDS + LOADED_MACHINE_SECONDS < FAKE_DELAY_SECONDS
    assert raised.value.status == status
    assert raised.value.code.startswith("MODEL_DISCOVERY_")
    assert "manually" in raised.value.message
    assert "UPSTREAM-TEXT" not in raised.value.message
    assert KEYS[provider] not in raised.value.message
    assert len(fake.requests) == 1


def test_a_wrong_key_is_rejected_by_the_provider(fake):
    with pytest.raises(ModelDiscoveryCredentialsRejected):
        _discover("openai", "sk-not-the-right-key")
    assert fake.requests[0]["authorized"] is False


def test_the_default_size_bound_stops_a_streamed_body_early(fake, settings):
    settings.OCC_MODEL_DISCOVERY_MAX_RESPONSE_BYTES = 64 * 1024
    fake.huge_bytes = 64 * 1024 * 1024  # far more than any socket buffer holds
    fake.configure(mode="huge_stream")
    with pytest.raises(ModelDiscoveryInvalidResponse):
        _discover("openai")
    deadline = time.monotonic() + ROOMY_TIMEOUT_SECONDS
    while fake.abandoned_bodies == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake.abandoned_bodies == 1  # OCC hung up long before the 64 MiB were sent


def test_the_size_bound_applies_to_ordinary_lists_too(fake, settings):
    settings.OCC_MODEL_DISCOVERY_MAX_RESPONSE_BYTES = 4096
    fake.openai_models = [{"id": f"gpt-{n:03d}", "created": n + 1} for n in range(40)]  # ~1.2 KiB
    assert len(_discover("openai")) == 40
    fake.openai_models = [{"id": f"gpt-{n:03d}", "created": n + 1} for n in range(200)]  # ~6 KiB
    with pytest.raises(ModelDiscoveryInvalidResponse):
        _discover("openai")


def test_a_redirect_is_never_followed(fake, settings):
    with FakeModelProviders() as elsewhere:
        fake.redirect_to = elsewhere.base_url("openai") + "/v1/models"
        fake.configure(mode="redirect")
        with pytest.raises(ModelDiscoveryUnavailable):
            _discover("openai")
        assert elsewhere.requests == []
    assert len(fake.requests) == 1


def test_an_unreachable_provider_is_unavailable(settings):
    with FakeModelProviders() as gone:
        base = gone.base_url("openai")
    settings.OCC_MODEL_DISCOVERY_BASE_URLS = {"openai": base}
    with pytest.raises(ModelDiscoveryUnavailable):
        _discover("openai")


# --- the allowlist -----------------------------------------------------------------------------


@pytest.mark.parametrize("requested", [None, "{base}", "{base}/", "{base}/v1", "{base}/v1/"])
def test_a_request_may_name_only_the_allowlisted_endpoint(fake, requested):
    base = fake.base_url("openai")
    target = discovery_target("openai", requested.format(base=base) if requested else None)
    assert target.base_url == base
    assert discover_models(target, OPENAI_KEY)[0].id == "gpt-6-astra"


def test_another_endpoint_is_refused_and_never_contacted(fake):
    with FakeModelProviders() as typed:
        for url in (typed.base_url("openai"), typed.origin, fake.base_url("anthropic"), "http://10.0.0.1/v1"):
            with pytest.raises(ModelDiscoveryUnsupportedProvider, match="manually"):
                discovery_target("openai", url)
        assert typed.requests == []
    assert fake.requests == []


@pytest.mark.parametrize("provider", ["openai-compatible", "custom", "ollama", "OpenAI", ""])
def test_other_providers_are_unsupported(fake, provider):
    with pytest.raises(ModelDiscoveryUnsupportedProvider, match="manually"):
        discovery_target(provider)


def test_a_provider_left_out_of_the_allowlist_has_discovery_off(fake, settings):
    settings.OCC_MODEL_DISCOVERY_BASE_URLS = {"anthropic": fake.base_url("anthropic")}
    with pytest.raises(ModelDiscoveryUnsupportedProvider, match="turned off"):
        discovery_target("openai")


@pytest.mark.parametrize("key", ["short", "sk with spaces 123", "sk-\nnewline-123", "sk-ünïcode-123", "x" * 4097])
def test_a_key_that_is_not_a_key_is_never_sent(fake, key):
    with pytest.raises(ModelDiscoveryCredentialsRejected):
        _discover("openai", key)
    assert fake.requests == []

