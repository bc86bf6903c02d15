"""The Agent page's Runtime panel, Logs tab and Stop → Start in Chromium, against OCC as ``make
run`` runs it with the ``fake`` compute driver (its world in a file this test shares: the test
makes the fake gateway print lines, a canary secret among them).

The leak canary: the fake gateway prints the Agent's model key and its bound bot token; the
browser must see ``[redacted]`` where they were and never the values, in any response.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from occ.drivers.compute.fake import FakeCompute
from tests.browser.support import Console, Occ, api_caller
from tests.browser.test_console_flow import assert_no_canary, htmx_idle
from tests.e2e.stack import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MODEL_KEY = "sk-canary-runtime-browser-model-key-3c5a"
BOT_TOKEN = "xoxb-canary-runtime-browser-bot-token-8e1f"
VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}
WORK_SECONDS = 90
FOLLOW_MS = 20_000   # the poller asks every 3 s
RUNTIME_MS = 30_000  # the panel polls every 5 s, the header every 3 s while starting
SIZES = ((1440, 900), (390, 844))


@pytest.fixture(scope="module")
def agent(occ: Occ) -> dict[str, Any]:
    """A deployed Agent with a model key and a bound bot token, made through the API."""
    ns = occ.namespace_id
    with occ.stack.api() as api:
        call = api_caller(api)

        harness = call("POST", f"/namespaces/{ns}/secrets", {"name": "runtime-model-key", "value": MODEL_KEY}, 201)
        token = call("POST", f"/namespaces/{ns}/secrets", {"name": "runtime-bot-token", "value": BOT_TOKEN}, 201)
        configuration = call("POST", f"/namespaces/{ns}/configurations", {
            "kind": "agent", "values": VALUES,
            "secretBindings": {"SLACK_BOT_TOKEN": {"source": {"kind": "secret", "namespaceId": ns,
                                                              "id": token["id"]}}}}, 201)
        created = call("POST", f"/namespaces/{ns}/agents", {
            "name": "watched-agent", "configurationId": configuration["id"],
            "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": harness["id"]}}},
            201)
        path = f"/namespaces/{ns}/agents/{created['id']}"
        call("POST", f"{path}/secret-access", {"secretIds": [harness["id"], token["id"]]})
        call("POST", f"{path}/deploy", expect=202)
        wait_until(lambda: call("GET", path).get("activeRevisionId"), timeout=WORK_SECONDS, interval=1,
                   what="the Agent to be deployed", diagnose=occ.diagnose)
    return {"id": created["id"], "path": path}


def fake_gateway(occ: Occ) -> FakeCompute:
    """The fake driver's world the web and worker processes share (the data directory's file)."""
    return FakeCompute(state_file=occ.stack.data_dir / "fake-compute.json")


def agent_page(console: Console, agent: dict[str, Any]) -> None:
    console.goto(f"/console/namespaces/{console.occ.namespace_id}/agents/{agent['id']}")
    htmx_idle(console.page)  # the Runtime panel loads after the page: its answer is read before the test moves on


def no_horizontal_scroll(console: Console, width: int) -> None:
    assert console.page.evaluate("document.documentElement.scrollWidth") <= width, "no horizontal scroll"


def running_panel(console: Console, agent: dict[str, Any], width: int, height: int) -> Any:
    """The Agent page at ``width`` x ``height``; its Runtime panel (returned) shows the gateway running."""
    console.page.set_viewport_size({"width": width, "height": height})
    agent_page(console, agent)
    runtime = console.page.locator("#agent-runtime")
    expect(runtime.get_by_role("heading", name="Runtime")).to_be_visible()
    expect(runtime.locator("[data-runtime-state]")).to_have_attribute("data-runtime-state", "running")
    expect(runtime).to_contain_text("Serving")
    return runtime


def logs_tab(console: Console) -> Any:
    """Open the Logs tab; its list of log lines."""
    console.page.get_by_role("navigation", name="Agent sections").get_by_role("link", name="Logs").click()
    return console.page.get_by_role("list", name="Log lines")


def test_runtime_panel_and_logs_follow_pause_resume_redacted(console: Console, agent: dict[str, Any]):
    page, occ = console.page, console.occ
    fake = fake_gateway(occ)
    fake.print_log(agent["id"], f"provider key {MODEL_KEY} loaded\nslack: connecting with {BOT_TOKEN}")
    console.sign_in()

    for width, height in SIZES:
        runtime = running_panel(console, agent, width, height)
        expect(runtime).to_contain_text("256.0")
        no_horizontal_scroll(console, width)
        console.shot(f"runtime-{width}")

        lines = logs_tab(console)
        expect(lines).to_contain_text("provider key [redacted] loaded")
        expect(lines).to_contain_text("slack: connecting with [redacted]")
        no_horizontal_scroll(console, width)
        console.shot(f"logs-{width}")

    # Follow: a line the gateway prints now appears without a reload.
    fake.print_log(agent["id"], "follow: first new line")
    expect(lines).to_contain_text("follow: first new line", timeout=FOLLOW_MS)

    # Pause holds new lines; Resume brings them.
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_role("button", name="Resume")).to_have_attribute("aria-pressed", "true")
    htmx_idle(page)
    fake.print_log(agent["id"], f"while paused {MODEL_KEY}")
    page.wait_for_timeout(7_000)  # two poll intervals: nothing may arrive while paused
    expect(lines).not_to_contain_text("while paused")
    console.shot("logs-paused-390")
    page.get_by_role("button", name="Resume").click()
    expect(lines).to_contain_text("while paused [redacted]", timeout=FOLLOW_MS)
    assert lines.locator("li", has_text="follow: first new line").count() == 1, "no line twice"
    console.shot("logs-resumed-390")

    assert_no_canary(console, (MODEL_KEY, BOT_TOKEN))


def test_stop_then_start_brings_the_agent_back_on_its_revision(console: Console, agent: dict[str, Any]):
    page, occ = console.page, console.occ
    with occ.stack.api() as api:
        revision = api.get(agent["path"]).json()["data"]["activeRevisionId"]
    console.sign_in()
    page.set_viewport_size({"width": 1440, "height": 900})
    agent_page(console, agent)
    header = page.locator("#agent-header")
    runtime = page.locator("#agent-runtime")

    page.get_by_role("button", name="Stop", exact=True).click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("heading", name="Stop watched-agent?")).to_be_visible()
    dialog.get_by_role("button", name="Stop Agent").click()
    expect(runtime.locator("[data-runtime-state]")).to_have_attribute("data-runtime-state", "stopped",
                                                                       timeout=RUNTIME_MS)
    expect(header.get_by_role("button", name="Start")).to_be_visible(timeout=RUNTIME_MS)
    expect(header).to_contain_text("Stopped")
    console.shot("stopped-1440")
    page.set_viewport_size({"width": 390, "height": 844})
    no_horizontal_scroll(console, 390)
    console.shot("stopped-390")

    header.get_by_role("button", name="Start").click()
    expect(header.get_by_role("button", name="Stop", exact=True)).to_be_visible(timeout=RUNTIME_MS)
    console.shot("starting-390")
    expect(runtime.locator("[data-runtime-state]")).to_have_attribute("data-runtime-state", "running",
                                                                       timeout=RUNTIME_MS)
    expect(header).to_contain_text("running", timeout=RUNTIME_MS)
    expect(header.locator("#agent-starting")).to_have_count(0, timeout=RUNTIME_MS)
    page.set_viewport_size({"width": 1440, "height": 900})
    console.shot("started-1440")

    with occ.stack.api() as api:
        after = api.get(agent["path"]).json()["data"]
    assert after["activeRevisionId"] == revision, "back on the revision it ran"
    assert after["desiredRuntimeState"] == "running"
    listing = page.goto(occ.url(f"/console/namespaces/{occ.namespace_id}/agents"))
    assert listing is not None
    expect(page.get_by_role("row", name=re.compile("watched-agent"))).to_contain_text("Running")
    assert_no_canary(console, (MODEL_KEY, BOT_TOKEN))
