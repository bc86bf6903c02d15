"""Create Agent refusing a form in a real browser, at 1440 and at 390 px: the refused form comes
back in place (an htmx swap) with each problem on its field and a focused summary leading to
them, the typed key is never sent back, and nothing was created.

The rules themselves are tested without a browser (``tests/console/test_agent_form.py``); this
is what a person sees of them. Each state is saved as a screenshot under the test's artifacts.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.support import Console
from tests.browser.test_console_flow import api_get, assert_no_canary, heading, htmx_idle, secret_list

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BAD_KEY = "canary key-with-a-space-3f1e"  # a space: refused by the form's rule, and never echoed
PROBLEMS = {  # field -> (its error's id, the message)
    "Agent name": ("agent-name-error", "Enter a name for the Agent."),
    "API key": ("model-api-key-error", "The API key must be at most 4,096 printable ASCII characters without spaces."),
    "Model": ("agent-model-error", "Choose an available model or enter a model ID before creating the Agent."),
}


# Whether an element's top left corner is on screen and nothing (the sticky top bar) covers it.
UNCOVERED = """(id) => {
  const box = document.getElementById(id).getBoundingClientRect();
  const found = document.elementFromPoint(box.left + 4, box.top + 4);
  return box.top >= 0 && found !== null && found.closest("#" + id) !== null;
}"""


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)], ids=["1440", "390"])
def test_a_refused_create_agent_marks_each_field_and_leads_with_a_focused_summary(console: Console, width: int,
                                                                                  height: int):
    page, occ = console.page, console.occ
    page.set_viewport_size({"width": width, "height": height})
    console.sign_in()
    secrets_before = secret_list(occ)
    console.goto(f"/console/namespaces/{occ.namespace_id}/agents/new")
    expect(heading(page, "Create Agent")).to_be_visible()
    page.get_by_label("API key", exact=True).fill(BAD_KEY)

    page.locator("#create-agent-form").get_by_role("button", name="Create Agent", exact=True).click()
    summary = page.locator("#error-summary")
    expect(summary).to_be_focused()
    assert page.evaluate(UNCOVERED, "error-summary-title"), "the focused summary's title is out of sight"
    page.screenshot(path=str(console.artifacts / "refused-as-seen.png"))  # the viewport, beside the full page
    expect(summary.get_by_role("link")).to_have_text([message for _, message in PROBLEMS.values()])
    for label, (error_id, message) in PROBLEMS.items():
        field = page.get_by_label(label, exact=True)
        expect(page.locator(f"#{error_id}")).to_have_text(message)
        expect(field).to_have_attribute("aria-invalid", "true")
        expect(field).to_have_attribute("aria-describedby", f"{field.get_attribute('id')}-hint {error_id}")
    expect(page.get_by_label("API key", exact=True)).to_have_value("")
    expect(page.get_by_role("button", name="Create Agent", exact=True)).to_be_enabled()
    console.shot("refused")
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "no horizontal scroll"

    # A summary entry leads to its field.
    summary.get_by_role("link", name=PROBLEMS["Agent name"][1]).click()
    expect(page.get_by_label("Agent name", exact=True)).to_be_focused()

    # Fixing one field and submitting again: that error goes, the others stay.
    page.get_by_label("Agent name", exact=True).fill(f"refused-{width}")
    htmx_idle(page)
    page.locator("#create-agent-form").get_by_role("button", name="Create Agent", exact=True).click()
    expect(summary.get_by_role("link")).to_have_count(2)
    expect(page.locator("#agent-name-error")).to_have_count(0)
    expect(page.get_by_label("Agent name", exact=True)).to_have_value(f"refused-{width}")
    console.shot("one fixed")

    assert secret_list(occ) == secrets_before
    assert not [a for a in (api_get(occ, f"/namespaces/{occ.namespace_id}/agents") or {}).get("agents", [])
                if a["name"] == f"refused-{width}"]
    assert_no_canary(console, (BAD_KEY,))
