"""The ``openclaw`` PluginDriver: its committed catalog, discovery, the policy validation table,
and install outcomes into warnings. No database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings

from occ.documents import (
    PluginApprover,
    PluginSelection,
    ToolPolicy,
)
from occ.drivers.plugins.base import (
    DiscoveryQuery,
    InstalledPlugin,
    InstallOutcome,
    PluginNotFound,
    PluginStartupFailure,
)
from occ.drivers.plugins.catalog import CATALOG_FILE, load_catalog, regenerate
from occ.drivers.plugins.openclaw import PAGE_SIZE, OpenClawPluginDriver
from occ.errors import InvalidRequest
from occ.runtime import OPENCLAW_PACKAGE, Runtime
from tests.conftest import service_missing

SYNOLOGY = "occ-plugin:synology-chat"
WORKBOARD = "occ-plugin:workboard"
LLM_TASK = "occ-plugin:llm-task"


@pytest.fixture(scope="module")
def driver() -> OpenClawPluginDriver:
    return OpenClawPluginDriver(load_catalog())


def test_the_committed_catalog_is_the_pinned_runtimes_bundled_plugins_plus_the_npm_allowlist():
    catalog = load_catalog()
    bundled = [p for p in catalog.plugins if p.source == "bundled"]
    npm = [p for p in catalog.plugins if p.source == "npm"]

    assert catalog.runtime_version == "2026.9.6"
    assert len(bundled) == 63
    assert sum(p.enabled_by_default is True for p in bundled) == 39
    assert sum(p.enabled_by_default is False for p in bundled) == 3
    assert sum(p.enabled_by_default is None for p in bundled) == 21
    assert {p.native_id for p in bundled if p.platforms} == {"apple-fm", "bonjour"}
    assert all(p.version and p.integrity and p.integrity.startswith("sha512-") for p in npm)
    assert "synology-chat" in {p.native_id for p in npm}


def test_the_committed_catalog_matches_the_installed_runtime():
    runtime = Runtime(Path(settings.OCC_RUNTIME_DIR))
    version = runtime.installed(runtime.openclaw_project, OPENCLAW_PACKAGE)
    if version is None:
        service_missing("OpenClaw runtime not installed: run make runtime")
    current = json.loads(CATALOG_FILE.read_text())

    regenerated = regenerate(runtime.openclaw_project / "node_modules" / OPENCLAW_PACKAGE, version, current)

    assert regenerated == current, ("run `manage.py occ_plugin_catalog` and commit "
                                    "occ/drivers/plugins/data/openclaw-catalog.json")


def test_capabilities_name_the_driver_and_only_the_supported_controls(driver):
    capabilities = driver.capabilities()

    assert (capabilities.driver.id, capabilities.driver.implementation) == ("openclaw", "occ.openclaw-curated/1")
    assert capabilities.tool_defaults.approval == ("provider_default", "none") == capabilities.tools.approval
    assert capabilities.tool_defaults.reviewer == () == capabilities.tools.reviewer
    assert capabilities.discovery_credential == "none"
    assert not (capabilities.approvers.plugin)
    assert not (capabilities.approvers.tools)


def test_discovery_pages_the_whole_catalog_with_opaque_cursors(driver):
    seen, cursor, pages = [], None, 0
    while True:
        page = driver.discover(DiscoveryQuery(cursor=cursor))
        pages += 1
        assert len(page.plugins) <= PAGE_SIZE
        seen.extend(entry.id for entry in page.plugins)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 4
    assert len(seen) == len(set(seen)) == 64
    assert page.setup is not None


def test_discovery_filters_on_id_name_description_and_category(driver):
    page = driver.discover(DiscoveryQuery(q="SYNOLOGY"))
    assert [e.id for e in page.plugins] == [SYNOLOGY]
    assert page.next_cursor is None
    assert SYNOLOGY in [e.id for e in driver.discover(DiscoveryQuery(q="direct messages")).plugins]
    productivity = {e.id for e in driver.discover(DiscoveryQuery(q="productivity")).plugins}
    assert {WORKBOARD, "occ-plugin:logbook"} <= productivity
    assert driver.discover(DiscoveryQuery(q="no such plugin anywhere")).plugins == ()


def test_a_cursor_from_another_search_or_forged_is_refused(driver):
    cursor = driver.discover(DiscoveryQuery()).next_cursor
    with pytest.raises(InvalidRequest):
        driver.discover(DiscoveryQuery(q="memory", cursor=cursor))
    with pytest.raises(InvalidRequest):
        driver.discover(DiscoveryQuery(cursor="not-a-cursor"))


def test_details_carry_the_tools_the_manifest_declares(driver):
    entry = driver.details("workboard")
    assert entry.id == WORKBOARD
    assert entry.tools
    assert "workboard_list" in {t.id for t in entry.tools}
    assert all(t.owner_id == "workboard" for t in entry.tools)
    assert driver.details("synology-chat").tools == ()
    with pytest.raises(PluginNotFound):
        driver.details("nope")


# --- the validation table -------------------------------------------------------------------------

VALID = [
    ("enable only", {SYNOLOGY: PluginSelection(enabled=True)}),
    ("disabled", {WORKBOARD: PluginSelection(enabled=False, tools={"workboard_list": ToolPolicy(enabled=True)})}),
    ("defaults and tool overrides", {WORKBOARD: PluginSelection(
        enabled=True, tool_defaults=ToolPolicy(enabled=False, approval="none"),
        tools={"workboard_list": ToolPolicy(enabled=True, approval="provider_default")})}),
    ("empty driver policy", {LLM_TASK: PluginSelection(enabled=True, driver_policy={})}),
]

INVALID = [
    ("unknown plugin", {"occ-plugin:nope": PluginSelection(enabled=True)}, ("plugins", "occ-plugin:nope")),
    ("another driver's id", {"codex-plugin:linear@openai-curated-remote": PluginSelection(enabled=True)},
     ("plugins", "codex-plugin:linear@openai-curated-remote")),
    ("other platform only", {"occ-plugin:apple-fm": PluginSelection(enabled=True)},
     ("plugins", "occ-plugin:apple-fm")),
    ("all_actions default", {WORKBOARD: PluginSelection(enabled=True,
                                                        tool_defaults=ToolPolicy(approval="all_actions"))},
     ("plugins", WORKBOARD, "toolDefaults", "approval")),
    ("write_actions default", {WORKBOARD: PluginSelection(enabled=True,
                                                          tool_defaults=ToolPolicy(approval="write_actions"))},
     ("plugins", WORKBOARD, "toolDefaults", "approval")),
    ("all_actions on a tool", {WORKBOARD: PluginSelection(
        enabled=True, tools={"workboard_list": ToolPolicy(approval="all_actions")})},
     ("plugins", WORKBOARD, "tools", "workboard_list", "approval")),
    ("write_actions on a tool", {WORKBOARD: PluginSelection(
        enabled=True, tools={"workboard_list": ToolPolicy(approval="write_actions")})},
     ("plugins", WORKBOARD, "tools", "workboard_list", "approval")),
    ("default reviewer", {WORKBOARD: PluginSelection(enabled=True, tool_defaults=ToolPolicy(reviewer="human"))},
     ("plugins", WORKBOARD, "toolDefaults", "reviewer")),
    ("tool reviewer", {WORKBOARD: PluginSelection(enabled=True,
                                                  tools={"workboard_list": ToolPolicy(reviewer="auto")})},
     ("plugins", WORKBOARD, "tools", "workboard_list", "reviewer")),
    ("unknown tool", {WORKBOARD: PluginSelection(enabled=True, tools={"rm_rf": ToolPolicy(enabled=True)})},
     ("plugins", WORKBOARD, "tools", "rm_rf")),
    ("driver policy field", {WORKBOARD: PluginSelection(enabled=True, driver_policy={"destructiveEnabled": True})},
     ("plugins", WORKBOARD, "driverPolicy", "destructiveEnabled")),
    ("plugin approvers",
     {WORKBOARD: PluginSelection(enabled=True, approvers=(PluginApprover(channel="slack", id="U1"),))},
     ("plugins", WORKBOARD, "approvers")),
    ("tool approvers", {WORKBOARD: PluginSelection(
        enabled=True, tools={"workboard_list": ToolPolicy(approvers=(PluginApprover(channel="slack", id="U1"),))})},
     ("plugins", WORKBOARD, "tools", "workboard_list", "approvers")),
]


@pytest.mark.parametrize(("case", "selections"), VALID, ids=[c for c, _ in VALID])
def test_valid_selections_pass(driver, case, selections):
    assert driver.validate_policies(selections) == []


@pytest.mark.parametrize(("case", "selections", "path"), INVALID, ids=[c for c, _, _ in INVALID])
def test_each_invalid_field_and_unsupported_mode_is_refused_at_its_path(driver, case, selections, path):
    problems = driver.validate_policies(selections)

    assert [p.path for p in problems] == [path]
    assert problems[0].message


# --- startup ---------------------------------------------------------------------------------------


def test_resolve_gives_bundled_and_exact_npm_metadata(driver):
    spec = driver.resolve({SYNOLOGY: PluginSelection(enabled=True), WORKBOARD: PluginSelection(enabled=True)})

    assert spec.driver == driver.identity
    assert spec.natives[WORKBOARD].source == "bundled"
    assert spec.natives[WORKBOARD].npm is None
    npm = spec.natives[SYNOLOGY].npm
    assert (npm.package, npm.version, npm.force) == ("@openclaw/synology-chat", "2026.9.4", False)
    assert [n.selection_id for n in spec.installs()] == [SYNOLOGY]
    with pytest.raises(PluginStartupFailure):
        driver.resolve({"occ-plugin:gone": PluginSelection(enabled=True)})


def _installed(spec, **changes):
    npm = spec.natives[SYNOLOGY].npm
    fields = {"native_id": "synology-chat", "package": npm.package, "version": npm.version,
              "integrity": npm.integrity, "install_path": "/x"} | changes
    return InstallOutcome(SYNOLOGY, "installed", InstalledPlugin(**fields))


def test_install_outcomes_become_warnings_or_startup_failures(driver):
    spec = driver.resolve({SYNOLOGY: PluginSelection(enabled=True)})

    assert driver.evaluate_installs(spec, [_installed(spec)]) == ()
    rejected = driver.evaluate_installs(spec, [InstallOutcome(SYNOLOGY, "rejected")])
    assert [w.document() for w in rejected] == [{"pluginId": SYNOLOGY, "code": "PLUGIN_INSTALL_FAILED"}]
    auth = driver.evaluate_installs(spec, [InstallOutcome(SYNOLOGY, "auth_required")])
    assert [w.code for w in auth] == ["PLUGIN_AUTH_REQUIRED"]
    for wrong in ({"version": "2026.9.5"}, {"integrity": "sha512-other"}, {"package": "synology-chat"},
                  {"native_id": "other"}):
        with pytest.raises(PluginStartupFailure):
            driver.evaluate_installs(spec, [_installed(spec, **wrong)])
    with pytest.raises(PluginStartupFailure):
        driver.evaluate_installs(spec, [])
