"""Translation goldens: selections (through the openclaw PluginDriver) into ``openclaw.json``,
each result checked against the pinned runtime's schema."""

from __future__ import annotations

import pytest

from occ.documents import (
    PluginSelection,
    ToolPolicy,
)
from occ.drivers.plugins.catalog import load_catalog
from occ.drivers.plugins.openclaw import OpenClawPluginDriver
from occ.openclaw import document
from occ.openclaw.plugins import PluginPolicy, apply_plugin_policies
from occ.openclaw.schema import schema_problems

WORKBOARD = "occ-plugin:workboard"
SYNOLOGY = "occ-plugin:synology-chat"
BASE = document.agent_template(provider="openai", model="gpt-5")


@pytest.fixture(scope="module")
def driver() -> OpenClawPluginDriver:
    return OpenClawPluginDriver(load_catalog())


def translate(driver, selections, config=BASE, failed=frozenset()):
    out = driver.translate(driver.resolve(selections), config, failed=failed)
    assert schema_problems(out) == []
    return out


def test_grants_go_into_also_allow_when_there_is_no_allow_list(driver):
    config = {**BASE, "tools": {"profile": "coding", "deny": ["browser"]}}
    out = translate(driver, {WORKBOARD: PluginSelection(
        enabled=True, tools={"workboard_list": ToolPolicy(enabled=True), "workboard_read": ToolPolicy(enabled=True)})},
        config)

    assert out["tools"] == {"profile": "coding", "alsoAllow": ["workboard_list", "workboard_read"],
                            "deny": ["browser"]}
    assert out["plugins"]["entries"] == {"workboard": {"enabled": True}}
    assert "alsoAllow" not in config["tools"]  # the input is not changed


def test_grants_join_a_non_empty_allow_list(driver):
    config = {**BASE, "tools": {"allow": ["read", "exec"]}}
    out = translate(driver, {WORKBOARD: PluginSelection(
        enabled=True, tools={"workboard_list": ToolPolicy(enabled=True)})}, config)

    assert out["tools"] == {"allow": ["read", "exec", "workboard_list"]}


def test_a_tool_override_beats_tool_defaults_and_disabled_tools_become_denies(driver):
    tools = load_catalog().by_id()["workboard"].tools
    out = translate(driver, {WORKBOARD: PluginSelection(
        enabled=True, tool_defaults=ToolPolicy(enabled=False),
        tools={"workboard_list": ToolPolicy(enabled=True), "workboard_read": ToolPolicy(approval="none")})})

    assert out["tools"]["alsoAllow"] == ["workboard_list"]
    assert out["tools"]["deny"] == [t for t in tools if t != "workboard_list"]
    assert "workboard_read" in out["tools"]["deny"]  # an approval-only override inherits the default


def test_defaults_enabled_grants_every_known_tool_but_the_disabled_one(driver):
    tools = load_catalog().by_id()["workboard"].tools
    out = translate(driver, {WORKBOARD: PluginSelection(
        enabled=True, tool_defaults=ToolPolicy(enabled=True), tools={"workboard_move": ToolPolicy(enabled=False)})})

    assert out["tools"]["alsoAllow"] == [t for t in tools if t != "workboard_move"]
    assert out["tools"]["deny"] == ["workboard_move"]


def test_no_enablement_anywhere_leaves_the_native_defaults(driver):
    out = translate(driver, {WORKBOARD: PluginSelection(enabled=True, tool_defaults=ToolPolicy(approval="none"))})

    assert "tools" not in out
    assert out["plugins"]["entries"]["workboard"] == {"enabled": True}


def test_a_master_disable_beats_every_tool_override(driver):
    out = translate(driver, {WORKBOARD: PluginSelection(
        enabled=False, tool_defaults=ToolPolicy(enabled=True), tools={"workboard_list": ToolPolicy(enabled=True)})})

    assert out["plugins"]["entries"]["workboard"] == {"enabled": False}
    assert "tools" not in out


def test_operator_denies_win_over_grants_and_stay(driver):
    config = {**BASE, "tools": {"deny": ["workboard_l*"]},
              "plugins": {"entries": {"workboard": {"enabled": True, "config": {}}}}}
    out = translate(driver, {WORKBOARD: PluginSelection(
        enabled=True, tools={"workboard_list": ToolPolicy(enabled=True), "workboard_read": ToolPolicy(enabled=True)})},
        config)

    assert out["tools"] == {"alsoAllow": ["workboard_read"], "deny": ["workboard_l*"]}
    assert out["plugins"]["entries"]["workboard"] == {"enabled": True, "config": {}}


def test_an_operator_disable_or_plugin_deny_keeps_the_plugin_off(driver):
    selection = {WORKBOARD: PluginSelection(enabled=True, tools={"workboard_list": ToolPolicy(enabled=True)})}
    off = translate(driver, selection, {**BASE, "plugins": {"entries": {"workboard": {"enabled": False}}}})
    denied = translate(driver, selection, {**BASE, "plugins": {"deny": ["workboard"]}})

    assert off["plugins"]["entries"]["workboard"]["enabled"] is False
    assert "tools" not in off
    assert denied["plugins"]["entries"]["workboard"]["enabled"] is False
    assert "tools" not in denied


def test_a_plugin_allow_list_gains_the_enabled_plugin(driver):
    out = translate(driver, {SYNOLOGY: PluginSelection(enabled=True)}, {**BASE, "plugins": {"allow": ["slack"]}})

    assert out["plugins"]["allow"] == ["slack", "synology-chat"]
    assert out["plugins"]["entries"]["synology-chat"] == {"enabled": True}


def test_a_failed_install_is_disabled_and_loses_its_managed_allowance(driver):
    selections = {SYNOLOGY: PluginSelection(enabled=True, tool_defaults=ToolPolicy(enabled=True)),
                  WORKBOARD: PluginSelection(enabled=True, tools={"workboard_list": ToolPolicy(enabled=True)})}

    ok = translate(driver, selections)
    failed = translate(driver, selections, failed=frozenset({SYNOLOGY}))

    assert ok["tools"]["alsoAllow"] == ["synology-chat", "workboard_list"]
    assert failed["tools"]["alsoAllow"] == ["workboard_list"]
    assert failed["plugins"]["entries"]["synology-chat"] == {"enabled": False}
    assert failed["plugins"]["entries"]["workboard"] == {"enabled": True}


def test_no_policies_change_nothing():
    assert apply_plugin_policies(BASE, []) == BASE
    assert apply_plugin_policies(BASE, [PluginPolicy("x", True, grants=("t",))])["tools"] == {"alsoAllow": ["t"]}
