"""The Create Agent page's Channels card in a real browser, at 1440 and at 390 px (issue 27,
item 1): the card follows the Configuration JSON (Slack written there by hand shows on the
card; deleted there, the card says not configured), and Remove takes Slack out of the JSON and
the card in one step. Each state is saved as a screenshot under the test's artifacts."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.support import Console
from tests.browser.test_console_flow import heading, htmx_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLACK = {"enabled": True, "mode": "socket",
         "botToken": {"source": "env", "provider": "default", "id": "SLACK_BOT_TOKEN"},
         "appToken": {"source": "env", "provider": "default", "id": "SLACK_APP_TOKEN"}}


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)], ids=["1440", "390"])
def test_the_channels_card_follows_the_json_and_remove_takes_slack_out(console: Console, width: int, height: int):
    page, occ = console.page, console.occ
    page.set_viewport_size({"width": width, "height": height})
    console.sign_in()
    console.goto(f"/console/namespaces/{occ.namespace_id}/agents/new")
    expect(heading(page, "Create Agent")).to_be_visible()
    status = page.locator("#slack-card-status")
    expect(status).to_have_text("Slack: not configured")
    page.locator("#advanced-settings > summary").click()
    editor = page.locator("#configuration-json")
    document = json.loads(editor.input_value())

    editor.fill(json.dumps({**document, "channels": {"slack": SLACK}}, indent=2))
    editor.blur()  # a change event: the card asks the server what the JSON now says
    expect(status).to_contain_text("Slack: set in the Configuration JSON")
    remove = page.get_by_role("button", name="Remove Slack")
    expect(remove).to_be_visible()
    console.shot("slack written in the json")
    page.locator("#channels-card").screenshot(path=str(console.artifacts / "card-slack-in-json.png"))

    remove.click()
    expect(status).to_have_text("Slack: not configured")
    expect(remove).to_have_count(0)
    htmx_idle(page)
    assert "channels" not in json.loads(editor.input_value())
    expect(page.locator('input[name^="secret_binding__SLACK"]')).to_have_count(0)
    console.shot("slack removed")
    page.locator("#channels-card").screenshot(path=str(console.artifacts / "card-removed.png"))
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "no horizontal scroll"
