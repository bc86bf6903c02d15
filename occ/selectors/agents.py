"""Agent reads. Lists load once and filter per item in memory: no query per Agent."""

from __future__ import annotations

from typing import Any

from django.db.models import F

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import Agent
from occ.services.agents import get_agent
from occ.services.checks import get_live_namespace

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


def agent_list(*, actor: Actor, namespace_id: str) -> list[dict[str, Any]]:
    """The Namespace's Agents the actor may read exactly (``agent:read`` on each), as rows.

    Rows rather than model instances: building 100 Agents and their principals as objects
    was half the cost of the request (docs/performance.md).
    """
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    rows = (
        Agent.objects.filter(namespace=namespace)
        .order_by("created_at", "id")
        .values(*AGENT_ROW_FIELDS, service_principal_id=F("service_principal__id"))
    )
    return [
        row for row in rows
        if allowed(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=row["id"])
    ]


def agent_get(*, actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    authorize(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    return agent
