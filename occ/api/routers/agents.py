from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.routers.deployments import require_no_body
from occ.api.schemas import ResponseSchema, envelope_of
from occ.api.wire import agent_runtime_wire, harness_auth_wire
from occ.commands.agents import AgentCreate, AgentSecretAccess, AgentUpdate
from occ.models import Agent
from occ.selectors.agents import agent_get, agent_list
from occ.selectors.deployments import agent_runtime
from occ.services.agent_lifecycle import agent_delete, agent_start, agent_stop
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create, agent_update
from occ.timestamps import rfc3339

router = Router(tags=["agents"])


class SecretRefOut(ResponseSchema):
    kind: str
    namespaceId: str
    id: str


class HarnessAuthOut(ResponseSchema):
    method: str
    source: SecretRefOut


class PluginApproverOut(ResponseSchema):
    channel: str
    id: str


class AgentOut(ResponseSchema):
    id: str
    namespaceId: str
    name: str
    configurationId: str
    executionMode: str
    harnessAuth: HarnessAuthOut | None
    backendId: str | None
    servicePrincipalId: str
    status: str
    desiredRuntimeState: str
    activeRevisionId: str | None = None
    plugins: dict[str, Any]
    pluginApprovers: list[PluginApproverOut]
    repositoryBindings: list[Any]
    createdAt: str
    updatedAt: str
    # Whether the gateway serves the active revision (responses about one Agent; not in the
    # list): ``status`` is the Agent's lifecycle (active, deleting), this is its runtime.
    runtime: dict[str, Any] | None = None


class SecretAccessOut(ResponseSchema):
    agentId: str
    servicePrincipalId: str
    secretIds: list[str]


def agent_wire(agent: Agent) -> dict[str, Any]:
    """The public Agent. Staged initial workspace files are never returned."""
    data: dict[str, Any] = {
        "id": agent.id,
        "namespaceId": agent.namespace_id,
        "name": agent.name,
        "configurationId": agent.configuration_id,
        "executionMode": agent.execution_mode,
        "harnessAuth": harness_auth_wire(agent.harness_auth_method, agent.namespace_id, agent.harness_secret_id),
        "backendId": agent.backend_id,
        "servicePrincipalId": agent.service_principal.id,
        "status": agent.status,
        "desiredRuntimeState": agent.desired_runtime_state,
    }
    if agent.active_revision_id is not None:
        data["activeRevisionId"] = agent.active_revision_id
    data.update({
        "plugins": agent.plugins,
        "pluginApprovers": agent.plugin_approvers,
        "repositoryBindings": agent.repository_bindings,
        "createdAt": rfc3339(agent.created_at),
        "updatedAt": rfc3339(agent.updated_at),
    })
    return data


def one_agent_wire(agent: Agent) -> dict[str, Any]:
    """A response about one Agent: the public Agent and whether its gateway serves it."""
    return {**agent_wire(agent), "runtime": agent_runtime_wire(agent_runtime(agent))}


AgentEnvelope = envelope_of(AgentOut, "AgentEnvelope")

@router.get("/namespaces/{namespace_id}/agents", response={200: envelope_of(list[AgentOut], "AgentListEnvelope")})
def list_agents(request: ApiRequest, namespace_id: str) -> JsonResponse:
    return respond([agent_wire(agent) for agent in agent_list(actor=request.auth, namespace_id=namespace_id)])


@router.post("/namespaces/{namespace_id}/agents", response={201: AgentEnvelope})
def create_agent(request: ApiRequest, namespace_id: str, payload: AgentCreate) -> JsonResponse:
    agent = agent_create(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(one_agent_wire(agent), status=201)


@router.get("/namespaces/{namespace_id}/agents/{agent_id}", response={200: AgentEnvelope})
def get_agent(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    return respond(one_agent_wire(agent_get(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)))


@router.patch("/namespaces/{namespace_id}/agents/{agent_id}", response={200: AgentEnvelope})
def update_agent(request: ApiRequest, namespace_id: str, agent_id: str, payload: AgentUpdate) -> JsonResponse:
    agent = agent_update(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id, command=payload)
    return respond(one_agent_wire(agent))


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/secret-access",
             response={200: envelope_of(SecretAccessOut, "SecretAccessEnvelope")})
def grant_secret_access(request: ApiRequest, namespace_id: str, agent_id: str,
                        payload: AgentSecretAccess) -> JsonResponse:
    grant = agent_secret_access_grant(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                                      command=payload)
    return respond({"agentId": grant.agent.id, "servicePrincipalId": grant.service_principal_id,
                    "secretIds": grant.secret_ids})


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/stop", response={202: AgentEnvelope})
def stop_agent(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    """Bodyless: record ``desiredRuntimeState: stopped``; the worker stops the runtime."""
    require_no_body(request)
    return respond(one_agent_wire(agent_stop(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)),
                   status=202)


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/start", response={202: AgentEnvelope})
def start_agent(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    """Bodyless: record ``desiredRuntimeState: running``; the worker starts the Agent again on
    the revision it last ran (``activeRevisionId`` is set once it serves). Needs
    ``agent:operate`` and what running that revision needs (``agent:deploy``, read on its
    Configuration, ``secret:operate`` on its Secrets for the caller and the Agent). Repeating it
    while a start is pending, or on a running Agent, changes nothing. 409 ``AGENT_DELETING``,
    ``NAMESPACE_NOT_READY``, or ``RESOURCE_CONFLICT`` (the Agent never ran: deploy it; a
    provisioning owns it; a Secret of its last revision is gone)."""
    require_no_body(request)
    return respond(one_agent_wire(agent_start(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)),
                   status=202)


@router.delete("/namespaces/{namespace_id}/agents/{agent_id}", response={202: AgentEnvelope})
def delete_agent(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    """``status: deleting``; the worker tears the runtime down and then removes the Agent."""
    return respond(one_agent_wire(agent_delete(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)),
                   status=202)
