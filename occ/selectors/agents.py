"""Agent reads. Lists load once and filter per item in memory: no query per Agent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from django.db.models import F

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

# The columns an Agent's public view needs; staged workspace files are never among them.
AGENT_ROW_FIELDS = (
    "id", "namespace_id", "name", "configuration_id", "execution_mode", "harness_auth_method",
    "harness_secret_id", "backend_id", "plugins", "plugin_approvers", "repository_bindings",
    "desired_runtime_state", "status", "active_revision_id", "created_at", "updated_at",
)


def agent_row(agent: Agent) -> dict[str, Any]:
    """An Agent instance as the row ``agent_list`` returns."""
    row = {name: getattr(agent, name) for name in AGENT_ROW_FIELDS}
    row["service_principal_id"] = agent.service_principal.id
    return row


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


def agent_list(*, actor: Actor, namespace_id: str) -> list[dict[str, Any]]:
    """The Namespace's Agents the actor may read exactly (``agent:read`` on each), as rows.

    Rows rather than model instances: building 100 Agents and their principals as objects
    was half the cost of the request (docs/performance.md).
    """
    scope = agent_list_scope(actor=actor, namespace_id=namespace_id)
    rows = (
        Agent.objects.filter(namespace_id=scope.namespace_id)
        .order_by("created_at", "id")
        .values(*AGENT_ROW_FIELDS, service_principal_id=F("service_principal__id"))
    )
    return [row for row in rows if scope.readable(row["id"])]


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
