"""Agent reads. Lists load once and filter per item in memory: no query per Agent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in, authorize
from occ.models import Agent, DesiredRuntimeState, ExecutionMode, Namespace
from occ.selectors.namespaces import get_live_namespace


def get_agent(namespace: Namespace, agent_id: str, *, for_update: bool = False) -> Agent:
    """The Agent under its exact Namespace, or NotFound (a mismatched owner is not revealed)."""
    qs = Agent.objects.filter(namespace=namespace, id=agent_id).select_related("service_principal")
    if for_update:
        qs = qs.select_for_update(of=("self",))
    agent = qs.first()
    if agent is None:
        raise NotFound("The Agent does not exist.")
    return agent


@dataclass(frozen=True)
class AgentListScope:
    """The Agents of one live Namespace that one actor may read: the Namespace read was
    authorized, and ``readable`` says for each Agent id whether ``agent:read`` allows it."""

    namespace_id: str
    readable: Callable[[str], bool]


def agent_list_scope(*, actor: Actor, namespace_id: str) -> AgentListScope:
    """Authorize reading the Namespace's list; the per-Agent filter every list applies."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    return AgentListScope(namespace.id, allowed_in(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id))


def agent_list(*, actor: Actor, namespace_id: str) -> list[Agent]:
    """The Namespace's Agents the actor may read exactly (``agent:read`` on each), oldest first,
    each with its service principal: one query however many. The staged initial workspace files
    are left deferred: no list shows them."""
    scope = agent_list_scope(actor=actor, namespace_id=namespace_id)
    agents = (
        Agent.objects.filter(namespace_id=scope.namespace_id)
        .select_related("service_principal")
        .defer("initial_workspace_files")
        .order_by("created_at", "id")
    )
    return [agent for agent in agents if scope.readable(agent.id)]


@dataclass(frozen=True, slots=True)
class AgentSummary:
    """One line of an Agents list: what a person picks an Agent by."""

    id: str
    name: str
    execution_mode: str
    desired_runtime_state: str
    active_revision_id: str | None
    created_at: datetime

    def get_execution_mode_display(self) -> str:
        """The mode's label, as ``Agent.get_execution_mode_display`` names it."""
        return ExecutionMode(self.execution_mode).label

    def get_desired_runtime_state_display(self) -> str:
        return DesiredRuntimeState(self.desired_runtime_state).label


_SUMMARY_FIELDS = tuple(field.name for field in fields(AgentSummary))


def agent_summaries(*, actor: Actor, namespace_id: str) -> list[AgentSummary]:
    """The readable Agents of the Namespace, oldest first, with the few columns a list shows
    (one query, no JSON column read)."""
    scope = agent_list_scope(actor=actor, namespace_id=namespace_id)
    rows = Agent.objects.filter(namespace_id=scope.namespace_id).order_by("created_at", "id").values_list(
        *_SUMMARY_FIELDS)
    return [AgentSummary(*row) for row in rows if scope.readable(row[0])]


def agent_get(*, actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    authorize(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    return agent
