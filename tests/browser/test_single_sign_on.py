"""Single sign-on in Chromium (issue 26): OCC as ``make run`` starts it, configured for a real
OpenID Connect provider process on loopback (tests/fakes/oidc_provider.py). An administrator
links a colleague's subject on the Members page; the colleague clicks "Sign in with Example ID"
on the sign-in page (looked at 1440 and 390 px wide), goes through the provider and back, lands
in the console, and signs out; a stranger's subject is refused with the message."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.support import Console, api_caller
from tests.browser.test_console_flow import heading
from tests.fakes.oidc_provider import OidcProvider

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROVIDER = "Example ID"
SIZES = ((1440, 900), (390, 844))


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(client_id="occ-browser", client_secret="browser-test-client-secret-5e1d") as running:
        yield running


@pytest.fixture(scope="module")
def occ_extra_env(provider: OidcProvider) -> dict[str, str]:
    return provider.settings(PROVIDER)


def no_horizontal_scroll(console: Console, width: int) -> None:
    assert console.page.evaluate("document.documentElement.scrollWidth") <= width, "no horizontal scroll"


def test_a_linked_colleague_signs_in_with_the_provider_and_out_again(console: Console, provider: OidcProvider):
    page, occ = console.page, console.occ
    with occ.stack.api() as api:
        person = api_caller(api)("POST", "/api/auth/accounts", {
            "username": "wendy", "name": "Wendy Li", "password": "wendy-never-uses-this-1"}, 201)
    principal_id = person["principalId"]

    console.sign_in()
    console.goto(f"/console/members/people/{principal_id}")
    card = page.locator("#member-sso")
    expect(card.get_by_role("heading", name=f"Single sign-on with {PROVIDER}")).to_be_visible()
    card.get_by_label("Subject at the provider").fill("wendy-subject")
    card.get_by_role("button", name="Save single sign-on").click()
    expect(page.locator("#member-sso")).to_contain_text("as subject wendy-subject")
    console.shot("member single sign-on card")
    page.get_by_role("button", name="Sign out", include_hidden=True).first.click()
    expect(page).to_have_url(re.compile(r"/console/sign-in"))

    provider.sign_in_as(sub="wendy-subject", email="wendy@example.test", email_verified=True)
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        console.goto("/console/sign-in")
        expect(page.get_by_role("link", name=f"Sign in with {PROVIDER}")).to_be_visible()
        no_horizontal_scroll(console, width)
        console.shot(f"sign-in-{width}")
    page.set_viewport_size({"width": 1440, "height": 900})

    page.get_by_role("link", name=f"Sign in with {PROVIDER}").click()
    expect(page).not_to_have_url(re.compile(r"/console/sign-in"))
    # The shell names who is signed in.
    expect(page.get_by_role("link", name="wendy", include_hidden=True).first).to_be_attached()
    expect(heading(page, re.compile("Agents|Namespaces"))).to_be_visible()
    console.shot("signed in through the provider")
    assert [e["outcome"] for e in provider.events() if e["endpoint"] == "token"][-1] == "issued"

    page.get_by_role("button", name="Sign out", include_hidden=True).first.click()
    expect(page).to_have_url(re.compile(r"/console/sign-in"))
    console.goto("/console/namespaces")
    expect(page).to_have_url(re.compile(r"/console/sign-in"))  # the session ended

    provider.sign_in_as(sub="a-stranger", email="stranger@example.test", email_verified=True)
    page.get_by_role("link", name=f"Sign in with {PROVIDER}").click()
    refusal = page.locator("#sign-in-refused")
    expect(refusal).to_contain_text(f"Your {PROVIDER} account is not linked to an OCC account")
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        no_horizontal_scroll(console, width)
        console.shot(f"refused-{width}")
