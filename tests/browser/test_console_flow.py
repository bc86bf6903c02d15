"""The console in a real browser: a new user creates, deploys, stops and deletes a Slack Agent, at 1440 and at 390 px.

Playwright drives Debian's Chromium against OCC running as ``make run`` runs it (web, Celery
worker and beat; the ``fake`` compute driver) with loopback fakes of Slack and the model
providers (``tests/browser/fake_world.py``). Controls are found by their accessible names
(the console's UI contract); each step is saved as a screenshot under the test's artifacts
folder. Every text response the browser received is kept, and none may contain a secret
value typed during the test (the canaries).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.fake_world import APP_TOKEN, BOT_TOKEN, CANARIES, MODEL_KEY
from tests.browser.support import Console, Occ
from tests.e2e.stack import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SECRET_NAME = "browser-notes"
SECRET_VALUE = "canary-browser-secret-value-6d2f"
AGENT_NAME = "browser-agent"
MODEL_ID = "gpt-6-astra"          # the first chat model the fake OpenAI lists
DISCOVERED_ONLY = "gpt-no-date"   # listed by the fake, not in the console's starter list
STARTER_ONLY = "gpt-6-sol"        # in the starter list, not listed by the fake
CHANNEL = ("C0BRGENERAL", "general")
PERSON = "alice"
PROVISIONING_MS = 60_000
DEPLOYMENT_MS = 90_000            # the panel polls every 5 s
DELETE_MS = 90_000
PROGRESS_TEXTS = ("Provisioning queued…", "Provisioning Agent…", "Provisioning finished. Opening Agent details…")
# (Playwright hands the pattern to JavaScript: no named groups.)
AGENT_URL = re.compile(r"/console/namespaces/([^/]+)/agents/((?!new$)[^/?#]+)$")

# Every text of #provisioning-progress, reported to Python as it changes (the region may be
# swapped whole by htmx, so the observer watches the body and reads the region's current text).
WATCH_PROGRESS = """() => {
  let last = null;
  const report = () => {
    const region = document.getElementById("provisioning-progress");
    const text = region ? region.textContent.replace(/\\s+/g, " ").trim() : null;
    if (text && text !== last) { last = text; window.occProgress(text); }
  };
  new MutationObserver(report).observe(document.body, {subtree: true, childList: true, characterData: true});
  report();
}"""


def heading(page: Page, name: str, *, level: int | None = None) -> Any:
    return page.get_by_role("heading", name=name, exact=True, level=level)


def nav_link(page: Page, name: str) -> Any:
    """A link of the console's navigation; below 60rem it is behind the Menu button, opened first."""
    menu = page.get_by_role("button", name="Menu")
    if menu.is_visible() and menu.get_attribute("aria-expanded") == "false":
        menu.click()
    return page.get_by_role("navigation", name="Console").get_by_role("link", name=name, exact=True)


def htmx_idle(page: Page) -> None:
    """Wait until no htmx request is in flight (htmx marks its requesting elements)."""
    page.wait_for_function("() => window.htmx && !document.querySelector('.htmx-request')")


def api_get(occ: Occ, path: str) -> dict[str, Any] | None:
    """The JSON API's ``data`` (the bootstrap key), or None for 404."""
    with occ.stack.api() as api:
        response = api.get(path)
    if response.status_code == 404:
        return None
    assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text[:500]}"
    return response.json()["data"]


def secret_list(occ: Occ) -> list[dict[str, Any]]:
    """The first page of the Namespace's Secrets (a test's few)."""
    return (api_get(occ, f"/namespaces/{occ.namespace_id}/secrets") or {}).get("secrets", [])


def active_revision(occ: Occ, agent_path: str) -> str | None:
    return (api_get(occ, agent_path) or {}).get("activeRevisionId")


def assert_no_canary(console: Console, canaries: tuple[str, ...]) -> None:
    """No canary in any text response (HTML pages and fragments, JSON, scripts) the browser received."""
    console.write_received()
    assert console.html(), "the browser received no HTML at all"
    assert not console.unreadable, f"responses whose body could not be checked: {console.unreadable}"
    leaked = console.leaked(canaries)
    assert not leaked, f"a secret value came back to the browser: {leaked}"


# --- a first, small path ---------------------------------------------------------------------------


def test_the_administrator_signs_in_sees_the_agents_of_the_default_namespace_and_signs_out(console: Console):
    page = console.page
    console.goto("/console/")
    expect(page).to_have_url(re.compile(r"/console/sign-in"))
    expect(heading(page, "Sign in")).to_be_visible()
    console.shot("sign in")

    console.sign_in()
    expect(page).to_have_url(re.compile(rf"/console/namespaces/{console.occ.namespace_id}/agents$"))
    expect(heading(page, "Agents")).to_be_visible()
    expect(page.get_by_role("link", name="Create Agent").first).to_be_visible()
    expect(page.get_by_label("Search Agents")).to_be_visible()
    console.shot("agents of the default namespace")

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/console/sign-in"))
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    console.shot("signed out")
    console.goto(f"/console/namespaces/{console.occ.namespace_id}/agents")
    expect(page).to_have_url(re.compile(r"/console/sign-in"))  # the session is gone
    assert_no_canary(console, (console.occ.stack.admin_password,))


# --- the whole flow of issue 5 ---------------------------------------------------------------------


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)], ids=["1440", "390"])
def test_a_new_user_creates_deploys_stops_and_deletes_a_slack_agent(console: Console, width: int, height: int):
    """The same path on a desktop and on a phone-sized screen (one OCC: each width its own names)."""
    page, occ = console.page, console.occ
    page.set_viewport_size({"width": width, "height": height})
    agent_name, secret_name = f"{AGENT_NAME}-{width}", f"{SECRET_NAME}-{width}"
    console.sign_in()
    expect(heading(page, "Agents")).to_be_visible()
    secrets_before = {s["name"] for s in secret_list(occ)}

    create_a_secret(console, secret_name)
    open_create_agent(console)
    choose_a_discovered_model(console, agent_name)
    configure_slack(console)
    agent_path = create_and_watch_provisioning(console)
    assert_recorded(occ, agent_path, agent_name, secrets_before)

    # The first deployment becomes active.
    expect(heading(page, agent_name, level=1)).to_be_visible()
    activity = page.locator("#deployment-activity")
    expect(activity.get_by_role("heading", name="Deployment activity")).to_be_visible()
    expect(activity).to_contain_text("Status: Succeeded", timeout=DEPLOYMENT_MS)
    expect(page.get_by_text("Desired state: running")).to_be_visible()
    for tab in ("Overview", "Configuration", "Credentials", "Revisions"):
        expect(page.get_by_role("link", name=tab, exact=True)).to_be_visible()
    console.shot("agent active")
    first_revision = wait_until(lambda: active_revision(occ, agent_path), timeout=30,
                                what="the first revision to be active", diagnose=occ.diagnose)

    # Deploy new version: a second revision becomes active, and the panel follows it.
    page.get_by_role("button", name="Deploy new version").click()
    console.shot("new version deploying")
    second_revision = wait_until(
        lambda: (revision := active_revision(occ, agent_path)) not in (None, first_revision) and revision,
        timeout=DEPLOYMENT_MS / 1000, interval=1, what="a second revision to be active", diagnose=occ.diagnose)
    # Names before ids: the activity shows the revision's short id, with the full id on its copy button.
    expect(activity.locator(f'[data-copy="{second_revision}"]').first).to_be_attached(timeout=DEPLOYMENT_MS)
    expect(activity).to_contain_text("Status: Succeeded", timeout=DEPLOYMENT_MS)
    console.shot("new version active")

    assert page.evaluate("document.documentElement.scrollWidth") <= width, "no horizontal scroll"

    stop_and_delete(console, agent_path, agent_name)
    assert len(console.html()) >= 10, f"too few HTML responses recorded: {len(console.html())}"
    # Nothing the page asked for failed, the polls of the Agent's panels after Delete included
    # (its Runtime panel once re-read a deleted Agent and got a 404).
    assert not [f"{r.status} {r.url}" for r in console.received if r.status >= 400]
    assert_no_canary(console, (*CANARIES, SECRET_VALUE))


def create_and_watch_provisioning(console: Console) -> str:
    """Create: progress is announced, then the browser lands on the Agent's page (its API path)."""
    page, ns = console.page, console.occ.namespace_id
    progress: list[str] = []
    page.expose_function("occProgress", lambda text: progress.append(text))
    page.evaluate(WATCH_PROGRESS)
    page.locator("#create-agent-form").get_by_role("button", name="Create Agent", exact=True).click()
    status = page.locator("#provisioning-progress")
    expect(status).to_have_attribute("role", "status")
    expect(status).to_contain_text("Provisioning", timeout=PROVISIONING_MS)
    console.shot("provisioning progress")
    expect(page).to_have_url(AGENT_URL, timeout=PROVISIONING_MS)
    (console.artifacts / "progress.txt").write_text("\n".join(progress) + "\n")
    seen = [text for text in progress if text.startswith(PROGRESS_TEXTS)]
    assert seen, f"no provisioning progress was shown: {progress}"
    order = [next(i for i, p in enumerate(PROGRESS_TEXTS) if text.startswith(p)) for text in seen]
    assert order == sorted(order), f"provisioning progress went backwards: {seen}"
    match = AGENT_URL.search(page.url)
    assert match is not None
    assert match[1] == ns
    return f"/namespaces/{ns}/agents/{match[2]}"


def assert_recorded(occ: Occ, agent_path: str, agent_name: str, secrets_before: set[str]) -> None:
    """The Agent as OCC recorded it: its model, its Slack channel, and three new Secrets (the
    model key saved at creation, the bot and app tokens saved from the modal) beside ours."""
    agent = api_get(occ, agent_path)
    assert agent is not None
    assert agent["name"] == agent_name
    assert agent["harnessAuth"]["method"] == "api_key"
    configuration = api_get(occ, f"/namespaces/{occ.namespace_id}/configurations/{agent['configurationId']}")
    assert configuration is not None
    assert MODEL_ID in json.dumps(configuration["values"])
    assert CHANNEL[0] in json.dumps(configuration["values"]["channels"]["slack"])
    assert len(configuration.get("secretBindings") or {}) >= 2, "the bot and app tokens are bound to the Agent"
    secrets = secret_list(occ)
    new = {s["name"] for s in secrets} - secrets_before
    assert len(new) == 4, sorted(new)


def stop_and_delete(console: Console, agent_path: str, agent_name: str) -> None:
    """Stop (confirmed), then Delete (confirmed): back on the Agents list, without it."""
    page, occ = console.page, console.occ
    page.get_by_role("button", name="Stop", exact=True).click()
    confirm = page.get_by_role("button", name="Stop Agent")
    expect(confirm).to_be_visible()
    console.shot("stop confirmation")
    confirm.click()
    expect(page.get_by_text("Desired state: stopped")).to_be_visible(timeout=DEPLOYMENT_MS)
    assert (api_get(occ, agent_path) or {}).get("desiredRuntimeState") == "stopped"
    console.shot("agent stopped")

    page.get_by_role("button", name="Delete", exact=True).click()
    confirm = page.get_by_role("button", name="Permanently delete Agent")
    expect(confirm).to_be_visible()
    console.shot("delete confirmation")
    htmx_idle(page)  # the Agent page's panels have answered (and been read) before the page moves on
    confirm.click()
    expect(page).to_have_url(re.compile(rf"/console/namespaces/{occ.namespace_id}/agents$"), timeout=DELETE_MS)
    expect(heading(page, "Agents")).to_be_visible()
    expect(page.locator("#agents-table").get_by_role("link", name=agent_name, exact=True)).to_have_count(0)
    console.shot("agent deleted")
    wait_until(lambda: api_get(occ, agent_path) is None, timeout=DELETE_MS / 1000,
               what="the Agent to be gone", diagnose=occ.diagnose)


def create_a_secret(console: Console, secret_name: str) -> None:
    page = console.page
    nav_link(page, "Secrets").click()
    expect(heading(page, "Secrets")).to_be_visible()
    page.get_by_label("Secret name", exact=True).fill(secret_name)
    page.get_by_label("Secret value", exact=True).fill(SECRET_VALUE)
    console.shot("secret form")
    page.get_by_role("button", name="Create Secret").click()
    row = page.locator("#secrets-table").get_by_role("row").filter(has_text=secret_name)
    expect(row).to_have_count(1)
    expect(row.get_by_role("button", name="Replace value")).to_be_visible()
    expect(row.get_by_role("button", name="Delete")).to_be_visible()
    expect(page.locator("#secret-value")).to_have_value("")
    console.shot("secret created")
    secrets = secret_list(console.occ)
    assert [s["name"] for s in secrets].count(secret_name) == 1


def open_create_agent(console: Console) -> None:
    page = console.page
    nav_link(page, "Agents").click()
    expect(heading(page, "Agents")).to_be_visible()
    page.get_by_role("link", name="Create Agent").first.click()
    expect(page).to_have_url(re.compile(r"/agents/start$"))  # the preset chooser
    expect(page.get_by_role("link", name="Start with Standard OpenClaw")).to_be_visible()
    console.shot("create agent: choose how to start")
    page.get_by_role("link", name="Start without a preset").click()
    expect(page).to_have_url(re.compile(r"/agents/new$"))
    expect(heading(page, "Create Agent")).to_be_visible()
    console.shot("create agent")


def choose_a_discovered_model(console: Console, agent_name: str) -> None:
    page = console.page
    page.get_by_label("Agent name").fill(agent_name)
    provider = page.get_by_label("Provider", exact=True)
    expect(provider).to_have_value("openai")  # the default
    provider.select_option("openai")
    page.get_by_label("Enter an API key").check()
    htmx_idle(page)  # a provider change re-renders the credential fields (and clears them)
    page.get_by_label("API key", exact=True).fill(MODEL_KEY)
    page.get_by_role("button", name="Discover models").click()
    htmx_idle(page)
    model = page.get_by_label("Model", exact=True)
    # The fake's list replaces the starter list: a model only the fake has, none only the starter has.
    expect(model.locator(f"option[value='{DISCOVERED_ONLY}']")).to_have_count(1)
    expect(model.locator(f"option[value='{STARTER_ONLY}']")).to_have_count(0)
    expect(model.locator("option[value='whisper-1']")).to_have_count(0)  # not a chat model
    expect(page.get_by_role("button", name="Discover models")).to_be_enabled()
    model.select_option(MODEL_ID)
    expect(model).to_have_value(MODEL_ID)
    console.shot("models discovered")


def configure_slack(console: Console) -> None:
    page = console.page
    card = page.locator("#channels-card")
    opener = card.get_by_role("button", name="Configure Slack")
    modal = page.get_by_role("dialog", name="Slack setup")

    # Keyboard: the modal takes focus; Escape closes it and gives focus back to its opener.
    opener.click()
    expect(modal).to_be_visible()
    page.wait_for_function("() => document.getElementById('slack-modal')?.contains(document.activeElement)")
    console.shot("slack modal focused")
    page.keyboard.press("Escape")
    expect(modal).to_be_hidden()
    expect(opener).to_be_focused()

    opener.click()
    expect(modal).to_be_visible()
    modal.get_by_label("Slack bot token").fill(BOT_TOKEN)
    modal.get_by_role("button", name="Save bot token").click()
    expect(modal.get_by_text(re.compile(r"Bot token saved as Secret"))).to_be_visible()
    expect(modal.get_by_label("Slack bot token")).to_have_value("")
    modal.get_by_label("Slack app token").fill(APP_TOKEN)
    modal.get_by_role("button", name="Save app token").click()
    expect(modal.get_by_text(re.compile(r"App token saved as Secret"))).to_be_visible()
    expect(modal.get_by_label("Slack app token")).to_have_value("")

    modal.get_by_label("Search channels").fill(CHANNEL[1][:3])
    modal.get_by_role("button", name=f"Add #{CHANNEL[1]}").click()
    expect(modal.get_by_role("button", name=f"Remove #{CHANNEL[1]}")).to_be_visible()
    modal.get_by_label("Who can use the agent in these channels?").select_option("selected")
    modal.get_by_label("Search people").fill(PERSON[:3])
    modal.get_by_role("button", name=f"Add @{PERSON}").click()
    expect(modal.get_by_label("Require a mention")).to_be_checked()
    modal.get_by_label("Direct-message policy").select_option("disabled")
    console.shot("slack configured")
    modal.get_by_role("button", name="Apply channel settings").click()
    expect(modal).to_be_hidden()
    expect(card).to_contain_text("Slack: configured")
    expect(card).to_contain_text(CHANNEL[1])
    console.shot("slack applied")
