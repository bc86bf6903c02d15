"""Create Agent's model authentication with a service account token (OpenAI's ``codex_pat``): the
token lists the workspace's models through the real discovery (httpx to the loopback Codex fake),
is never rendered back or saved, and Create refuses it in words that say why and what to do."""

from __future__ import annotations

from collections.abc import Iterator
from html import unescape

import pytest

from occ.models import AgentProvisioningWork, Secret
from tests.console.conftest import fragment_root
from tests.console.test_agent_create import filled_form, submit, text, url
from tests.fakes.fake_codex import TOKEN, FakeCodex, serving


@pytest.fixture
def ns(ready_namespace):
    return ready_namespace


@pytest.fixture
def fake(settings) -> Iterator[FakeCodex]:
    settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS = 30.0
    yield from serving(settings)


def test_openai_offers_a_token_and_another_provider_does_not(console, ns):
    page = text(console.get(url("agent-new", ns)))
    assert 'id="auth-token" name="auth_choice" value="token"' in page
    data = filled_form(console, ns, auth_choice="token", provider="anthropic", model="claude-sonnet-5")
    changed = text(console.hx_post(url("agent-new-form", ns), {**data, "changed": "provider"}))
    assert 'id="auth-token"' not in changed  # the auth choices are rendered again, without it
    assert 'id="auth-new-key" name="auth_choice" value="new_key" checked' in changed


def test_choosing_a_token_asks_for_it_and_says_what_it_is_for(console, ns):
    data = filled_form(console, ns, auth_choice="token", api_key="")
    html = text(console.hx_post(url("agent-new-form", ns), {**data, "changed": "auth_choice"}))
    assert fragment_root(html) == "div#credential-section"
    assert '<label for="model-api-key">Service account token</label>' in html
    assert 'placeholder="at-…"' in html
    assert "dedicated Codex harness" in html


def test_a_token_discovers_the_workspace_models_and_is_never_echoed_or_saved(console, ns, fake):
    data = filled_form(console, ns, auth_choice="token", api_key=TOKEN, model="")
    response = console.hx_post(url("agent-new-models", ns), data)
    html = text(response)
    assert fragment_root(html) == "div#model-field"
    assert '<option value="gpt-6-astra">GPT-6 Astra (gpt-6-astra)</option>' in html
    assert html.index('value="gpt-6-astra"') < html.index('value="gpt-6-luna"') < html.index('value="gpt-5.6-sol"')
    assert "codex-internal-eval" not in html  # hidden upstream
    assert "4 models available with this credential" in html
    assert [r["path"] for r in fake.requests] == ["/api/accounts/v1/user-auth-credential/whoami",
                                                  "/backend-api/codex/models"]
    assert TOKEN not in html
    assert Secret.objects.count() == 0


@pytest.mark.parametrize(("api_key", "mode", "says"), [
    pytest.param("sk-fake-openai-0123456789abcdef", "ok", "starts with at-", id="an-api-key-as-a-token"),
    pytest.param(TOKEN, "unauthorized", "did not accept the service account token", id="rejected"),
    pytest.param(TOKEN, "server_error", "could not be reached", id="unavailable"),
])
def test_a_token_discovery_failure_speaks_of_the_token(console, ns, fake, api_key, mode, says):
    fake.configure(mode=mode)
    data = filled_form(console, ns, auth_choice="token", api_key=api_key)
    html = text(console.hx_post(url("agent-new-models", ns), data))
    assert 'role="alert" id="discovery-error"' in html
    assert says in unescape(html)
    assert "UPSTREAM-TEXT" not in html
    assert api_key not in html
    assert 'id="agent-model" name="model"' in html  # manual entry and the starter list stay


def test_create_with_a_token_is_refused_before_anything_is_saved(console, ns, fake):
    response = submit(console, ns, filled_form(console, ns, auth_choice="token", api_key=TOKEN))
    assert response.status_code == 200
    html = unescape(text(response))
    assert "An Agent cannot run with a service account token yet" in html
    assert "enter an OpenAI API key or choose its Secret" in html
    assert TOKEN not in html
    assert Secret.objects.count() == 0
    assert AgentProvisioningWork.objects.count() == 0
    assert fake.requests == []
