"""The JSON editor (frontend/src/editor.js) in Chromium, under the console's CSP: on Create
Configuration, Edit Configuration and the Agent page's Configuration tab.

Typing invalid JSON lists the syntax error at its line and column (found in the browser); a
document that is JSON but breaks a rule is listed from the server's check; fixing it clears
both the list and the underline; the form saves what the editor shows. No CSP violation on the
way (CodeMirror's style element carries the page's nonce). Screenshots at 1440x900 and 390x844,
with no horizontal scroll on the phone.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Console, Occ, api_caller
from tests.browser.test_console_csp import RECORD_VIOLATIONS, violations

pytestmark = pytest.mark.browser

SIZES = ((1440, 900), (390, 844))
VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}
# Line 2 lacks its comma: the browser finds it (CPython's words, line 3 column 3).
SYNTAX_ERROR = '{\n  "agents": {"defaults": {}}\n  "tools": {}\n}'
# JSON, but "bogus" (line 3) is no OpenClaw key: only the server's check knows.
SCHEMA_ERROR = '{\n  "agents": {"defaults": {}},\n  "bogus": true\n}'
FIXED = '{\n  "agents": {"defaults": {"skipBootstrap": true}}\n}'


@pytest.fixture(scope="module")
def agent(occ: Occ) -> dict[str, Any]:
    """A stopped Agent on its own Configuration, made through the API."""
    ns = occ.namespace_id
    with occ.stack.api() as api:
        call = api_caller(api)

        harness = call("POST", f"/namespaces/{ns}/secrets", {"name": "editor-model-key", "value": "sk-editor"}, 201)
        configuration = call("POST", f"/namespaces/{ns}/configurations", {"kind": "agent", "values": VALUES}, 201)
        created = call("POST", f"/namespaces/{ns}/agents", {
            "name": "edited-agent", "configurationId": configuration["id"],
            "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": harness["id"]}}},
            201)
    return {"id": created["id"], "configuration_id": configuration["id"]}


def configuration_values(occ: Occ, configuration_id: str) -> dict[str, Any]:
    with occ.stack.api() as api:
        response = api.get(f"/namespaces/{occ.namespace_id}/configurations/{configuration_id}")
        assert response.status_code == 200, response.text[:500]
        return response.json()["data"]["values"]


def editor(page: Page) -> Any:
    return page.locator(".json-editor-host .cm-content")


def replace_text(page: Page, text: str) -> None:
    """Select everything in the editor, delete it, and insert ``text`` (as a paste would)."""
    editor(page).click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def problems(page: Page) -> Any:
    return page.locator("#configuration-json-status")


def no_horizontal_scroll(page: Page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "no horizontal scroll"


def shots(console: Console, name: str) -> None:
    for width, height in SIZES:
        console.page.set_viewport_size({"width": width, "height": height})
        console.shot(f"{name} {width}")
        if width < 500:
            no_horizontal_scroll(console.page, width)
    console.page.set_viewport_size({"width": 1440, "height": 900})


def test_the_editor_checks_as_you_type_and_saves_what_it_shows(console: Console):
    page, occ = console.page, console.occ
    page.add_init_script(RECORD_VIOLATIONS)
    console.sign_in()
    response = console.goto(f"/console/namespaces/{occ.namespace_id}/configurations/new")
    assert "'nonce-" in response.headers["content-security-policy"].split("style-src", 1)[1].split(";")[0]
    expect(editor(page)).to_be_visible()
    expect(page.locator("textarea#configuration-json")).to_be_hidden()
    expect(problems(page)).to_contain_text("No problems found.")  # the starter document

    replace_text(page, SYNTAX_ERROR)
    expect(problems(page)).to_contain_text("Line 3, column 3: Not valid JSON: Expecting ',' delimiter.")
    expect(page.locator(".cm-problem")).to_have_count(1)
    shots(console, "syntax error")

    replace_text(page, SCHEMA_ERROR)
    expect(problems(page)).to_contain_text('Line 3, column 3: OpenClaw refuses bogus: Unrecognized key: "bogus"')
    expect(page.locator(".cm-problem")).to_have_text('"bogus"')
    shots(console, "schema error from the server")

    # The list's entry moves the cursor to the problem.
    problems(page).get_by_role("button", name="Line 3, column 3").click()
    expect(editor(page)).to_be_focused()

    replace_text(page, FIXED)
    expect(problems(page)).to_contain_text("No problems found.")
    expect(page.locator(".cm-problem")).to_have_count(0)
    seen = violations(page)  # each page load starts a new record

    page.get_by_role("button", name="Create Configuration").click()
    expect(page.get_by_role("heading", name=re.compile(r"^Configuration "), level=1)).to_be_visible()
    created_id = page.url.rstrip("/").rsplit("/", 1)[1]
    assert configuration_values(occ, created_id) == json.loads(FIXED)

    # Edit: the saved document in the editor; a change saves.
    seen += violations(page)
    page.get_by_role("link", name="Edit", exact=True).click()
    expect(editor(page)).to_contain_text('"skipBootstrap": true')
    replace_text(page, '{\n  "agents": {"defaults": {"skipBootstrap": false}}\n}')
    expect(problems(page)).to_contain_text("No problems found.")
    seen += violations(page)
    page.get_by_role("button", name="Save Configuration").click()
    expect(page.get_by_role("heading", name=re.compile(r"^Configuration "), level=1)).to_be_visible()
    assert configuration_values(occ, created_id) == {"agents": {"defaults": {"skipBootstrap": False}}}
    assert seen + violations(page) == []


def test_the_agent_configuration_tab_edits_with_the_editor(console: Console, agent: dict[str, Any]):
    page, occ = console.page, console.occ
    page.add_init_script(RECORD_VIOLATIONS)
    console.sign_in()
    console.goto(f"/console/namespaces/{occ.namespace_id}/agents/{agent['id']}?tab=configuration")
    expect(editor(page)).to_contain_text('"primary": "openai/gpt-5"')
    expect(problems(page)).to_contain_text("No problems found.")

    replace_text(page, '{\n  "agents": {"defaults": {"model": {"primary": 5}}}\n}')
    expect(problems(page)).to_contain_text("Line 2, column 48: OpenClaw refuses agents.defaults.model.primary")
    shots(console, "agent configuration tab with a problem")

    changed = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5-mini"}}}}
    replace_text(page, json.dumps(changed, indent=2))
    expect(problems(page)).to_contain_text("No problems found.")
    page.get_by_role("button", name="Save Configuration").click()
    expect(page.locator("#toasts")).to_contain_text("saved")
    # The tab is re-rendered at its new generation, with the editor over it again.
    expect(page.locator("#agent-configuration")).to_contain_text("generation 2")
    expect(editor(page)).to_contain_text("openai/gpt-5-mini")
    assert configuration_values(occ, agent["configuration_id"]) == changed
    shots(console, "agent configuration tab saved")
    assert violations(page) == []


def test_secret_bindings_are_edited_on_the_configuration(console: Console, agent: dict[str, Any]):
    page, occ = console.page, console.occ
    page.add_init_script(RECORD_VIOLATIONS)
    console.sign_in()
    console.goto(f"/console/namespaces/{occ.namespace_id}/configurations/{agent['configuration_id']}")
    page.get_by_role("link", name="Edit Secret bindings").click()
    expect(page.get_by_role("heading", name=re.compile(r"^Secrets of Configuration"), level=1)).to_be_visible()

    page.get_by_label("Environment variable").fill("model key")
    page.get_by_label("Secret", exact=True).select_option(label="editor-model-key")
    page.get_by_role("button", name="Save Secret bindings").click()
    expect(page.locator("#error-summary")).to_contain_text("A binding name must be an environment variable name")
    expect(page.get_by_label("Environment variable")).to_have_value("model key")  # kept as typed
    shots(console, "secret bindings refused")

    page.get_by_label("Environment variable").fill("MODEL_KEY")
    page.get_by_role("button", name="Save Secret bindings").click()
    expect(page.locator("#configuration-secrets")).to_contain_text("MODEL_KEY")
    expect(page.locator("#configuration-secrets")).to_contain_text("editor-model-key")
    expect(page.locator("#toasts")).to_contain_text("Secret bindings saved")
    with occ.stack.api() as api:
        saved = api.get(f"/namespaces/{occ.namespace_id}/configurations/{agent['configuration_id']}").json()["data"]
    assert list(saved["secretBindings"]) == ["MODEL_KEY"]

    page.get_by_role("link", name="Edit Secret bindings").click()
    page.get_by_role("button", name="Add a variable").click()
    expect(page.get_by_label("Environment variable")).to_have_count(3)
    shots(console, "secret bindings with rows")
    assert violations(page) == []
