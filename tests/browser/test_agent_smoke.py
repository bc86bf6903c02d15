"""The Agent page's smoke conversations in Chromium (Configuration tab): a pattern that does not
compile is refused next to its field with a focused summary, a valid pair is saved through htmx
(the toast says so and the API shows it). Screenshots at 1440x900 and 390x844, no horizontal
scroll on the phone."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.support import Console, Occ, api_caller
from tests.browser.test_configuration_editor import VALUES, shots

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def agent(occ: Occ) -> dict[str, Any]:
    ns = occ.namespace_id
    with occ.stack.api() as api:
        call = api_caller(api)
        harness = call("POST", f"/namespaces/{ns}/secrets", {"name": "smoke-model-key", "value": "sk-smoke"}, 201)
        configuration = call("POST", f"/namespaces/{ns}/configurations", {"kind": "agent", "values": VALUES}, 201)
        created = call("POST", f"/namespaces/{ns}/agents", {
            "name": "smoked-agent", "configurationId": configuration["id"],
            "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": harness["id"]}}},
            201)
    return created


def test_smoke_conversations_are_refused_then_saved(console: Console, occ: Occ, agent: dict[str, Any]) -> None:
    page = console.page
    console.sign_in()
    console.goto(f"/console/namespaces/{occ.namespace_id}/agents/{agent['id']}?tab=configuration")
    section = page.locator("#agent-smoke")
    expect(section.get_by_role("heading", name="Smoke conversations")).to_be_visible()
    shots(console, "smoke empty")

    page.get_by_label("Prompt 1", exact=True).fill("What is the capital of France?")
    page.get_by_label("Expected pattern 1", exact=True).fill("(?i)paris(")
    section.get_by_role("button", name="Save smoke conversations").click()
    expect(page.locator("#smoke-expect-1-error")).to_contain_text("not a valid regular expression")
    expect(page.locator("#error-summary")).to_be_focused()
    shots(console, "smoke refused")

    page.get_by_label("Expected pattern 1", exact=True).fill(r"(?i)\bparis\b")
    section.get_by_role("button", name="Save smoke conversations").click()
    expect(section).to_contain_text("1 saved.")
    expect(page.get_by_text("1 smoke conversation saved.")).to_be_visible()
    shots(console, "smoke saved")

    with occ.stack.api() as api:
        saved = api_caller(api)("GET", f"/namespaces/{occ.namespace_id}/agents/{agent['id']}")
    assert saved["smokeConversations"] == [{"prompt": "What is the capital of France?", "expect": r"(?i)\bparis\b"}]
