"""Busy words ("Starting…") in a real browser with the console's built CSS (issue 27, item 8):
they show on the control whose own request is in flight, never on a button inside a panel that
is polling (the Agent header re-reads itself every 3 s while a gateway stops)."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.assets import OUTPUT

pytestmark = [pytest.mark.browser]

PAGE = """<div id="agent-header" class="{header}">
  <form id="start" class="{form}"><button type="submit" id="agent-start">
    <span class="when-idle">Start</span><span class="when-busy">Starting…</span></button></form>
</div>"""


@pytest.mark.parametrize(("header", "form", "shown"), [
    pytest.param("", "", "Start", id="idle"),
    pytest.param("htmx-request", "", "Start", id="the-header-polls"),
    pytest.param("", "htmx-request", "Starting…", id="the-start-form-posts"),
])
def test_busy_words_belong_to_the_request_of_their_own_control(browser: Any, header: str, form: str, shown: str):
    page = browser.new_page()
    try:
        page.set_content(PAGE.format(header=header, form=form))
        page.add_style_tag(path=str(OUTPUT / "console.css"))
        assert page.locator("#agent-start").inner_text() == shown
    finally:
        page.close()
