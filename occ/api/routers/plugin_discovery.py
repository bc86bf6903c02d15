"""Plugin discovery API: catalog pages and entry details for Create Agent and for an existing
Agent, and the policy controls an Agent's editor gets. Nothing is stored; every answer is
``Cache-Control: no-store`` (the API boundary sets it)."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.plugins_wire import plugin_entry_wire, plugin_page_wire, plugin_policies_wire
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.plugin_discovery import (
    AgentPluginDetailsDiscovery,
    AgentPluginDiscovery,
    PluginDetailsDiscovery,
    PluginDiscovery,
)
from occ.services.plugin_discovery import (
    agent_plugin_capabilities,
    agent_plugin_details_discover,
    agent_plugins_discover,
    plugin_details_discover,
    plugins_discover,
)

router = Router(tags=["plugins"])


class LinkOut(ResponseSchema):
    label: str
    url: str


class PluginToolOut(ResponseSchema):
    id: str
    ownerId: str
    name: str
    available: bool
    description: str | None = None
    unavailableReason: str | None = None
    writes: bool | None = None
    destructive: bool | None = None


class PluginEntryOut(ResponseSchema):
    id: str
    remoteId: str
    name: str
    available: bool
    selectableWithoutTools: bool
    tools: list[PluginToolOut] | None
    description: str | None = None
    logoUrl: str | None = None
    websiteUrl: str | None = None
    privacyPolicyUrl: str | None = None
    termsOfServiceUrl: str | None = None
    unavailableReason: str | None = None
    unavailableHelp: LinkOut | None = None


class SetupOut(ResponseSchema):
    message: str
    links: list[LinkOut]


class PluginPageOut(ResponseSchema):
    plugins: list[PluginEntryOut]
    nextCursor: str | None
    setup: SetupOut | None = None


class ScopeOut(ResponseSchema):
    enabled: bool
    approval: list[str]
    reviewer: list[str]


class AgentPluginCapabilitiesOut(ResponseSchema):
    driver: dict[str, str]
    approvers: dict[str, bool]
    toolDefaults: ScopeOut
    tools: ScopeOut
    driverPolicySchema: dict[str, Any]
    discoveryCredential: str


PAGE = envelope_of(PluginPageOut, "PluginPageEnvelope")
ENTRY = envelope_of(PluginEntryOut, "PluginEntryEnvelope")


@router.post("/namespaces/{namespace_id}/agents/plugins", response={200: PAGE},
             summary="Browse plugins for a new Agent")
def discover_plugins(request: ApiRequest, namespace_id: str, payload: PluginDiscovery) -> JsonResponse:
    """One catalog page. Needs ``agent:create`` on the Namespace, and ``secret:operate`` on a
    ``secretRef``; a typed ``accessToken`` is used for this call only, never stored."""
    return respond(plugin_page_wire(plugins_discover(actor=request.auth, namespace_id=namespace_id, command=payload)))


@router.post("/namespaces/{namespace_id}/agents/plugins/details", response={200: ENTRY},
             summary="One plugin's details and tools for a new Agent")
def discover_plugin_details(request: ApiRequest, namespace_id: str, payload: PluginDetailsDiscovery) -> JsonResponse:
    entry = plugin_details_discover(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(plugin_entry_wire(entry))


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/plugins/capabilities",
            response={200: envelope_of(AgentPluginCapabilitiesOut, "AgentPluginCapabilitiesEnvelope")},
            summary="The plugin policy controls of an Agent's editor")
def get_agent_plugin_capabilities(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    capabilities = agent_plugin_capabilities(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)
    return respond({**plugin_policies_wire(capabilities), "discoveryCredential": capabilities.discovery_credential})


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/plugins", response={200: PAGE},
             summary="Browse plugins for an existing Agent")
def discover_agent_plugins(request: ApiRequest, namespace_id: str, agent_id: str,
                           payload: AgentPluginDiscovery) -> JsonResponse:
    """One catalog page with the Agent's bound credential. Needs ``agent:read`` and
    ``agent:update``; a hosted catalog also needs ``secret:operate`` on the bound Secret for
    the caller and for the Agent's service principal."""
    page = agent_plugins_discover(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id, command=payload)
    return respond(plugin_page_wire(page))


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/plugins/details", response={200: ENTRY},
             summary="One plugin's details and tools for an existing Agent")
def discover_agent_plugin_details(request: ApiRequest, namespace_id: str, agent_id: str,
                                  payload: AgentPluginDetailsDiscovery) -> JsonResponse:
    entry = agent_plugin_details_discover(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                                          command=payload)
    return respond(plugin_entry_wire(entry))
