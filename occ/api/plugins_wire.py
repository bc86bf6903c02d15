"""Wire rendering of the PluginDriver's values: capabilities (``GET /installation`` and the
Agent-scoped capabilities), catalog pages and entries (discovery), and install warnings.

The shapes are the reference's (camelCase; optional fields omitted when unset)."""

from __future__ import annotations

from typing import Any

from occ.drivers.plugins.base import CatalogEntry, CatalogPage, Link, PluginTool, PolicyCapabilities, ScopeCapabilities


def _scope_wire(scope: ScopeCapabilities) -> dict[str, Any]:
    return {"enabled": scope.enabled, "approval": list(scope.approval), "reviewer": list(scope.reviewer)}


def plugin_policies_wire(capabilities: PolicyCapabilities) -> dict[str, Any]:
    """``capabilities.pluginPolicies``: what the console generates its controls from."""
    return {
        "driver": capabilities.driver.pin.document(),
        "approvers": {"agent": capabilities.approvers.agent, "plugin": capabilities.approvers.plugin,
                      "tools": capabilities.approvers.tools},
        "toolDefaults": _scope_wire(capabilities.tool_defaults),
        "tools": _scope_wire(capabilities.tools),
        "driverPolicySchema": dict(capabilities.driver_policy_schema),
    }


def plugin_capabilities_wire(capabilities: PolicyCapabilities | None) -> dict[str, Any]:
    """The plugin part of ``GET /installation``'s ``capabilities``: absent without a driver."""
    if capabilities is None:
        return {}
    return {"pluginPolicies": plugin_policies_wire(capabilities),
            "pluginDiscovery": {"credential": capabilities.discovery_credential}}


def _link_wire(link: Link) -> dict[str, str]:
    return {"label": link.label, "url": link.url}


def _optional(out: dict[str, Any], **fields: Any) -> dict[str, Any]:
    out.update({key: value for key, value in fields.items() if value is not None})
    return out


def plugin_tool_wire(tool: PluginTool) -> dict[str, Any]:
    return _optional({"id": tool.id, "ownerId": tool.owner_id, "name": tool.name, "available": tool.available},
                     description=tool.description, unavailableReason=tool.unavailable_reason,
                     writes=tool.writes, destructive=tool.destructive)


def plugin_entry_wire(entry: CatalogEntry) -> dict[str, Any]:
    out = _optional({"id": entry.id, "remoteId": entry.remote_id, "name": entry.name,
                     "available": entry.available, "selectableWithoutTools": entry.selectable_without_tools,
                     "tools": None if entry.tools is None else [plugin_tool_wire(t) for t in entry.tools]},
                    description=entry.description, logoUrl=entry.logo_url, websiteUrl=entry.website_url,
                    privacyPolicyUrl=entry.privacy_policy_url, termsOfServiceUrl=entry.terms_of_service_url,
                    unavailableReason=entry.unavailable_reason)
    if entry.unavailable_help is not None:
        out["unavailableHelp"] = _link_wire(entry.unavailable_help)
    return out


def plugin_page_wire(page: CatalogPage) -> dict[str, Any]:
    out: dict[str, Any] = {"plugins": [plugin_entry_wire(e) for e in page.plugins], "nextCursor": page.next_cursor}
    if page.setup is not None:
        out["setup"] = {"message": page.setup.message, "links": [_link_wire(link) for link in page.setup.links]}
    return out
