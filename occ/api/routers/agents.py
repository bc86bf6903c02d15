from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.query import require_known_query
from occ.api.routers.deployments import require_no_body
from occ.api.routers.secrets import SecretRefOut
from occ.api.schemas import ResponseSchema, envelope_of
from occ.api.wire import agent_runtime_wire, harness_auth_wire
from occ.commands.agents import AgentCreate, AgentSecretAccess, AgentUpdate
from occ.commands.chat import AgentChat
from occ.iam.sign_in import client_address
from occ.models import Agent
from occ.selectors.agent_list import AgentListRow, agent_health
from occ.selectors.agents import agent_get, agent_page
from occ.selectors.configurations import configuration_names as configuration_names_of
from occ.selectors.deployments import agent_runtime
from occ.selectors.runtime import RuntimeReading, agent_runtime_observe
from occ.services.agent_chat import agent_chat, agent_conversation_continue, chat_events
from occ.services.agent_lifecycle import agent_delete, agent_start, agent_stop
from occ.services.agent_logs import agent_logs_read
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create, agent_update
from occ.timestamps import rfc3339

router = Router(tags=["agents"])


class HarnessAuthOut(ResponseSchema):
    method: str
    source: SecretRefOut


class PluginApproverOut(ResponseSchema):
    channel: str
    id: str


class RepositoryBindingOut(ResponseSchema):
    repositoryRef: str
    profile: str


class SmokeConversationOut(ResponseSchema):
    prompt: str
    expect: str


class AgentOut(ResponseSchema):
    id: str
    namespaceId: str
    name: str
    configurationId: str
    configurationName: str = Field(description="The Configuration's name (unique in the Namespace).")
    executionMode: str
    harnessAuth: HarnessAuthOut | None
    backendId: str | None
    servicePrincipalId: str
    status: str
    desiredRuntimeState: str
    stoppedReason: str | None = Field(None, description="Why OCC itself stopped the Agent: budget_exceeded "
                                      "(a budget paused it). Absent otherwise.")
    activeRevisionId: str | None = None
    plugins: dict[str, Any]
    pluginApprovers: list[PluginApproverOut]
    repositoryBindings: list[RepositoryBindingOut]
    smokeConversations: list[SmokeConversationOut]
    rollbackOnFailure: bool = Field(description="A new revision that crash-loops or is not ready within its bound "
                                    "after cutover is rolled back to the one it replaced (ROLLED_BACK).")
    createdAt: str
    updatedAt: str
    # Whether the gateway serves the active revision (responses about one Agent; not in the
    # list): ``status`` is the Agent's lifecycle (active, deleting), this is its runtime.
    runtime: dict[str, Any] | None = None


class SecretAccessOut(ResponseSchema):
    agentId: str
    servicePrincipalId: str
    secretIds: list[str]


def agent_wire(agent: Agent, configuration_names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The public Agent. Staged initial workspace files are never returned. A list passes the
    names of its Agents' Configurations (``configuration_names``), else the one is read."""
    if configuration_names is None:
        configuration_names = configuration_names_of(namespace_id=agent.namespace_id,
                                                     configuration_ids=[agent.configuration_id])
    data: dict[str, Any] = {
        "id": agent.id,
        "namespaceId": agent.namespace_id,
        "name": agent.name,
        "configurationId": agent.configuration_id,
        "configurationName": configuration_names[agent.configuration_id],  # an Agent's is never deleted
        "executionMode": agent.execution_mode,
        "harnessAuth": harness_auth_wire(agent.harness_auth_method, agent.namespace_id, agent.harness_secret_id),
        "backendId": agent.backend_id,
        "servicePrincipalId": agent.service_principal.id,
        "status": agent.status,
        "desiredRuntimeState": agent.desired_runtime_state,
    }
    if agent.stopped_reason:
        data["stoppedReason"] = agent.stopped_reason
    if agent.active_revision_id is not None:
        data["activeRevisionId"] = agent.active_revision_id
    data.update({
        "plugins": agent.plugins,
        "pluginApprovers": agent.plugin_approvers,
        "repositoryBindings": agent.repository_bindings,
        "smokeConversations": [conversation.document() for conversation in agent.smoke],
        "rollbackOnFailure": agent.rollback_on_failure,
        "createdAt": rfc3339(agent.created_at),
        "updatedAt": rfc3339(agent.updated_at),
    })
    return data


def one_agent_wire(agent: Agent) -> dict[str, Any]:
    """A response about one Agent: the public Agent and whether its gateway serves it."""
    return {**agent_wire(agent), "runtime": agent_runtime_wire(agent_runtime(agent))}


AgentEnvelope = envelope_of(AgentOut, "AgentEnvelope")


class LastDeployOut(ResponseSchema):
    revisionId: str
    revision: int
    createdAt: str
    status: str | None = Field(description="The deployment's status (queued, running, succeeded, failed); null "
                               "once its record is gone.")


class AgentListItemOut(AgentOut):
    """An Agent of the list with its health, as the console's Agents list shows it."""

    runtime: dict[str, Any] | None = Field(description="As on one Agent; state none when it was never deployed.")
    model: str | None = Field(description="The primary model of the revision it runs; null when none runs or the "
                              "caller may not read that revision.")
    lastDeploy: LastDeployOut | None = Field(description="Its newest revision, when the caller may read it.")


class AgentPageOut(ResponseSchema):
    agents: list[AgentListItemOut]
    nextCursor: str | None


def agent_list_item_wire(agent: Agent, row: AgentListRow, configuration_names: Mapping[str, str]) -> dict[str, Any]:
    last = row.last_deploy
    return {**agent_wire(agent, configuration_names), "runtime": agent_runtime_wire(row.runtime),
            "model": row.model,
            "lastDeploy": None if last is None else {"revisionId": last.revision_id, "revision": last.number,
                                                     "createdAt": rfc3339(last.created_at), "status": last.status}}


class RuntimeObservationOut(ResponseSchema):
    state: Literal["running", "starting", "stopped", "crashed"]
    observedAt: str
    since: str | None
    revisionId: str | None
    revisionNumber: int | None = Field(description="Null when the caller may not read that revision.")
    restarts: int
    memoryBytes: int | None
    cpuPercent: float | None
    crashLoop: bool = Field(default=False, description="True: the gateway keeps exiting without becoming ready "
                            "(RUNTIME_CRASH_LOOP), reported from its second exit.")
    exitStatus: int | None = Field(default=None, description="The status of the gateway's last exit when known "
                                   "(negative: the signal that killed it).")


class RuntimeReadingOut(ResponseSchema):
    agentId: str
    desiredRuntimeState: str
    observation: RuntimeObservationOut | None = Field(description="Null when the compute backend could not "
                                                      "be asked: see unavailable.")
    unavailable: str | None
    supported: bool = Field(description="False: this compute backend never reports on its gateways.")


def runtime_reading_wire(agent: Agent, reading: RuntimeReading) -> dict[str, Any]:
    seen = reading.observation
    observation = None if seen is None else {
        "state": seen.state, "observedAt": rfc3339(seen.observed_at),
        "since": rfc3339(seen.since) if seen.since else None,
        "revisionId": seen.revision_id, "revisionNumber": reading.revision_number, "restarts": seen.restarts,
        "memoryBytes": seen.memory_bytes, "cpuPercent": seen.cpu_percent,
        "crashLoop": seen.crash_loop, "exitStatus": seen.exit_status,
    }
    return {"agentId": agent.id, "desiredRuntimeState": agent.desired_runtime_state, "observation": observation,
            "unavailable": reading.unavailable, "supported": reading.supported}

@router.get("/namespaces/{namespace_id}/agents",
            response={200: envelope_of(AgentPageOut, "AgentPageEnvelope")})
def list_agents(request: ApiRequest, namespace_id: str,
                cursor: str = Query("", max_length=200, description="A nextCursor from the page before."),
                limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The Agents the caller may read (``agent:read`` on each, and ``namespace:read``), oldest
    first, each with its health (the console's Agents list): runtime state, the model and
    revision it runs, its last deploy. Pass ``nextCursor`` as ``cursor`` for the next page; it
    is null on the last. A fixed number of queries per page."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    page = agent_page(actor=request.auth, namespace_id=namespace_id, after=cursor, page_size=limit)
    agents = page.rows
    names = configuration_names_of(namespace_id=namespace_id, configuration_ids=[a.configuration_id for a in agents])
    rows = agent_health(request.auth, namespace_id, agents)
    items = [agent_list_item_wire(agent, row, names) for agent, row in zip(agents, rows, strict=True)]
    return respond({"agents": items, "nextCursor": page.next_cursor})


@router.post("/namespaces/{namespace_id}/agents", response={201: AgentEnvelope})
def create_agent(request: ApiRequest, namespace_id: str, payload: AgentCreate) -> JsonResponse:
    agent = agent_create(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(one_agent_wire(agent), status=201)


@router.get("/namespaces/{namespace_id}/agents/{agent_id}", response={200: AgentEnvelope})
def get_agent(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    return respond(one_agent_wire(agent_get(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)))


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/runtime",
            response={200: envelope_of(RuntimeReadingOut, "RuntimeReadingEnvelope")})
def get_agent_runtime(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    """What the compute driver sees of the Agent's gateway now (the console's Runtime panel):
    state, since, restarts, the revision it serves, memory and CPU. Needs ``agent:read`` and
    ``agent:operate`` on the Agent. Read-only; a backend that cannot be asked is a 200 with
    ``observation: null`` and a fixed message, never driver text."""
    agent, reading = agent_runtime_observe(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)
    return respond(runtime_reading_wire(agent, reading))


class LogViewOut(ResponseSchema):
    lines: list[str] = Field(description="Redacted of every Secret value the gateway may hold; bounded.")
    follow: str = Field(description="Pass as follow for the lines written since (same view, not audited again).")
    viewId: str
    started: bool = Field(description="This call began (and audited) a view of the log.")
    skipped: bool
    reset: bool
    withheld: int


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/logs",
            response={200: envelope_of(LogViewOut, "LogViewEnvelope")})
def get_agent_logs(request: ApiRequest, namespace_id: str, agent_id: str,
                   follow: str = Query("", max_length=1000, description="The follow token of the view "
                                       "to continue.")) -> JsonResponse:
    """The gateway's recent log lines (the console's Logs tab): a new view is audited
    (``agent.logs.viewed``) before any line is read; ``follow`` continues it. Needs
    ``agent:read`` and ``agent:read_logs`` (or ``agent:administer`` unless a Restriction bars it)."""
    require_known_query(request, frozenset({"follow"}))
    view = agent_logs_read(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id, follow=follow or None)
    return respond({"lines": list(view.lines), "follow": view.follow, "viewId": view.view_id, "started": view.started,
                    "skipped": view.skipped, "reset": view.reset, "withheld": view.withheld})


CHAT_STREAM = "text/event-stream"
_CHAT_EVENTS = (
    "Server-sent events, each `event: <name>` and `data: <one JSON object>`: `conversation` "
    "`{\"id\"}` first (send it back as conversationId to go on with this conversation), `token` "
    "`{\"text\"}` as the model streams, then `done` `{}` or one `error` `{\"code\", \"message\"}` "
    "(the gateway or the model failed after the stream began).")


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/chat", response={200: None},
             openapi_extra={"responses": {200: {"description": _CHAT_EVENTS, "content": {
                 CHAT_STREAM: {"schema": {"type": "string"}}}}}})
def chat_with_agent(request: ApiRequest, namespace_id: str, agent_id: str,
                    payload: AgentChat) -> HttpResponse | StreamingHttpResponse:
    """One turn of a conversation with the Agent's running gateway (the console's Chat tab):
    the conversation so far, the person's new message last; the reply streams back. OCC stores
    none of the text. Needs ``agent:invoke`` on the Agent. A conversation is audited once, when
    it starts (``openclaw.agents.conversation.start``); a ``conversationId`` this caller did not
    start with this Agent starts a new one. 409 ``AGENT_NOT_RUNNING`` when the Agent is not
    deployed or is stopped."""
    conversation = agent_conversation_continue(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                                               conversation_id=payload.conversation_id)
    reply = agent_chat(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id, command=payload,
                       client_address=client_address(request))
    events = (event.sse() for event in chat_events(conversation.id, reply, agent_id=agent_id))
    response = StreamingHttpResponse(events, content_type=CHAT_STREAM)
    response["X-Accel-Buffering"] = "no"  # a buffering proxy in front must pass tokens on as they come
    return response


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
