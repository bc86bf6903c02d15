"""The PluginDriver contract's own values and the registry that picks a driver."""

from __future__ import annotations

import sys
import types

import pytest

from occ.api.plugins_wire import plugin_capabilities_wire, plugin_page_wire
from occ.documents import (
    PluginApprover,
    PluginSelection,
    ToolPolicy,
)
from occ.drivers.plugins import registry
from occ.drivers.plugins.base import (
    ApproverCapabilities,
    CatalogEntry,
    CatalogPage,
    DiscoveryCredential,
    DriverIdentity,
    Link,
    NativePlugin,
    NpmSource,
    PluginDriver,
    PluginRuntimeSpec,
    PluginTool,
    PolicyCapabilities,
    ScopeCapabilities,
    SetupGuidance,
)
from occ.errors import NotImplementedYet

IDENTITY = DriverIdentity("sample", "tests.sample/1")


class SampleDriver(PluginDriver):
    identity = IDENTITY

    def capabilities(self):
        return PolicyCapabilities(driver=IDENTITY, approvers=ApproverCapabilities(True, False, False),
                                  tool_defaults=ScopeCapabilities(True, ("provider_default", "none")),
                                  tools=ScopeCapabilities(True, ("none",)), driver_policy_schema={"type": "object"},
                                  discovery_credential="none")

    def discover(self, query, credential=None):
        return CatalogPage(plugins=())

    def details(self, remote_id, credential=None):
        raise NotImplementedError

    def validate_policies(self, selections, plugin_approvers=None):
        return []

    def resolve(self, selections):
        raise NotImplementedError

    def translate(self, spec, config, *, failed=frozenset()):
        return dict(config)

    def evaluate_installs(self, spec, outcomes):
        return ()


@pytest.fixture
def sample_module(monkeypatch, settings):
    module = types.ModuleType("tests_sample_plugin_driver")
    SampleDriver.__module__ = module.__name__
    module.SampleDriver = SampleDriver
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(registry.PLUGIN_DRIVERS.classes, "sample", f"{module.__name__}.SampleDriver")
    registry.forget_plugin_drivers()
    yield module
    registry.forget_plugin_drivers()


def test_the_setting_selects_the_driver_and_one_object_serves_the_process(sample_module, settings):
    settings.OCC_PLUGIN_DRIVER = "sample"

    driver = registry.plugin_driver()

    assert isinstance(driver, SampleDriver)
    assert registry.plugin_driver() is driver
    assert registry.require_plugin_driver().identity == IDENTITY


def test_no_driver_is_none_and_requiring_one_is_the_documented_501(settings):
    settings.OCC_PLUGIN_DRIVER = ""
    registry.forget_plugin_drivers()

    assert registry.plugin_driver() is None
    with pytest.raises(NotImplementedYet) as refused:
        registry.require_plugin_driver()
    assert refused.value.status == 501
    assert refused.value.code == "NOT_IMPLEMENTED"
    assert registry.plugin_driver("no-such-driver") is None


def test_a_credential_never_prints_its_value():
    credential = DiscoveryCredential("at-very-secret")

    assert "very-secret" not in repr(credential)
    assert "very-secret" not in str(credential)
    assert "very-secret" not in repr(types.SimpleNamespace(c=credential))
    assert credential.reveal() == "at-very-secret"


def test_a_selection_survives_the_stored_shape():
    """What the PluginDriver reads is what an Agent stores and a revision freezes."""
    selection = PluginSelection(
        enabled=True, tool_defaults=ToolPolicy(enabled=False, approval="none"),
        tools={"diffs": ToolPolicy(enabled=True), "other": ToolPolicy(approval="provider_default")},
        driver_policy={"destructiveEnabled": False}, approvers=(PluginApprover(channel="slack", id="U1"),))

    document = selection.document()

    assert document == {"enabled": True, "toolDefaults": {"enabled": False, "approval": "none"},
                        "tools": {"diffs": {"enabled": True}, "other": {"approval": "provider_default"}},
                        "driverPolicy": {"destructiveEnabled": False},
                        "approvers": [{"channel": "slack", "id": "U1"}]}
    assert PluginSelection.model_validate(document) == selection


def test_the_runtime_spec_round_trips_its_private_file_and_lists_enabled_installs():
    spec = PluginRuntimeSpec(
        driver=IDENTITY,
        selections={"occ-plugin:a": PluginSelection(enabled=True), "occ-plugin:b": PluginSelection(enabled=False),
                    "occ-plugin:c": PluginSelection(enabled=True)},
        natives={
            "occ-plugin:a": NativePlugin("occ-plugin:a", "a", "npm", NpmSource("@x/a", "1.0.0", "sha512-A", True),
                                         ("a_tool",)),
            "occ-plugin:b": NativePlugin("occ-plugin:b", "b", "npm", NpmSource("b", "2.0.0", "sha512-B")),
            "occ-plugin:c": NativePlugin("occ-plugin:c", "c", "bundled", tools=("c_tool",)),
        })

    assert PluginRuntimeSpec.from_json(spec.to_json()) == spec
    assert [n.selection_id for n in spec.installs()] == ["occ-plugin:a"]
    assert spec.natives["occ-plugin:a"].npm.spec == "npm:@x/a@1.0.0"


def test_capabilities_and_pages_render_in_the_reference_shape(sample_module):
    assert plugin_capabilities_wire(None) == {}
    wire = plugin_capabilities_wire(SampleDriver().capabilities())
    assert wire == {
        "pluginPolicies": {
            "driver": {"id": "sample", "implementation": "tests.sample/1"},
            "approvers": {"agent": True, "plugin": False, "tools": False},
            "toolDefaults": {"enabled": True, "approval": ["provider_default", "none"], "reviewer": []},
            "tools": {"enabled": True, "approval": ["none"], "reviewer": []},
            "driverPolicySchema": {"type": "object"},
        },
        "pluginDiscovery": {"credential": "none"},
    }
    page = CatalogPage(
        plugins=(CatalogEntry(id="occ-plugin:a", remote_id="a", name="A", description="d", tools=None,
                              available=False, unavailable_reason="plan", unavailable_help=Link("Help", "https://h")),
                 CatalogEntry(id="occ-plugin:b", remote_id="b", name="B",
                              tools=(PluginTool(id="t", owner_id="b", name="T", writes=True),))),
        next_cursor="c2", setup=SetupGuidance("m", (Link("L", "https://l"),)))
    assert plugin_page_wire(page) == {
        "plugins": [
            {"id": "occ-plugin:a", "remoteId": "a", "name": "A", "description": "d", "available": False,
             "unavailableReason": "plan", "unavailableHelp": {"label": "Help", "url": "https://h"},
             "selectableWithoutTools": False, "tools": None},
            {"id": "occ-plugin:b", "remoteId": "b", "name": "B", "available": True, "selectableWithoutTools": False,
             "tools": [{"id": "t", "ownerId": "b", "name": "T", "available": True, "writes": True}]},
        ],
        "nextCursor": "c2",
        "setup": {"message": "m", "links": [{"label": "L", "url": "https://l"}]},
    }
