"""Agent reads. Lists load once and filter per item in memory: no query per Agent."""

from __future__ import annotations

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import Agent
from occ.services.agents import get_agent
from occ.services.checks import get_live_namespace


def agent_list(*, actor: Actor, namespace_id: str) -> list[Agent]:
    """The Namespace's Agents the actor may read exactly (``agent:read`` on each)."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    agents = (
        Agent.objects.filter(namespace=namespace)
        .select_related("service_principal")
        .defer("initial_workspace_files")  # staged files are never returned
        .order_by("created_at", "id")
    )
    return [
        agent for agent in agents
        if allowed(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    ]


def agent_get(*, actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    authorize(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    return agent
