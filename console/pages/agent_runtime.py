"""The models of the Agent page's Runtime panel and Logs tab (``console.views.agent_runtime``
serves them; ``console.pages.agent_screen`` puts them in the page's context).

Both show only what the compute driver returned: the observation (``occ.selectors.runtime``)
and log lines already redacted of every secret value (``occ.services.agent_logs``).
"""

from __future__ import annotations

from typing import Any, Protocol

from occ.errors import DependencyUnavailable, Forbidden, NotImplementedYet
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import BUDGET_EXCEEDED, Agent, AgentStatus, DesiredRuntimeState
from occ.selectors.permissions import may_read_logs
from occ.selectors.runtime import observe
from occ.services.agent_logs import agent_logs_read
from occ.services.audit import audit_denial


class Screen(Protocol):
    """The part of ``console.pages.agent_screen.Screen`` these models read."""

    agent: Agent
    actor: Actor

    @property
    def ids(self) -> dict[str, str]: ...

    @property
    def urls(self) -> dict[str, str]: ...

    def tab_url(self, tab: str, **params: str) -> str: ...


NO_OPERATE = "You may not see this Agent's runtime: it needs operate:agent on the Agent."
NO_LOGS = "You may not read this Agent's logs: ask an administrator for read_logs:agent on it."


def runtime_context(screen: Screen) -> dict[str, Any]:
    """The Runtime panel's model; the driver is asked only when the person may see it."""
    agent = screen.agent
    if not allowed(screen.actor, Action.OPERATE, Kind.AGENT, namespace_id=agent.namespace_id, resource_id=agent.id):
        return {"hidden": NO_OPERATE, "poll": False}
    reading = observe(screen.actor, agent)
    seen = reading.observation
    wants_stopped = agent.desired_runtime_state == DesiredRuntimeState.STOPPED
    # A deleting Agent's runtime is being torn down and the Agent is about to be gone: the
    # header's deletion progress watches it (and returns to the list); this panel reads once.
    deleting = agent.status == AgentStatus.DELETING
    if seen is None:
        return {"unavailable": reading.unavailable, "poll": reading.supported and not deleting}
    paused = seen.state == "stopped" and agent.stopped_reason == BUDGET_EXCEEDED  # the header's pill, here too
    return {
        "state": "paused" if paused else seen.state,
        "since": seen.since, "observed_at": seen.observed_at, "restarts": seen.restarts,
        "crash_loop": seen.crash_loop, "exit_status": seen.exit_status,
        "revision_id": seen.revision_id, "revision_number": reading.revision_number,
        "serving": seen.state in ("running", "starting"),
        "memory_bytes": seen.memory_bytes, "cpu_percent": seen.cpu_percent,
        "wants_stopped": wants_stopped,
        # Crashed while it should run: the supervisor restarts it; stopped and meant to be: nothing to watch.
        "poll": not deleting and not (wants_stopped and seen.state == "stopped"),
    }


def logs_context(screen: Screen, *, follow: str | None = None) -> dict[str, Any]:
    """The Logs tab's model: a new view of the log (audited), or a follow step."""
    agent = screen.agent
    if not may_read_logs(screen.actor, agent):
        return {"denied": NO_LOGS}
    try:
        view = agent_logs_read(actor=screen.actor, follow=follow, **screen.ids)
    except Forbidden as exc:
        if exc.denial is not None:
            audit_denial(exc.denial, actor=screen.actor)
        return {"denied": NO_LOGS}
    except DependencyUnavailable as exc:
        return {"error": exc.message, "retry_url": screen.tab_url("logs")}
    except NotImplementedYet as exc:
        return {"denied": exc.message}
    return {"view": view, "lines": view.lines, "follow_url": f"{screen.urls['logs']}?follow={view.follow}"}
