"""The codex PluginDriver without a database: capabilities, static policy checks, translation
of the gateway bridge and install outcomes."""

from __future__ import annotations

import pytest

from occ.documents import (
    PluginApprover,
    PluginSelection,
    ToolPolicy,
)
from occ.drivers.plugins.base import (
    DiscoveryQuery,
    InstallOutcome,
    PluginDiscoveryCredentialsRejected,
    PluginRuntimeSpec,
    PluginStartupFailure,
)
from occ.drivers.plugins.codex import CodexPluginDriver

LINEAR = "codex-plugin:linear@openai-curated-remote"
driver = CodexPluginDriver()


def test_capabilities_drive_the_console_controls():
    caps = driver.capabilities()
    assert caps.driver.id == "codex"
    assert caps.discovery_credential == "required"
    assert caps.tool_defaults.approval == ("provider_default", "all_actions", "write_actions", "none")
    assert caps.tool_defaults.reviewer == ("human", "auto")
    assert caps.tools.reviewer == ()
    assert (caps.approvers.agent, caps.approvers.plugin, caps.approvers.tools) == (True, False, False)
    assert list(caps.driver_policy_schema["properties"]) == ["destructiveEnabled"]


def test_discovery_without_a_credential_is_rejected_before_any_request():
    with pytest.raises(PluginDiscoveryCredentialsRejected):
        driver.discover(DiscoveryQuery())
    with pytest.raises(PluginDiscoveryCredentialsRejected):
        driver.details("plugins~x")


CASES = [
    pytest.param({LINEAR: PluginSelection(enabled=True)}, [], id="plain"),
    pytest.param({LINEAR: PluginSelection(enabled=True, tool_defaults=ToolPolicy(approval="write_actions",
                                                                                 reviewer="auto"),
                                          tools={"asdk_app_linear/create_issue": ToolPolicy(approval="all_actions")},
                                          driver_policy={"destructiveEnabled": False})}, [], id="full"),
    pytest.param({"occ-plugin:diffs": PluginSelection(enabled=True)}, [("plugins", "occ-plugin:diffs")], id="bad-key"),
    pytest.param({LINEAR: PluginSelection(enabled=True, approvers=(PluginApprover(channel="slack", id="U1"),))},
                 [("plugins", LINEAR, "approvers")], id="plugin-approvers"),
    pytest.param({LINEAR: PluginSelection(enabled=True, tools={"a/b": ToolPolicy(reviewer="human")})},
                 [("plugins", LINEAR, "tools", "a/b", "reviewer")], id="tool-reviewer"),
    pytest.param({LINEAR: PluginSelection(
        enabled=True, tools={"a/b": ToolPolicy(approvers=(PluginApprover(channel="slack", id="U"),))})},
                 [("plugins", LINEAR, "tools", "a/b", "approvers")], id="tool-approvers"),
    pytest.param({LINEAR: PluginSelection(enabled=True, tools={"no-slash": ToolPolicy(enabled=True)})},
                 [("plugins", LINEAR, "tools", "no-slash")], id="tool-id"),
    pytest.param({LINEAR: PluginSelection(enabled=True, driver_policy={"other": True})},
                 [("plugins", LINEAR, "driverPolicy", "other")], id="unknown-driver-policy"),
    pytest.param({LINEAR: PluginSelection(enabled=True, driver_policy={"destructiveEnabled": "yes"})},
                 [("plugins", LINEAR, "driverPolicy", "destructiveEnabled")], id="driver-policy-type"),
    pytest.param({LINEAR: PluginSelection(enabled=True, tool_defaults=ToolPolicy(enabled=True),
                                          driver_policy={"destructiveEnabled": True})},
                 [("plugins", LINEAR, "driverPolicy", "destructiveEnabled")], id="destructive-with-enabled"),
]


@pytest.mark.parametrize(("selections", "paths"), CASES)
def test_validate_policies(selections, paths):
    assert [problem.path for problem in driver.validate_policies(selections)] == paths


def test_translate_writes_only_the_selected_bridge_entries():
    spec = PluginRuntimeSpec(driver=driver.identity, natives={}, selections={
        LINEAR: PluginSelection(enabled=True, driver_policy={"destructiveEnabled": False}),
        "codex-plugin:github@openai-curated-remote": PluginSelection(enabled=True)})
    config = {"plugins": {"entries": {"codex": {"enabled": True, "config": {"appServer": {"mode": "guardian"}}}}}}
    out = driver.translate(spec, config, failed=frozenset({"codex-plugin:github@openai-curated-remote"}))
    bridge = out["plugins"]["entries"]["codex"]["config"]
    assert bridge["appServer"] == {"mode": "guardian"}  # the user's keys are kept
    assert bridge["codexPlugins"]["allow_all_plugins"] is False
    assert bridge["codexPlugins"]["plugins"] == {
        "linear@openai-curated-remote": {"enabled": True, "marketplaceName": "openai-curated-remote",
                                         "pluginName": "linear", "allow_destructive_actions": False},
        "github@openai-curated-remote": {"enabled": False, "marketplaceName": "openai-curated-remote",
                                         "pluginName": "github"},
    }
    assert "codexPlugins" not in config["plugins"]["entries"]["codex"]["config"]  # not mutated


def test_install_outcomes_become_warnings():
    spec = PluginRuntimeSpec(driver=driver.identity, natives={}, selections={LINEAR: PluginSelection(enabled=True)})
    assert driver.evaluate_installs(spec, [InstallOutcome(LINEAR, "auth_required")])[0].code == "PLUGIN_AUTH_REQUIRED"
    assert driver.evaluate_installs(spec, [InstallOutcome(LINEAR, "rejected")])[0].code == "PLUGIN_INSTALL_FAILED"
    assert driver.evaluate_installs(spec, [InstallOutcome(LINEAR, "installed")]) == ()
    with pytest.raises(PluginStartupFailure):
        driver.evaluate_installs(spec, [InstallOutcome("codex-plugin:other@openai-curated-remote", "rejected")])


def test_selections_resolve_to_hosted_plugins_that_nothing_installs():
    spec = driver.resolve({LINEAR: PluginSelection(enabled=True),
                           "codex-plugin:github@openai-curated-remote": PluginSelection(enabled=False)})
    assert spec.natives[LINEAR].source == "hosted"
    assert spec.natives[LINEAR].native_id == "linear@openai-curated-remote"
    assert spec.installs() == []
    assert [n.selection_id for n in spec.hosted()] == [LINEAR]  # the disabled one needs nothing
    assert PluginRuntimeSpec.from_json(spec.to_json()) == spec
    with pytest.raises(PluginStartupFailure):
        driver.resolve({"occ-plugin:diffs": PluginSelection(enabled=True)})


def test_with_every_selection_failed_the_gateway_config_names_no_codex_plugin():
    spec = driver.resolve({LINEAR: PluginSelection(enabled=True),
                           "codex-plugin:github@openai-curated-remote": PluginSelection(enabled=False)})
    config = {"tools": {"deny": ["canvas"]}}
    assert driver.translate(spec, config, failed=frozenset({LINEAR})) == config
