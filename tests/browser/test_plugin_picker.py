"""The plugin picker in Chromium: Create Agent with the codex PluginDriver against the fake
Codex catalog (tests/browser/fake_world.py): a typed token loads page one, paging, a search
whose stale answer never shows, details with tools on demand, policy controls generated from
the capabilities writing the selections JSON (approval, the default reviewer and the per-tool
way to it, the driver policy, the controls disabled while the plugin is), Default plugin
approvers, the Configured view naming a plugin seen on another page, and a credential change
that clears discovery but keeps the selections, an answer to a request sent before it never
shown. The token never comes back in anything the browser receives. Screenshots at 1440 x 900
and 390 x 844."""

from __future__ import annotations

import json

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Console
from tests.browser.test_console_flow import assert_no_canary, htmx_idle
from tests.fakes.fake_codex import TOKEN

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LINEAR = "codex-plugin:linear@openai-curated-remote"


@pytest.fixture(scope="module")
def occ_extra_env() -> dict[str, str]:
    return {"OCC_PLUGIN_DRIVER": "codex"}


def selections(page: Page) -> dict:
    return json.loads(page.locator("#plugin-selections").input_value() or "{}")


def fake_control(console: Console, **change: object) -> None:
    response = httpx.post(f"{console.occ.fakes.codex_origin}/_control", json=change, timeout=5)
    assert response.status_code == 200


def test_a_person_browses_picks_and_sets_policies(console: Console):
    page = console.page
    console.sign_in()
    console.goto(f"/console/namespaces/{console.occ.namespace_id}/agents/new")
    picker = page.locator("#plugin-picker")
    results = page.locator("#plugin-results")
    expect(results).to_contain_text("Enter a service account token")

    page.get_by_label("Service account token for browsing plugins").fill(TOKEN)
    page.get_by_label("Service account token for browsing plugins").press("Tab")  # a real change
    expect(results).to_contain_text("Page 1 · 20 plugins")
    console.shot("page one")
    page.get_by_role("button", name="Next page").click()
    expect(results).to_contain_text("Page 2 · 20 plugins")
    page.get_by_role("button", name="Previous page").click()
    expect(results).to_contain_text("Page 1 · 20 plugins")

    # A slow search is overtaken by the next one: the stale answer is dropped, never shown.
    fake_control(console, latency=1.5)
    search = page.get_by_label("Search plugins")
    search.fill("github")
    search.press("Enter")
    page.wait_for_timeout(300)
    fake_control(console, latency=0)
    search.fill("linear")
    search.press("Enter")  # never submits the Create Agent form
    expect(results.locator(".plugin-row")).to_have_count(1)
    expect(results).to_contain_text("Linear")
    page.wait_for_timeout(2000)  # past the slow answer's arrival
    expect(results.locator(".plugin-row")).to_have_count(1)
    expect(results).not_to_contain_text("GitHub")
    assert "/agents/new/submit" not in " ".join(r.url for r in console.received)

    results.get_by_role("button", name="Linear").click()
    detail = page.locator("#plugin-detail")
    expect(detail).to_contain_text("Tools (3)")  # loaded on demand for a hosted entry
    detail.get_by_role("button", name="Add Linear").click()
    expect(detail.get_by_text("Plugin policies")).to_be_visible()
    assert selections(page) == {LINEAR: {"enabled": True}}
    detail.locator("fieldset.plugin-policies").first.get_by_label("Require approval for").select_option("write_actions")
    assert selections(page)[LINEAR]["toolDefaults"] == {"approval": "write_actions"}
    detail.get_by_label("Destructive tools").select_option("false")
    assert selections(page)[LINEAR]["driverPolicy"] == {"destructiveEnabled": False}
    expect(detail).to_contain_text("Tools (3)")
    tool = detail.locator("fieldset.plugin-tool", has_text="Create issue")
    tool.get_by_label("Require approval for").select_option("all_actions")
    assert selections(page)[LINEAR]["tools"] == {"asdk_app_linear/create_issue": {"approval": "all_actions"}}
    tool.get_by_label("Require approval for").select_option("")  # back to inherit: the override goes
    assert "tools" not in selections(page)[LINEAR]
    expect(results.locator("[data-plugin-badge]")).to_have_text("Enabled")

    # Reviewers: one for all of the plugin's tools (codex has none per tool); each tool leads there.
    reviewer = detail.get_by_label("Default reviewer")
    reviewer.select_option("auto")
    assert selections(page)[LINEAR]["toolDefaults"] == {"approval": "write_actions", "reviewer": "auto"}
    tool.get_by_role("button", name="Set reviewer for all tools").click()
    expect(reviewer).to_be_focused()
    page.get_by_label("Default plugin approvers").fill("U456, W789")
    htmx_idle(page)
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        console.shot(f"linear configured {width}")
    page.set_viewport_size({"width": 1280, "height": 900})

    # Disabled: the policies stay on screen, kept in the JSON, but cannot be changed.
    detail.get_by_label("Enable plugin").uncheck()
    expect(detail.locator("fieldset.plugin-policies").first.get_by_label("Require approval for")).to_be_disabled()
    expect(detail.locator("fieldset.plugin-tool").first.get_by_label("Require approval for")).to_be_disabled()
    assert selections(page)[LINEAR]["enabled"] is False
    assert selections(page)[LINEAR]["toolDefaults"]["reviewer"] == "auto"
    detail.get_by_label("Enable plugin").check()
    expect(detail.locator("fieldset.plugin-policies").first.get_by_label("Require approval for")).to_be_enabled()

    # The Configured view names what was seen on another page (a search for it here).
    search.fill("github")
    search.press("Enter")
    expect(results.locator(".plugin-row")).to_have_count(1)
    search.fill("")
    search.press("Enter")
    expect(results).to_contain_text("Page 1 · 20 plugins")
    page.get_by_role("tab", name="Configured").click()
    expect(results).to_contain_text("1 configured plugin(s)")
    expect(results.locator(".plugin-row .plugin-name")).to_have_text("Linear")
    expect(results.locator(".plugin-row-id")).to_have_text(LINEAR)
    page.get_by_role("tab", name="Available").click()
    expect(results).to_contain_text("Page 1")

    # A new credential: discovery starts over, the selections stay; a slow answer to a request
    # sent with the old one arrives after the change and is dropped.
    fake_control(console, latency=1.5)
    search.fill("github")
    search.press("Enter")
    page.wait_for_timeout(300)
    token = page.get_by_label("Service account token for browsing plugins")
    token.fill("at-someone-elses-token-123456")
    token.press("Tab")
    expect(results).to_contain_text("token was rejected", timeout=10_000)
    page.wait_for_timeout(2500)  # past the old answer's arrival
    fake_control(console, latency=0)
    expect(results).to_contain_text("token was rejected")
    expect(results.locator(".plugin-row")).to_have_count(0)
    expect(detail).to_contain_text("Choose a plugin")
    assert LINEAR in selections(page)
    htmx_idle(page)
    expect(picker).to_contain_text("1 plugin(s) configured")
    assert_no_canary(console, (TOKEN,))
