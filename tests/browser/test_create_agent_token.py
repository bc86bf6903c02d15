"""Create Agent with a service account token in a real browser, at 1440 and at 390 px: the token
lists the workspace's models (OCC asking the loopback Codex fake: whoami, then the models
endpoint), the token never comes back, and Create says why an Agent cannot run with it yet.
Each state is saved as a screenshot under the test's artifacts."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.support import Console
from tests.browser.test_console_flow import assert_no_canary, heading, htmx_idle, secret_list
from tests.fakes.fake_codex import TOKEN

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)], ids=["1440", "390"])
def test_a_service_account_token_discovers_models_and_create_says_why_not(console: Console, width: int,
                                                                          height: int):
    page, occ = console.page, console.occ
    page.set_viewport_size({"width": width, "height": height})
    console.sign_in()
    secrets_before = secret_list(occ)
    console.goto(f"/console/namespaces/{occ.namespace_id}/agents/new")
    expect(heading(page, "Create Agent")).to_be_visible()
    page.get_by_label("Agent name").fill(f"token-{width}")
    page.get_by_label("Enter a service account token").check()
    htmx_idle(page)
    token = page.get_by_label("Service account token", exact=True)
    expect(token).to_have_attribute("type", "password")
    token.fill(TOKEN)
    page.get_by_role("button", name="Discover models").click()
    htmx_idle(page)
    model = page.get_by_label("Model", exact=True)
    expect(model.locator("option[value='gpt-6-mini']")).to_have_count(1)  # only the fake's workspace has it
    expect(model.locator("option[value='codex-internal-eval']")).to_have_count(0)  # hidden upstream
    expect(page.locator("#discovery-status")).to_have_text("4 models available with this credential.")
    model.select_option("gpt-6-astra")
    console.shot("token models discovered")
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "no horizontal scroll"

    page.locator("#create-agent-form").get_by_role("button", name="Create Agent", exact=True).click()
    expect(page.locator("#error-summary")).to_be_focused()
    expect(page.locator("#model-api-key-error")).to_contain_text("cannot run with a service account token yet")
    console.shot("token refused")
    assert secret_list(occ) == secrets_before
    assert_no_canary(console, (TOKEN,))
