"""The ``openclaw`` PluginDriver: a curated catalog, no credential.

The catalog is ``occ.drivers.plugins.catalog``'s committed data (the pinned runtime's bundled plugins and
an allowlist of npm plugins at exact versions); ``OCC_OPENCLAW_PLUGIN_CATALOG`` may name
another file of the same shape. Discovery filters and pages it without verifying tool or
account access. Selection keys are ``occ-plugin:<native id>``.

Policy: plugin and tool enablement; approval ``provider_default`` or ``none`` only (the
runtime has no per-plugin approval step to map ``all_actions`` or ``write_actions`` onto, so
validation rejects them, as it rejects reviewers, approvers on a plugin or a tool, and any
``driverPolicy`` field). Translation writes ``plugins.entries.<id>.enabled`` and the tool
grants and denies (``occ.openclaw.plugins``); the npm plugins are installed by the compute
driver before the gateway starts.
"""

from __future__ import annotations

import base64
import binascii
import json
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from occ.documents import (
    DRIVER_POLICY,
    TOOL_DEFAULTS,
    ApprovalMode,
    PluginApprover,
    PluginSelection,
    PluginWarning,
    Selections,
    ToolPolicy,
)
from occ.drivers.plugins.base import (
    ApproverCapabilities,
    CatalogEntry,
    CatalogPage,
    DiscoveryCredential,
    DiscoveryQuery,
    DriverIdentity,
    InstallOutcome,
    NativePlugin,
    NpmSource,
    PluginDriver,
    PluginNotFound,
    PluginRuntimeSpec,
    PluginStartupFailure,
    PluginTool,
    PolicyCapabilities,
    PolicyProblem,
    ScopeCapabilities,
    SetupGuidance,
)
from occ.drivers.plugins.catalog import Catalog, CatalogPlugin, load_catalog
from occ.errors import InvalidRequest
from occ.openclaw.plugins import PluginPolicy, apply_plugin_policies

ID_PREFIX = "occ-plugin:"
PAGE_SIZE = 20
SUPPORTED_APPROVAL: tuple[ApprovalMode, ...] = ("provider_default", "none")
SETUP = SetupGuidance(
    "The curated catalog lists the plugins this installation's OpenClaw release bundles and the npm plugins it "
    "allows. It does not check credentials or account access: a plugin that needs them says so when the Agent "
    "deploys.")


def selection_id(native_id: str) -> str:
    return ID_PREFIX + native_id


def _this_platform() -> str:
    return platform.system().lower()


def _encode_cursor(offset: int, q: str) -> str:
    raw = json.dumps({"o": offset, "q": q}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, q: str) -> int:
    try:
        document = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset = document["o"]
        same_query = document["q"] == q
    except (ValueError, KeyError, TypeError, binascii.Error):
        offset, same_query = None, False
    if not isinstance(offset, int) or offset <= 0 or not same_query:
        raise InvalidRequest("The cursor does not belong to this search; start again from the first page.")
    return offset


class OpenClawPluginDriver(PluginDriver):
    identity = DriverIdentity("openclaw", "occ.openclaw-curated/1")

    def __init__(self, catalog: Catalog | None = None) -> None:
        configured = getattr(settings, "OCC_OPENCLAW_PLUGIN_CATALOG", "")
        self.catalog = catalog or load_catalog(Path(configured) if configured else None)
        self._plugins = self.catalog.by_id()

    # --- capabilities and discovery -------------------------------------------------------------
    def capabilities(self) -> PolicyCapabilities:
        return PolicyCapabilities(
            driver=self.identity, approvers=ApproverCapabilities(agent=False, plugin=False, tools=False),
            tool_defaults=ScopeCapabilities(enabled=True, approval=SUPPORTED_APPROVAL),
            tools=ScopeCapabilities(enabled=True, approval=SUPPORTED_APPROVAL),
            driver_policy_schema={"type": "object", "properties": {}, "additionalProperties": False},
            discovery_credential="none")

    def _entry(self, plugin: CatalogPlugin) -> CatalogEntry:
        available = plugin.platforms is None or _this_platform() in plugin.platforms
        return CatalogEntry(
            id=selection_id(plugin.native_id), remote_id=plugin.native_id, name=plugin.name,
            description=plugin.description, available=available,
            unavailable_reason=None if available else "This plugin runs only on " + ", ".join(plugin.platforms or ()),
            selectable_without_tools=True,
            tools=tuple(PluginTool(id=tool, owner_id=plugin.native_id, name=tool) for tool in plugin.tools))

    def discover(self, query: DiscoveryQuery, credential: DiscoveryCredential | None = None) -> CatalogPage:
        needle = query.q.strip().casefold()
        matches = [p for p in self.catalog.plugins
                   if not needle or any(needle in text.casefold() for text in
                                        (p.native_id, p.name, p.description or "", *p.categories))]
        offset = 0 if query.cursor is None else _decode_cursor(query.cursor, query.q)
        page = matches[offset:offset + PAGE_SIZE]
        more = offset + PAGE_SIZE < len(matches)
        return CatalogPage(plugins=tuple(self._entry(p) for p in page),
                           next_cursor=_encode_cursor(offset + PAGE_SIZE, query.q) if more else None, setup=SETUP)

    def details(self, remote_id: str, credential: DiscoveryCredential | None = None) -> CatalogEntry:
        plugin = self._plugins.get(remote_id)
        if plugin is None:
            raise PluginNotFound()
        return self._entry(plugin)

    def known_entries(self, selection_ids: Sequence[str]) -> Mapping[str, CatalogEntry]:
        found = {}
        for key in selection_ids:
            plugin = self._plugins.get(key.removeprefix(ID_PREFIX)) if key.startswith(ID_PREFIX) else None
            if plugin is not None:
                found[key] = self._entry(plugin)
        return found

    # --- validation -----------------------------------------------------------------------------
    def validate_policies(self, selections: Selections,
                          plugin_approvers: Sequence[PluginApprover] | None = None) -> list[PolicyProblem]:
        problems: list[PolicyProblem] = []
        for key, selection in selections.items():
            base: tuple[str | int, ...] = ("plugins", key)
            plugin = self._plugins.get(key.removeprefix(ID_PREFIX)) if key.startswith(ID_PREFIX) else None
            if plugin is None:
                problems.append(PolicyProblem(base, "Unknown OpenClaw plugin selection."))
                continue
            if plugin.platforms is not None and _this_platform() not in plugin.platforms:
                problems.append(PolicyProblem(base, f"{plugin.name} does not run on this installation's platform."))
            if selection.approvers is not None:
                problems.append(PolicyProblem((*base, "approvers"),
                                              "OpenClaw plugins do not support plugin approvers."))
            for name in selection.driver_policy or {}:
                problems.append(PolicyProblem((*base, DRIVER_POLICY, name),
                                              "The OpenClaw plugin driver has no driver policy fields.",
                                              "UNKNOWN_FIELD"))
            if selection.tool_defaults is not None:
                problems.extend(_scope_problems((*base, TOOL_DEFAULTS), selection.tool_defaults))
            for tool, policy in selection.tools.items():
                if tool not in plugin.tools:
                    problems.append(PolicyProblem((*base, "tools", tool), f"{plugin.name} has no tool {tool}."))
                    continue
                problems.extend(_scope_problems((*base, "tools", tool), policy))
        return problems

    # --- startup --------------------------------------------------------------------------------
    def resolve(self, selections: Selections) -> PluginRuntimeSpec:
        natives = {}
        for key, _selection in selections.items():
            plugin = self._plugins.get(key.removeprefix(ID_PREFIX)) if key.startswith(ID_PREFIX) else None
            if plugin is None:
                raise PluginStartupFailure("PLUGIN_NOT_IN_CATALOG")
            npm = None
            if plugin.source == "npm":
                if not (plugin.package and plugin.version and plugin.integrity):
                    raise PluginStartupFailure("PLUGIN_NOT_IN_CATALOG")  # catalog_from_document refuses these
                npm = NpmSource(plugin.package, plugin.version, plugin.integrity, plugin.force)
            natives[key] = NativePlugin(selection_id=key, native_id=plugin.native_id,
                                        source="npm" if npm else "bundled", npm=npm, tools=plugin.tools)
        return PluginRuntimeSpec(driver=self.identity, selections=dict(selections), natives=natives)

    def translate(self, spec: PluginRuntimeSpec, config: Mapping[str, Any], *,
                  failed: frozenset[str] = frozenset()) -> dict[str, Any]:
        policies = [_native_policy(spec.selections[key], native, failed=key in failed)
                    for key, native in spec.natives.items()]
        return apply_plugin_policies(config, policies)

    def evaluate_installs(self, spec: PluginRuntimeSpec,
                          outcomes: Sequence[InstallOutcome]) -> tuple[PluginWarning, ...]:
        by_selection = {outcome.selection_id: outcome for outcome in outcomes}
        if set(by_selection) - set(spec.natives):
            raise PluginStartupFailure("PLUGIN_INSTALL_UNEXPECTED")
        warnings = []
        for native in spec.installs():
            outcome = by_selection.get(native.selection_id)
            if outcome is None:
                raise PluginStartupFailure("PLUGIN_INSTALL_INCOMPLETE")
            if outcome.status == "rejected":
                warnings.append(PluginWarning(plugin_id=native.selection_id, code="PLUGIN_INSTALL_FAILED"))
            elif outcome.status == "auth_required":
                warnings.append(PluginWarning(plugin_id=native.selection_id, code="PLUGIN_AUTH_REQUIRED"))
            else:
                installed, npm = outcome.installed, native.npm
                if (installed is None or npm is None or installed.native_id != native.native_id
                        or installed.package != npm.package or installed.version != npm.version
                        or installed.integrity != npm.integrity):
                    raise PluginStartupFailure("PLUGIN_VERIFICATION_FAILED")
        return tuple(warnings)


def _scope_problems(base: tuple[str | int, ...], policy: ToolPolicy) -> list[PolicyProblem]:
    problems = []
    if policy.approval is not None and policy.approval not in SUPPORTED_APPROVAL:
        problems.append(PolicyProblem((*base, "approval"),
                                      f"OpenClaw plugins do not support the {policy.approval} approval mode; "
                                      "use provider_default or none."))
    if policy.reviewer is not None:
        problems.append(PolicyProblem((*base, "reviewer"), "OpenClaw plugins do not support choosing a reviewer."))
    if policy.approvers is not None:
        problems.append(PolicyProblem((*base, "approvers"), "OpenClaw plugins do not support tool approvers."))
    return problems


def _native_policy(selection: PluginSelection, native: NativePlugin, *, failed: bool) -> PluginPolicy:
    """Grants and denies for one selection: a tool's own ``enabled`` beats ``toolDefaults``;
    with neither, the runtime's native default stands (no grant, no deny)."""
    enabled = selection.enabled and not failed
    default = selection.tool_defaults.enabled if selection.tool_defaults else None
    grants, denies = [], []
    if enabled:
        for tool in native.tools:
            override = selection.tools.get(tool)
            effective = override.enabled if override and override.enabled is not None else default
            if effective is True:
                grants.append(tool)
            elif effective is False:
                denies.append(tool)
        if not native.tools and default is not None:
            # Tools not known ahead: the plugin id stands for all of them.
            (grants if default else denies).append(native.native_id)
    return PluginPolicy(native_id=native.native_id, enabled=enabled, grants=tuple(grants), denies=tuple(denies))
