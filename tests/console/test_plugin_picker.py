"""The plugin picker's HTMX partials (console.views.plugins), against the codex driver and the
loopback fake Codex catalog: each partial, its failure messages, and Save on the Plugins tab."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from occ.commands.secrets import SecretCreate
from occ.drivers.plugins import registry
from occ.drivers.plugins.codex_catalog import forget_identities
from occ.models import Agent
from occ.services.secrets import secret_create
from tests.console.conftest import fragment_root
from tests.factories import AgentFactory, grant
from tests.fakes.fake_codex import TOKEN, FakeCodex, serving

LINEAR = "codex-plugin:linear@openai-curated-remote"


@pytest.fixture
def fake(settings) -> Iterator[FakeCodex]:
    settings.OCC_PLUGIN_DRIVER = "codex"
    registry.forget_plugin_drivers()
    forget_identities()
    yield from serving(settings, timeout=30.0)
    registry.forget_plugin_drivers()
    forget_identities()


@pytest.fixture
def ns(ready_namespace):
    return ready_namespace


def _new(ns, part: str) -> str:
    return f"/console/namespaces/{ns.id}/agents/new/plugins/{part}"


def _agent_url(agent: Agent, part: str) -> str:
    return f"/console/namespaces/{agent.namespace_id}/agents/{agent.id}/plugins/{part}"


def _html(response) -> str:
    return response.content.decode()


def _vals(html: str, label: str) -> dict:
    """The hx-vals of the button named ``label`` (what the browser would post)."""
    match = re.search(r"hx-vals='([^']*)'[^>]*>\s*" + re.escape(label), html)
    assert match, label
    return json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_the_create_page_includes_the_picker_with_its_credential_field(console, ns, fake):
    html = _html(console.get(f"/console/namespaces/{ns.id}/agents/new"))
    assert 'id="plugin-picker"' in html
    assert 'name="plugin_access_token"' in html
    assert 'name="plugins"' in html
    assert "plugins.js" in html
    assert "<script>" not in html  # no inline script (a CSP comes)


def test_without_a_credential_the_results_ask_for_one_and_nothing_is_sent(console, ns, fake):
    response = console.hx_post(_new(ns, "browse"), {"plugins": "{}"})
    assert response.status_code == 200
    assert "Enter a service account token" in _html(response)
    assert fake.requests == []


def test_results_page_forward_and_back(console, ns, fake):
    first = _html(console.hx_post(_new(ns, "browse"), {"plugin_access_token": TOKEN, "plugins": "{}"}))
    assert 'id="plugin-results"' in first
    assert "Page 1 · 20 plugins" in first
    assert re.search(r'<div id="plugin-tabs"[^>]*hx-swap-oob="true"', first)  # the tab bar, out of band
    assert first.index("Linear") < first.index("Figma")  # available first, then by name
    assert TOKEN not in first
    forward = _vals(first, "Next page")
    second = _html(console.hx_post(_new(ns, "browse"), {"plugin_access_token": TOKEN, **forward}))
    assert "Page 2 · 20 plugins" in second
    back = _vals(second, "Previous page")
    again = _html(console.hx_post(_new(ns, "browse"), {"plugin_access_token": TOKEN, **back}))
    assert "Page 1 · 20 plugins" in again


def test_search_and_the_configured_view(console, ns, fake):
    selections = json.dumps({LINEAR: {"enabled": False}})
    found = _html(console.hx_post(_new(ns, "browse"), {"plugin_access_token": TOKEN, "q": "linear",
                                                       "plugins": selections}))
    assert "Linear" in found
    assert "Disabled" in found  # the badge reads the selections JSON
    assert "GitHub" not in found
    configured = _html(console.hx_post(_new(ns, "browse"), {"view": "configured", "plugins": selections}))
    assert "1 configured plugin(s)" in configured
    assert LINEAR in configured
    assert [r for r in fake.requests if r["path"].endswith("/search")]  # q went upstream


@pytest.mark.parametrize(("mode", "text"), [
    ("unauthorized", "token was rejected"),
    ("rate_limited", "limiting requests"),
    ("server_error", "could not be reached"),
    ("echo", "cannot use"),
])
def test_discovery_failures_are_our_messages_in_the_results(console, ns, fake, mode, text):
    fake.configure(mode=mode)
    response = console.hx_post(_new(ns, "browse"), {"plugin_access_token": TOKEN})
    assert response.status_code == 200
    html = _html(response)
    assert text in html
    assert "UPSTREAM" not in html
    assert TOKEN not in html


def test_the_detail_pane_loads_tools_then_offers_add(console, ns, fake):
    page = _html(console.hx_post(_new(ns, "browse"), {"plugin_access_token": TOKEN, "q": "linear"}))
    match = re.search(r"hx-vals='([^']*)'", page[page.index('data-plugin-row="' + LINEAR):])
    row = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    detail = _html(console.hx_post(_new(ns, "detail"), {**row, "plugins": "{}"}))
    assert 'id="plugin-detail"' in detail
    assert "Load its tools first" in detail  # hosted: not selectable until tools are known
    assert 'hx-trigger="load"' in detail  # and they load at once
    tools = _html(console.hx_post(_new(ns, "tools"), {**row, "plugin_access_token": TOKEN, "plugins": "{}"}))
    assert fragment_root(tools) == "div#plugin-tools"
    assert "Tools (3)" in tools
    assert "Add Linear" in tools  # the actions, out of band, now selectable
    selected = json.dumps({LINEAR: {"enabled": True, "toolDefaults": {"approval": "write_actions"}}})
    detail = _html(console.hx_post(_new(ns, "detail"), {**row, "plugins": selected}))
    assert "Remove Linear" in detail
    assert "Plugin policies" in detail
    assert '<option value="write_actions" selected>' in detail
    assert "Destructive tools" in detail  # the driver policy, from the capabilities' schema
    tools = _html(console.hx_post(_new(ns, "tools"), {**row, "plugin_access_token": TOKEN, "plugins": selected}))
    assert "Inherit plugin policy" in tools  # per-tool controls
    tool_part = tools.split("Tools (3)")[1].split('id="plugin-actions"')[0]
    assert "Inherit Harness reviewer" not in tool_part  # codex: no per-tool reviewer


def test_tools_failure_keeps_overrides_and_offers_retry(console, ns, fake):
    fake.configure(mode="server_error")
    entry = json.dumps({"id": LINEAR, "remoteId": "plugins~Plugin_linear", "name": "Linear"})
    html = _html(console.hx_post(_new(ns, "tools"), {"entry": entry, "plugin_access_token": TOKEN}))
    assert fragment_root(html) == "div#plugin-tools"
    assert "Tool list unavailable" in html
    assert "Retry tools for Linear" in html


def test_a_secret_credential_is_used_server_side(console, ns, fake, admin_actor):
    secret = secret_create(actor=admin_actor, namespace_id=ns.id, command=SecretCreate(name="pat", value=TOKEN))
    html = _html(console.hx_post(_new(ns, "browse"), {"plugin_secret_id": secret.id}))
    assert "Page 1 · 20 plugins" in html


def test_the_plugins_tab_browses_with_the_bound_secret_and_saves(console, ns, fake, admin_actor, settings):
    secret = secret_create(actor=admin_actor, namespace_id=ns.id, command=SecretCreate(name="pat", value=TOKEN))
    agent = AgentFactory(namespace=ns, harness_auth_method="codex_pat", harness_secret=secret)
    grant(agent.service_principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id=secret.id)
    tab = _html(console.get(f"/console/namespaces/{ns.id}/agents/{agent.id}?tab=plugins"))
    assert 'id="plugin-picker"' in tab
    swapped = _html(console.hx_get(f"/console/namespaces/{ns.id}/agents/{agent.id}?tab=plugins"))
    assert fragment_root(swapped) == "div#agent-tabs"  # a tab link swapped by htmx
    assert '<section id="agent-plugins"' in swapped
    assert "Save plugin selections" in tab
    assert 'name="plugin_access_token"' not in tab  # the bound Secret, never typed
    page = _html(console.hx_post(_agent_url(agent, "browse"), {"plugins": "{}"}))
    assert "Page 1 · 20 plugins" in page
    saved = console.hx_post(_agent_url(agent, "save"), {"plugins": "not json"})
    assert saved.status_code == 400
    assert fragment_root(_html(saved)) == "div#plugin-save"
    assert "Fix Plugin selections JSON" in _html(saved)
    saved = console.hx_post(_agent_url(agent, "save"), {"plugins": json.dumps({LINEAR: {"enabled": True}})})
    agent.refresh_from_db()
    assert saved.status_code == 200, _html(saved)
    assert "Plugin selections saved" in _html(saved)
    assert agent.plugins == {LINEAR: {"enabled": True}}
    diffs = json.dumps({"occ-plugin:diffs": {"enabled": True}})
    refused = console.hx_post(_agent_url(agent, "save"), {"plugins": diffs})
    assert refused.status_code == 400  # the codex driver's static checks
    agent.refresh_from_db()
    assert agent.plugins == {LINEAR: {"enabled": True}}


def test_an_agent_without_a_bound_pat_says_so_and_keeps_editing(console, ns, fake):
    agent = AgentFactory(namespace=ns)
    html = _html(console.hx_post(_agent_url(agent, "browse"), {"plugins": "{}"}))
    assert "no bound service account token" in html
    configured = _html(console.hx_post(_agent_url(agent, "browse"),
                                       {"view": "configured", "plugins": json.dumps({LINEAR: {"enabled": True}})}))
    assert LINEAR in configured


def test_create_agent_sends_the_picked_selections(console, ns, fake, admin_actor):
    secret = secret_create(actor=admin_actor, namespace_id=ns.id,
                           command=SecretCreate(name="model", value="sk-test-model-key-0123456789"))
    page = _html(console.get(f"/console/namespaces/{ns.id}/agents/new"))
    request_id = re.search(r'name="request_id" value="([^"]+)"', page).group(1)
    body = {"name": "picked", "provider": "openai", "auth_choice": "existing", "model_secret_id": secret.id,
            "model_mode": "list", "model": "gpt-6-astra", "request_id": request_id, "action": "draft",
            "plugins": json.dumps({LINEAR: {"enabled": True, "toolDefaults": {"approval": "none"}}})}
    response = console.hx_post(f"/console/namespaces/{ns.id}/agents/new/submit", body)
    assert response.status_code == 200, _html(response)[:2000]
    agent = Agent.objects.get(namespace=ns, name="picked")
    assert agent.plugins == {LINEAR: {"enabled": True, "toolDefaults": {"approval": "none"}}}


# --- the gaps of issue 14 §8: controls from the capabilities, approvers, reviewers, names -------


def _selected_detail(console, ns, selections: dict) -> tuple[str, str]:
    page = _html(console.hx_post(_new(ns, "browse"), {"plugin_access_token": TOKEN, "q": "linear"}))
    match = re.search(r"hx-vals='([^']*)'", page[page.index('data-plugin-row="' + LINEAR):])
    row = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    detail = _html(console.hx_post(_new(ns, "detail"), {**row, "plugins": json.dumps(selections)}))
    tools = _html(console.hx_post(_new(ns, "tools"), {**row, "plugin_access_token": TOKEN,
                                                      "plugins": json.dumps(selections)}))
    return detail, tools


def test_default_plugin_approvers_follow_the_capabilities_and_reach_create(console, ns, fake, admin_actor):
    page = _html(console.get(f"/console/namespaces/{ns.id}/agents/new"))
    assert 'for="plugin-approvers">Default plugin approvers' in page  # codex: approvers.agent
    assert "Codex plugins need a ChatGPT login" in page  # what a deployment will do, said first
    secret = secret_create(actor=admin_actor, namespace_id=ns.id,
                           command=SecretCreate(name="model", value="sk-test-model-key-0123456789"))
    request_id = re.search(r'name="request_id" value="([^"]+)"', page).group(1)
    body = {"name": "approved", "provider": "openai", "auth_choice": "existing", "model_secret_id": secret.id,
            "model_mode": "list", "model": "gpt-6-astra", "request_id": request_id, "action": "draft",
            "plugins": json.dumps({LINEAR: {"enabled": True}}), "plugin_approvers": "U456, W789 U456"}
    response = console.hx_post(f"/console/namespaces/{ns.id}/agents/new/submit", body)
    assert response.status_code == 200, _html(response)[:2000]
    agent = Agent.objects.get(namespace=ns, name="approved")
    assert agent.plugin_approvers == [{"channel": "slack", "id": "U456"}, {"channel": "slack", "id": "W789"}]


def test_the_plugins_tab_saves_and_shows_the_default_approvers(console, ns, fake, admin_actor):
    agent = AgentFactory(namespace=ns, plugins={LINEAR: {"enabled": True}},
                         plugin_approvers=[{"channel": "slack", "id": "U111"}])
    tab = _html(console.get(f"/console/namespaces/{ns.id}/agents/{agent.id}?tab=plugins"))
    assert 'name="plugin_approvers" value="U111"' in tab
    assert 'hx-params="plugins,plugin_approvers"' in tab
    saved = console.hx_post(_agent_url(agent, "save"), {"plugins": json.dumps({LINEAR: {"enabled": True}}),
                                                        "plugin_approvers": "U222 team:T1:user:U333"})
    assert saved.status_code == 200, _html(saved)
    agent.refresh_from_db()
    assert agent.plugin_approvers == [{"channel": "slack", "id": "U222"},
                                      {"channel": "slack", "id": "team:T1:user:U333"}]
    console.hx_post(_agent_url(agent, "save"), {"plugins": json.dumps({LINEAR: {"enabled": True}})})
    agent.refresh_from_db()
    assert len(agent.plugin_approvers) == 2  # a save without the field keeps them


def test_reviewers_the_plugin_has_one_for_all_tools(console, ns, fake):
    detail, tools = _selected_detail(console, ns, {LINEAR: {"enabled": True, "toolDefaults": {"reviewer": "auto"}}})
    assert "Default reviewer" in detail
    assert "Inherit Harness reviewer" in detail
    assert '<option value="auto" selected>Automatic review</option>' in detail
    tool_part = tools.split("Tools (3)")[1].split('id="plugin-actions"')[0]
    # codex: no reviewer per tool, so each tool offers the way to the plugin's own control
    assert tool_part.count("Set reviewer for all tools") == 3
    reviewer_id = re.search(r'<select id="([^"]+)"[^>]*data-plugin-path="\[&quot;toolDefaults&quot;, &quot;reviewer',
                            detail).group(1)
    assert f'data-plugin-reviewer-all="{reviewer_id}"' in tool_part


def test_a_disabled_plugin_keeps_its_policies_visible_but_disabled(console, ns, fake):
    detail, tools = _selected_detail(console, ns, {LINEAR: {"enabled": False, "toolDefaults": {"approval": "none"}}})
    assert re.search(r'<fieldset class="plugin-policies" disabled', detail)
    assert "its policies apply once it is enabled again" in detail
    assert '<option value="none" selected>' in detail  # the stored value stays on screen
    assert tools.count('<fieldset class="plugin-tool" disabled>') == 3
    enabled, _ = _selected_detail(console, ns, {LINEAR: {"enabled": True}})
    assert not re.search(r'<fieldset class="plugin-policies" disabled', enabled)


def test_unsupported_modes_are_shown_marked_and_not_choosable(console, ns, settings):
    settings.OCC_PLUGIN_DRIVER = "openclaw"
    registry.forget_plugin_drivers()
    try:
        entry = json.dumps({"id": "occ-plugin:workboard", "remoteId": "workboard", "name": "Workboard",
                            "selectableWithoutTools": True, "toolsKnown": True})
        detail = _html(console.hx_post(_new(ns, "detail"), {
            "entry": entry, "plugin_id": "occ-plugin:workboard",
            "plugins": json.dumps({"occ-plugin:workboard": {"enabled": True}})}))
        assert '<option value="all_actions" disabled>Every action (unsupported)</option>' in detail
        assert '<option value="write_actions" disabled>Write actions (unsupported)</option>' in detail
        assert '<option value="none">No additional approval</option>' in detail
        assert "Not supported by this installation&#x27;s plugin driver: Every action, Write actions." in detail
        assert "Default reviewer" not in detail  # openclaw: no reviewers
        assert "Default plugin approvers" not in _html(console.get(f"/console/namespaces/{ns.id}/agents/new"))
    finally:
        registry.forget_plugin_drivers()


def test_the_configured_view_names_plugins_not_on_this_page(console, ns, fake, settings):
    selections = json.dumps({LINEAR: {"enabled": True}, "codex-plugin:zzz@openai-curated-remote": {"enabled": True}})
    configured = _html(console.hx_post(_new(ns, "browse"), {
        "view": "configured", "plugins": selections, "known": json.dumps({LINEAR: "Linear"})}))
    assert '<span class="plugin-name">Linear</span><code class="plugin-row-id">' + LINEAR in configured
    assert '<span class="plugin-name">codex-plugin:zzz@openai-curated-remote</span>' in configured  # unknown: its id
    found = _html(console.hx_post(_new(ns, "browse"), {"view": "configured", "plugins": selections, "q": "line",
                                                       "known": json.dumps({LINEAR: "Linear"})}))
    assert "1 configured plugin(s)" in found  # the filter matches names too
    # A curated catalog names its entries itself, and they can be opened without browsing first.
    settings.OCC_PLUGIN_DRIVER = "openclaw"
    registry.forget_plugin_drivers()
    curated = _html(console.hx_post(_new(ns, "browse"), {
        "view": "configured", "plugins": json.dumps({"occ-plugin:workboard": {"enabled": True}})}))
    assert '<span class="plugin-name">Workboard</span>' in curated
    assert "&quot;remoteId&quot;: &quot;workboard&quot;" in curated or '\\u0022remoteId\\u0022' in curated
