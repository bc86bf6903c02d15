from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from django.http import HttpResponse, JsonResponse
from ninja import Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import respond, respond_json_items
from occ.api.routers.deployments import require_no_body
from occ.api.schemas import Name, RequestSchema, ResponseSchema, envelope_of
from occ.models import Agent, ExecutionMode
from occ.models.resources import harness_auth_wire
from occ.selectors.agents import agent_get, agent_list_json, agent_row
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import PLUGIN_APPROVERS_MAX, agent_create, agent_update
from occ.services.deploy import agent_delete, agent_stop
from occ.wire import rfc3339

router = Router(tags=["agents"])

ExecutionModeIn = Literal["embedded", "dedicated"]


class PluginApprover(RequestSchema):
    channel: str
    id: str


class AgentCreate(RequestSchema):
    name: Name
    configurationId: str
    executionMode: ExecutionModeIn | None = None  # omitted: embedded; null is refused
    harnessAuth: dict[str, Any] | None = None
    backendId: str | None = None
    plugins: dict[str, Any] | None = None
    pluginApprovers: Annotated[list[PluginApprover], Field(max_length=PLUGIN_APPROVERS_MAX)] | None = None
    repositoryBindings: list[Any] | None = None
    initialWorkspaceFiles: dict[str, str] | None = None


class AgentUpdate(RequestSchema):
    """Omitted fields keep their value; ``null`` clears one."""

    configurationId: str
    executionMode: ExecutionModeIn | None = None
    harnessAuth: dict[str, Any] | None = None
    backendId: str | None = None
    plugins: dict[str, Any] | None = None
    pluginApprovers: Annotated[list[PluginApprover], Field(max_length=PLUGIN_APPROVERS_MAX)] | None = None
    repositoryBindings: list[Any] | None = None


class AgentOut(ResponseSchema):
    id: str
    namespaceId: str
    name: str
    configurationId: str
    executionMode: str
    harnessAuth: dict[str, Any] | None
    backendId: str | None
    servicePrincipalId: str
    status: str
    desiredRuntimeState: str
    activeRevisionId: str | None = None
    plugins: dict[str, Any]
    pluginApprovers: list[dict[str, str]]
    repositoryBindings: list[Any]
    createdAt: str
    updatedAt: str


class SecretAccessGrantIn(RequestSchema):
    secretIds: list[str]


class SecretAccessOut(ResponseSchema):
    agentId: str
    servicePrincipalId: str
    secretIds: list[str]


def agent_wire(agent: Agent | Mapping[str, Any]) -> dict[str, Any]:
    """The public Agent, from an instance or a row of ``agent_list``. Staged initial
    workspace files are never returned."""
    row = agent_row(agent) if isinstance(agent, Agent) else agent
    namespace_id = row["namespace_id"]
    data: dict[str, Any] = {
        "id": row["id"],
        "namespaceId": namespace_id,
        "name": row["name"],
        "configurationId": row["configuration_id"],
        "executionMode": row["execution_mode"],
        "harnessAuth": harness_auth_wire(row["harness_auth_method"], namespace_id, row["harness_secret_id"]),
        "backendId": row["backend_id"],
        "servicePrincipalId": row["service_principal_id"],
        "status": row["status"],
        "desiredRuntimeState": row["desired_runtime_state"],
    }
    if row["active_revision_id"] is not None:
        data["activeRevisionId"] = row["active_revision_id"]
    data.update({
        "plugins": row["plugins"],
        "pluginApprovers": row["plugin_approvers"],
        "repositoryBindings": row["repository_bindings"],
        "createdAt": rfc3339(row["created_at"]),
        "updatedAt": rfc3339(row["updated_at"]),
    })
    return data


AgentEnvelope = envelope_of(AgentOut, "AgentEnvelope")

# PATCH body field -> agent_update keyword; only fields the caller sent are passed on.
_UPDATE_FIELDS = {
    "executionMode": "execution_mode",
    "harnessAuth": "harness_auth",
    "backendId": "backend_id",
    "plugins": "plugins",
    "pluginApprovers": "plugin_approvers",
    "repositoryBindings": "repository_bindings",
}


def _approvers(approvers: list[PluginApprover] | None) -> list[dict[str, Any]] | None:
    return None if approvers is None else [a.model_dump() for a in approvers]


@router.get("/namespaces/{namespace_id}/agents", response={200: envelope_of(list[AgentOut], "AgentListEnvelope")})
def list_agents(request: ApiRequest, namespace_id: str) -> HttpResponse:
    return respond_json_items(agent_list_json(actor=request.auth, namespace_id=namespace_id))


@router.post("/namespaces/{namespace_id}/agents", response={201: AgentEnvelope})
def create_agent(request: ApiRequest, namespace_id: str, payload: AgentCreate) -> JsonResponse:
    sent = payload.model_fields_set
    agent = agent_create(
        actor=request.auth, namespace_id=namespace_id, name=payload.name,
        configuration_id=payload.configurationId,
        execution_mode=payload.executionMode if "executionMode" in sent else ExecutionMode.EMBEDDED,
        harness_auth=payload.harnessAuth, backend_id=payload.backendId, plugins=payload.plugins,
        plugin_approvers=_approvers(payload.pluginApprovers), repository_bindings=payload.repositoryBindings,
        initial_workspace_files=payload.initialWorkspaceFiles,
    )
    return respond(agent_wire(agent), status=201)


@router.get("/namespaces/{namespace_id}/agents/{agent_id}", response={200: AgentEnvelope})
def get_agent(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    return respond(agent_wire(agent_get(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)))


@router.patch("/namespaces/{namespace_id}/agents/{agent_id}", response={200: AgentEnvelope})
def update_agent(request: ApiRequest, namespace_id: str, agent_id: str, payload: AgentUpdate) -> JsonResponse:
    sent = payload.model_fields_set
    changes: dict[str, Any] = {
        keyword: getattr(payload, field) for field, keyword in _UPDATE_FIELDS.items() if field in sent
    }
    if "plugin_approvers" in changes:
        changes["plugin_approvers"] = _approvers(payload.pluginApprovers)
    agent = agent_update(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                         configuration_id=payload.configurationId, **changes)
    return respond(agent_wire(agent))


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/secret-access",
             response={200: envelope_of(SecretAccessOut, "SecretAccessEnvelope")})
def grant_secret_access(request: ApiRequest, namespace_id: str, agent_id: str,
                        payload: SecretAccessGrantIn) -> JsonResponse:
    grant = agent_secret_access_grant(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                                      secret_ids=payload.secretIds)
    return respond({"agentId": grant.agent.id, "servicePrincipalId": grant.service_principal_id,
                    "secretIds": grant.secret_ids})


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/stop", response={202: AgentEnvelope})
def stop_agent(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    """Bodyless: record ``desiredRuntimeState: stopped``; the worker stops the runtime."""
    require_no_body(request)
    return respond(agent_wire(agent_stop(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)),
                   status=202)


@router.delete("/namespaces/{namespace_id}/agents/{agent_id}", response={202: AgentEnvelope})
def delete_agent(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    """``status: deleting``; the worker tears the runtime down and then removes the Agent."""
    return respond(agent_wire(agent_delete(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)),
                   status=202)
