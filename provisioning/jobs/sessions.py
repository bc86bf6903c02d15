"""The session index (issue 29): which Agents the periodic pass asks, and one Agent's refresh.

The pass only lists the Agents that should have a gateway serving and sends one task per Agent
(``provisioning.refresh_agent_sessions``): each call to a gateway is bounded by
``OCC_GATEWAY_RPC_TIMEOUT_SECONDS``, and a gateway that is down costs only its own task, never
the pass or another Agent's refresh.
"""

from __future__ import annotations

from occ.models import Agent, AgentStatus, DesiredRuntimeState
from occ.services.agent_sessions import agent_sessions_refresh


def running_agent_ids() -> list[str]:
    return list(Agent.objects.filter(status=AgentStatus.ACTIVE, desired_runtime_state=DesiredRuntimeState.RUNNING,
                                     active_revision__isnull=False).order_by("id").values_list("id", flat=True))


def refresh_agent_sessions(agent_id: str) -> int | None:
    return agent_sessions_refresh(agent_id=agent_id)
