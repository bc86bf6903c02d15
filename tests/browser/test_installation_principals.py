"""The Installation's own service principals in Chromium: an administrator creates one, issues it a
key (shown once, with its copy button; gone after a reload), the key works against the API, and
revoking it (the confirmation, Cancel focused) makes the API refuse it."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.support import Console
from tests.browser.test_console_flow import heading, htmx_idle, nav_link

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOKEN = re.compile(r"occ_sk_[A-Za-z0-9_-]{20,}")


def api_status(console: Console, token: str) -> int:
    return httpx.get(console.occ.url("/namespaces"), headers={"x-api-key": token}, timeout=30).status_code


def test_an_administrator_creates_an_installation_principal_issues_a_key_once_and_revokes_it(console: Console):
    page = console.page
    console.sign_in()
    nav_link(page, "Service principals").click()
    expect(heading(page, "Installation service principals")).to_be_visible()
    expect(page.get_by_role("link", name="installation-administrator")).to_be_visible()  # the bootstrap's
    console.shot("the list")

    page.get_by_label("Name", exact=True).fill("release-bot")
    page.get_by_role("button", name="Create service principal").click()
    expect(heading(page, "release-bot")).to_be_visible()
    expect(page.get_by_text("No keys")).to_be_visible()

    page.get_by_label("Key name").fill("release-ci")
    page.get_by_role("button", name="Issue key").click()
    shown = page.locator("#new-key-value")
    expect(shown).to_have_text(TOKEN)
    expect(page.get_by_role("button", name="Copy key")).to_be_visible()
    token = shown.inner_text().strip()
    console.shot("the key, once")
    assert api_status(console, token) == 200

    page.reload()
    expect(heading(page, "release-bot")).to_be_visible()
    expect(page.locator("#new-key")).to_have_count(0)
    assert token not in page.content()
    row = page.get_by_role("row").filter(has_text="release-ci")
    expect(row).to_be_visible()

    row.get_by_role("button", name="Revoke").click()
    dialog = page.get_by_role("dialog", name="Revoke key release-ci?")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    console.shot("revoke asks first")
    dialog.get_by_role("button", name="Revoke key").click()
    expect(dialog).to_be_hidden()
    htmx_idle(page)
    expect(page.get_by_text("No keys")).to_be_visible()
    assert api_status(console, token) == 401
    console.shot("revoked")
