"""The plugin picker as a page shows it (Create Agent and the Plugins tab include it): its
context, a catalog entry's detail pane and the policy controls generated from the driver's
capabilities.

Nothing here reads the database or the catalog: the views call the discovery services and
hand their results to these helpers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from console.forms.plugin_picker import approvers_text, entry_document, parse_selections
from occ.documents import APPROVAL_MODES, DRIVER_POLICY, TOOL_DEFAULTS
from occ.drivers.plugins.base import (
    CatalogEntry,
    Link,
    PluginTool,
    PolicyCapabilities,
)

APPROVERS_HINT = ("Slack user IDs (U456 or W456, or team:T123:user:U456), separated by commas or spaces. "
                  "Only they may approve plugin actions that need approval.")
APPROVAL_LABELS = {
    "provider_default": "Provider default",
    "all_actions": "Every action",
    "write_actions": "Write actions",
    "none": "No additional approval",
}
REVIEWER_LABELS = {"human": "Human", "auto": "Automatic review"}
WRITE_ACTIONS_HINT = ("Write actions are those that create, change or delete, and any action without "
                      "read-only metadata.")
CODE_MESSAGES = {
    "PLUGIN_DISCOVERY_CREDENTIALS_REJECTED": ("The token was rejected, or it has no plugin access. "
                                              "Check the credential."),
    "PLUGIN_DISCOVERY_RATE_LIMITED": "The plugin catalog is limiting requests. Try again in a minute.",
    "PLUGIN_DISCOVERY_UNAVAILABLE": ("The plugin catalog could not be reached. "
                                     "Check the server's plugin service access."),
    "PLUGIN_DISCOVERY_INVALID_RESPONSE": "The plugin catalog answered with something OCC cannot use. Try again later.",
    "PLUGIN_DISCOVERY_CREDENTIAL_MISSING": ("This Agent has no bound service account token to browse with. "
                                            "Saved selections can still be edited."),
    "NOT_IMPLEMENTED": "This installation's plugin driver does not offer catalog browsing.",
    "FORBIDDEN": "Plugin discovery needs permission to create or edit Agents here (and to use the credential). "
                 "Saved selections can still be edited.",
}


def picker_urls(namespace_id: str, agent_id: str = "") -> dict[str, str]:
    if agent_id:
        args = [namespace_id, agent_id]
        return {name: reverse(f"console:agent-plugins-{name}", args=args)
                for name in ("browse", "detail", "tools", "save")}
    return {name: reverse(f"console:agent-new-plugins-{name}", args=[namespace_id])
            for name in ("browse", "detail", "tools")}


def picker_context(namespace_id: str, selections_json: str, *, agent_id: str = "", editable: bool = True,
                   capabilities: PolicyCapabilities | None = None, credential: str = "",
                   secrets: list[Any] | None = None, plugin_approvers: str = "") -> dict[str, Any]:
    """The context of the whole picker section (Create Agent and the Plugins tab include it).
    ``plugin_approvers``: the Agent's default approvers as the field shows them."""
    selections = parse_selections(selections_json) or {}
    return {"picker_urls": picker_urls(namespace_id, agent_id), "picker": {
        "selections_json": selections_json or "{}", "secrets": secrets or [],
        "count": len(selections), "agent_id": agent_id, "editable": editable, "capabilities": capabilities,
        "credential": credential or ("none" if capabilities is None else capabilities.discovery_credential),
        "save_hint": ("Changes are saved when you choose Save plugin selections." if agent_id
                      else "Changes are saved when you create the Agent."),
        "agent_approvers": capabilities is not None and capabilities.approvers.agent,
        "plugin_approvers": plugin_approvers, "approvers_hint": APPROVERS_HINT,
        "known_json": "{}",
        "deployment_note": capabilities.deployment_note if capabilities is not None else None,
    }}



def badge(selections: Mapping[str, Any], entry_id: str, available: bool = True) -> str:
    if entry_id in selections:
        return "Enabled" if selections[entry_id].get("enabled") is not False else "Disabled"
    return "Not selected" if available else "Unavailable"


# --- controls generated from the capabilities -----------------------------------------------------


@dataclass
class Control:
    """One control: ``path`` inside the selection (JSON), the current value ("" inherits).
    ``kind``: ``select`` (``options``, with ``unsupported`` values shown but not choosable),
    ``approvers`` (a text field of Slack ids, written as a list) or ``reviewer-all`` (a button
    that moves to the plugin's own reviewer: the driver sets reviewers only for all tools)."""

    id: str
    label: str
    path: str
    value: str
    options: list[tuple[str, str]] = field(default_factory=list)
    hint: str = ""
    kind: str = "select"
    unsupported: frozenset[str] = frozenset()
    target: str = ""


@dataclass
class ToolRow:
    tool: PluginTool
    controls: list[Control]
    disabled: bool = False


@dataclass
class Detail:
    entry: CatalogEntry
    entry_json: str
    selection: dict[str, Any] | None
    selectable: bool
    unsupported_reason: str
    plugin_controls: list[Control] = field(default_factory=list)
    driver_controls: list[Control] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    policies_disabled: bool = False  # the plugin is selected but disabled: its policies do not apply


def _value(document: Mapping[str, Any] | None, key: str) -> str:
    if not document or key not in document:
        return ""
    value = document[key]
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _dom_id(*parts: str) -> str:
    return "pp-" + "-".join("".join(ch if ch.isalnum() else "_" for ch in part) for part in parts)


def _approval_control(prefix: list[str], document: Mapping[str, Any] | None, supported: tuple[str, ...], *,
                      inherit: str, dom: str) -> Control:
    """Every approval mode, the ones this driver does not support marked and not choosable
    (a stored one stays visible as the current value)."""
    unsupported = frozenset(m for m in APPROVAL_MODES if m not in supported)
    options = [("", inherit)] + [(m, APPROVAL_LABELS.get(m, m) + (" (unsupported)" if m in unsupported else ""))
                                 for m in APPROVAL_MODES]
    hints = []
    if "write_actions" in supported and len(prefix) == 1:
        hints.append(WRITE_ACTIONS_HINT)  # once, at the plugin's level: not repeated under every tool
    if unsupported and len(prefix) == 1:
        hints.append("Not supported by this installation's plugin driver: "
                     + ", ".join(APPROVAL_LABELS[m] for m in APPROVAL_MODES if m in unsupported) + ".")
    return Control(_dom_id(dom, "approval"), "Require approval for", json.dumps([*prefix, "approval"]),
                   _value(document, "approval"), options, hint=" ".join(hints), unsupported=unsupported)


def _scope_controls(prefix: list[str], document: Mapping[str, Any] | None, scope: Any, *, inherit: str,
                    dom: str, plugin_reviewer: str = "") -> list[Control]:
    controls: list[Control] = []
    if scope.enabled:
        controls.append(Control(_dom_id(dom, "enabled"), "Tools enabled" if not prefix[1:] else "Enable tool",
                                json.dumps([*prefix, "enabled"]), _value(document, "enabled"),
                                [("", inherit), ("true", "Enabled"), ("false", "Disabled")]))
    if scope.approval:
        controls.append(_approval_control(prefix, document, scope.approval, inherit=inherit, dom=dom))
    if scope.reviewer:
        label = "Default reviewer" if len(prefix) == 1 else "Reviewer"
        controls.append(Control(_dom_id(dom, "reviewer"), label, json.dumps([*prefix, "reviewer"]),
                                _value(document, "reviewer"),
                                [("", "Inherit Harness reviewer" if len(prefix) == 1 else inherit)]
                                + [(r, REVIEWER_LABELS.get(r, r)) for r in scope.reviewer]))
    elif plugin_reviewer:
        # A reviewer per tool is not supported, one for all of the plugin's tools is.
        controls.append(Control(_dom_id(dom, "reviewer-all"), "Set reviewer for all tools", "", "",
                                kind="reviewer-all", target=plugin_reviewer))
    return controls


def _approvers_control(path: list[str], document: Mapping[str, Any] | None, *, label: str, dom: str) -> Control:
    return Control(_dom_id(dom, "approvers"), label, json.dumps(path),
                   approvers_text((document or {}).get(path[-1])), kind="approvers",
                   hint="Slack user IDs, separated by commas. Empty: inherit the Agent's default plugin approvers.")


def detail_of(entry: CatalogEntry, selections: Mapping[str, Any], capabilities: PolicyCapabilities | None) -> Detail:
    selection = selections.get(entry.id)
    reason = ""
    if capabilities is None:
        reason = "This installation does not support plugin policy editing."
    elif not entry.available:
        reason = entry.unavailable_reason or "This plugin is not available."
    elif not entry.remote_id and selection is None:
        reason = "Find this plugin under Available to add it."
    elif entry.tools is None and capabilities.discovery_credential == "required" and not entry.selectable_without_tools:
        reason = "Load its tools first: a hosted plugin becomes selectable once its tools are known."
    detail = Detail(entry=entry, entry_json=json.dumps(entry_document(entry)), selection=selection,
                    selectable=not reason, unsupported_reason=reason,
                    policies_disabled=selection is not None and selection.get("enabled") is False)
    detail.links = [Link(label, url) for label, url in (("Website", entry.website_url),
                                                        ("Privacy policy", entry.privacy_policy_url),
                                                        ("Terms of service", entry.terms_of_service_url)) if url]
    if capabilities is not None and selection is not None:
        defaults = selection.get(TOOL_DEFAULTS) if isinstance(selection.get(TOOL_DEFAULTS), dict) else None
        detail.plugin_controls = _scope_controls([TOOL_DEFAULTS], defaults, capabilities.tool_defaults,
                                                 inherit="Inherit", dom=entry.id)
        if capabilities.approvers.plugin:
            detail.plugin_controls.append(_approvers_control(["approvers"], selection, label="Plugin approvers",
                                                             dom=entry.id))
        policy = selection.get(DRIVER_POLICY) if isinstance(selection.get(DRIVER_POLICY), dict) else None
        properties = capabilities.driver_policy_schema.get("properties") or {}
        for name, schema in properties.items():
            if not isinstance(schema, Mapping):
                continue
            title = str(schema.get("title") or name)
            if schema.get("type") == "boolean":
                options = [("", "Inherit"), ("true", "Enabled"), ("false", "Disabled")]
            elif isinstance(schema.get("enum"), list):
                options = [("", "Inherit")] + [(str(v), str(v)) for v in schema["enum"]]
            else:
                continue
            detail.driver_controls.append(Control(_dom_id(entry.id, "dp", name), title,
                                                  json.dumps([DRIVER_POLICY, name]), _value(policy, name), options))
    return detail


def tool_rows(entry: CatalogEntry, selection: Mapping[str, Any] | None,
              capabilities: PolicyCapabilities | None) -> list[ToolRow]:
    found = selection.get("tools") if selection else None
    tools: dict[str, Any] = found if isinstance(found, dict) else {}
    plugin_reviewer = (_dom_id(entry.id, "reviewer") if capabilities is not None and capabilities.tool_defaults.reviewer
                       else "")
    rows = []
    for tool in entry.tools or ():
        controls: list[Control] = []
        if capabilities is not None and selection is not None:
            dom = f"{entry.id}-{tool.id}"
            controls = _scope_controls(["tools", tool.id], tools.get(tool.id), capabilities.tools,
                                       inherit="Inherit plugin policy", dom=dom, plugin_reviewer=plugin_reviewer)
            if capabilities.approvers.tools:
                controls.append(_approvers_control(["tools", tool.id, "approvers"], tools.get(tool.id),
                                                   label="Tool approvers", dom=dom))
        rows.append(ToolRow(tool=tool, controls=controls,
                            disabled=selection is not None and selection.get("enabled") is False))
    return rows
