"""The Agents list of a Namespace: search, empty and error states, one table fragment.

The list is the selector's ``agent_summaries`` (the few columns a list shows, one query
however many Agents), sorted by name, and for the Agents shown their health (``agent_health``:
runtime state, model, version, last deploy) for ``console/agents/list.html``. With
``HX-Request`` (the search box, and the table re-reading itself: every few seconds while an
Agent is starting or stopping, else every half minute) only the ``#agents-table`` fragment
is rendered.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import DatabaseError
from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from console.common import ConsoleRequest, console_view, current, render_page
from console.pages.refusals import CREATE_AGENT_REFUSED
from occ.errors import Forbidden, OccError, UnknownOutcome
from occ.selectors.agent_list import agent_health
from occ.selectors.agents import AgentSummary, agent_summaries
from occ.selectors.permissions import may_provision

PAGE_TEMPLATE = "console/agents/list.html"
QUERY_MAX_CHARS = 200
POLL_SECONDS_BUSY = 5  # while an Agent is starting or stopping
POLL_SECONDS_IDLE = 30  # a gateway can still fail any time


def search_text(raw: str | None) -> str:
    return (raw or "").strip()[:QUERY_MAX_CHARS]


def matching(agents: Iterable[AgentSummary], query: str) -> list[AgentSummary]:
    """Agents whose name or id contains ``query``, ignoring case, sorted by name then id (as the
    reference console lists them); every one when ``query`` is empty."""
    needle = query.casefold()
    found = [agent for agent in agents if needle in agent.name.casefold() or needle in agent.id.casefold()]
    return sorted(found, key=lambda agent: (agent.name.casefold(), agent.id))


@require_GET
@console_view
def agents(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    console = current(request)
    query = search_text(request.GET.get("q"))
    context: dict[str, Any] = {"console": console, "nav": "agents", "q": query, "namespace_id": namespace_id,
                               "agents": [], "total": 0, "load_error": None, "request_id": console.request_id,
                               "create_refused": "" if may_provision(console.actor, namespace_id)
                               else CREATE_AGENT_REFUSED}
    status = 200
    try:
        rows = agent_summaries(actor=console.actor, namespace_id=namespace_id)
    except (OccError, DatabaseError) as exc:
        # A failed read is an error state, never "No Agents yet". HTMX searches and denials
        # go through the shell's error handling (toast fragment, denial audit).
        if request.htmx or isinstance(exc, Forbidden):
            raise
        error = exc if isinstance(exc, OccError) else UnknownOutcome("The database did not answer.")
        context["load_error"] = error
        status = error.status
    else:
        context["total"] = len(rows)
        context["agents"] = agent_health(console.actor, namespace_id, matching(rows, query))
        busy = any(row.transitional for row in context["agents"])
        context["poll_seconds"] = POLL_SECONDS_BUSY if busy else POLL_SECONDS_IDLE
    return render_page(request, PAGE_TEMPLATE, context, partial="agents-table", status=status)


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents", agents, name="agents"),
]
