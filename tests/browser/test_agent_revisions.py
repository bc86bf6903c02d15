"""The Agent page's Revisions tab in Chromium, against OCC as ``make run`` runs it with the
``fake`` compute driver and a real Celery worker: two revisions deployed through the API (the
second with another model and another bound Secret), the diff of v2 against v1, then Redeploy
v1 from its confirm dialog (Cancel has the focus) and v3, a copy of v1, becomes the active one
in the deployment activity panel and the list. No Secret value in any response.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.support import Console, Occ, api_caller
from tests.browser.test_console_flow import assert_no_canary, htmx_idle
from tests.e2e.stack import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MODEL_KEY = "sk-canary-revisions-browser-model-2b7d"
FIRST_TOKEN = "xoxb-canary-revisions-browser-first-5c1e"
SECOND_TOKEN = "xoxb-canary-revisions-browser-second-9a4f"
CANARIES = (MODEL_KEY, FIRST_TOKEN, SECOND_TOKEN)
WORK_SECONDS = 90
DEPLOY_MS = 60_000  # the panel polls every 5 s while a deployment is pending


def values(model: str) -> dict[str, Any]:
    return {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": model}}}}


@pytest.fixture(scope="module")
def agent(occ: Occ) -> dict[str, Any]:
    """An Agent deployed twice through the API: v1 (gpt-5, first token), v2 (gpt-5-mini, second)."""
    ns = occ.namespace_id
    with occ.stack.api() as api:
        call = api_caller(api)

        def binding(secret: dict[str, Any]) -> dict[str, Any]:
            return {"SLACK_BOT_TOKEN": {"source": {"kind": "secret", "namespaceId": ns, "id": secret["id"]}}}

        harness = call("POST", f"/namespaces/{ns}/secrets", {"name": "rev-model-key", "value": MODEL_KEY}, 201)
        first = call("POST", f"/namespaces/{ns}/secrets", {"name": "first-bot-token", "value": FIRST_TOKEN}, 201)
        second = call("POST", f"/namespaces/{ns}/secrets", {"name": "second-bot-token", "value": SECOND_TOKEN}, 201)
        configuration = call("POST", f"/namespaces/{ns}/configurations", {
            "kind": "agent", "values": values("openai/gpt-5"), "secretBindings": binding(first)}, 201)
        created = call("POST", f"/namespaces/{ns}/agents", {
            "name": "rollback-agent", "configurationId": configuration["id"],
            "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": harness["id"]}}},
            201)
        path = f"/namespaces/{ns}/agents/{created['id']}"
        call("POST", f"{path}/secret-access", {"secretIds": [harness["id"], first["id"], second["id"]]})
        revisions = []
        for number, (model, token) in enumerate((("openai/gpt-5", first), ("openai/gpt-5-mini", second)), 1):
            if number == 2:
                call("PATCH", f"/namespaces/{ns}/configurations/{configuration['id']}",
                     {"values": values(model), "secretBindings": binding(token)})
            revision = call("POST", f"{path}/deploy", expect=202)
            revisions.append(revision["id"])
            wait_until(lambda rid=revision["id"]: call("GET", path).get("activeRevisionId") == rid,
                       timeout=WORK_SECONDS, interval=1, what=f"v{number} to become active", diagnose=occ.diagnose)
    return {"id": created["id"], "path": path, "revisions": revisions, "second_token": second["id"]}


def no_horizontal_scroll(console: Console, width: int) -> None:
    assert console.page.evaluate("document.documentElement.scrollWidth") <= width, "no horizontal scroll"


def test_diff_then_redeploy_the_first_revision(console: Console, agent: dict[str, Any]):
    page, occ = console.page, console.occ
    v1, v2 = agent["revisions"]
    console.sign_in()
    base = f"/console/namespaces/{occ.namespace_id}/agents/{agent['id']}"

    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        console.goto(f"{base}?tab=revisions")
        htmx_idle(page)  # the Runtime panel loads after the page: its answer is read before the next page
        if width == 1440:  # issue 27, item 9: the tabs open above the fold of a deployed Agent's page
            tabs = page.locator("#agent-tabs nav.tabs").bounding_box()
            assert tabs is not None
            assert tabs["y"] + tabs["height"] <= height, f"the tabs end at {tabs['y'] + tabs['height']} px"
        table = page.locator("#agent-revisions-table")
        versions = table.locator("tbody tr")  # at 390 px the head row is hidden and each row a block
        expect(versions).to_have_count(2)
        expect(versions.nth(0)).to_contain_text("Active")
        expect(versions.nth(0)).to_contain_text("Succeeded")
        expect(versions.nth(0)).to_contain_text("admin")
        table.get_by_role("link", name="View version v2").click()
        diff = page.locator("#revision-diff")
        expect(diff.get_by_role("heading", name="Changes from v1")).to_be_visible()
        htmx_idle(page)
        model = diff.locator("li.diff-change", has_text="/configuration/agents/defaults/model/primary")
        expect(model).to_contain_text('"openai/gpt-5"')
        expect(model).to_contain_text('"openai/gpt-5-mini"')
        token = diff.locator("li.diff-change", has_text="/secretBindings/SLACK_BOT_TOKEN/source/id")
        expect(token).to_contain_text("first-bot-token")
        expect(token).to_contain_text("second-bot-token")
        no_horizontal_scroll(console, width)
        console.shot(f"revision-diff-{width}")

    page.set_viewport_size({"width": 1440, "height": 900})
    page.locator("#agent-revisions-table").get_by_role("link", name="View version v1").click()
    expect(page.locator("#revision-diff")).to_contain_text("First version")
    htmx_idle(page)
    page.get_by_role("button", name="Redeploy this revision").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("heading", name="Redeploy version v1 of rollback-agent?")).to_be_visible()
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    console.shot("redeploy-confirm-1440")
    dialog.get_by_role("button", name="Redeploy v1").click()
    expect(page.get_by_role("dialog")).to_have_count(0)

    activity = page.locator("#deployment-activity")
    expect(activity).to_contain_text("Most recent deployment · v3", timeout=DEPLOY_MS)
    expect(activity.locator(".recorded-status")).to_contain_text("Succeeded", timeout=DEPLOY_MS)
    htmx_idle(page)
    console.goto(f"{base}?tab=revisions")
    newest = page.locator("#agent-revisions-table tbody tr").nth(0)
    expect(newest).to_contain_text("v3")
    expect(newest).to_contain_text("from v1")
    expect(newest).to_contain_text("Active")
    console.shot("redeployed-1440")
    page.set_viewport_size({"width": 390, "height": 844})
    no_horizontal_scroll(console, 390)
    console.shot("redeployed-390")

    with occ.stack.api() as api:
        data = api.get(agent["path"]).json()["data"]
        revisions = api.get(f"{agent['path']}/revisions").json()["data"]["revisions"]
    active = next(r for r in revisions if r["id"] == data["activeRevisionId"])
    assert active["revision"] == 3
    assert active["sourceRevisionId"] == v1
    assert v2 != active["id"]
    assert_no_canary(console, CANARIES)
