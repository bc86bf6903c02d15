"""The console works under its Content-Security-Policy, and Chromium reports no violation.

Every page carries the policy (no inline script or style, no eval); htmx still swaps (the
Namespaces form posts and its new row polls itself until the worker makes it ready), the Create
Agent page's script runs, and neither the browser's console log nor a ``securitypolicyviolation``
listener saw anything refused. Screenshots at 1440 and 390 px wide.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.support import Console

pytestmark = pytest.mark.browser

# Installed before any page script (Playwright's init scripts are not subject to the page's CSP).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
"""


def violations(page: Any) -> list[str]:
    return page.evaluate("window.__cspViolations || []")


def test_the_console_works_under_its_csp_without_a_violation(console: Console):
    page = console.page
    logged: list[str] = []
    page.on("console", lambda message: logged.append(f"{message.type}: {message.text}"))
    page.add_init_script(RECORD_VIOLATIONS)

    console.sign_in()
    agents_path = f"/console/namespaces/{console.occ.namespace_id}/agents"
    response = console.goto(agents_path)
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy
    assert "no-store" in response.headers["cache-control"]
    expect(page.get_by_role("heading", name="Agents", level=1)).to_be_visible()
    seen = violations(page)

    # htmx under the policy: a POST swapped into the page, then a row that polls itself.
    console.goto("/console/namespaces")
    page.get_by_label("Namespace name").fill("csp-check")
    page.get_by_role("button", name="Create Namespace").click()
    row = page.locator("tr", has_text="csp-check")
    expect(row).to_be_visible()
    expect(row.get_by_role("link", name="csp-check")).to_be_visible(timeout=120_000)  # ready: polled
    seen += violations(page)

    console.goto(f"/console/namespaces/{console.occ.namespace_id}/agents/new")
    expect(page.get_by_role("heading", name="Create Agent", level=1)).to_be_visible()
    seen += violations(page)
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        console.shot(f"create agent under csp {width}")
    console.goto(agents_path)
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        console.shot(f"agents under csp {width}")
    seen += violations(page)

    refused = [line for line in logged if re.search(r"Content Security Policy|Refused to", line)]
    assert refused == [], refused
    assert seen == [], seen
