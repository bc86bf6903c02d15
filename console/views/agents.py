"""The Agents list of a Namespace: search, empty and error states, one table fragment.

The list is the selector's ``agent_summaries`` (the few columns a list shows, one query
however many Agents); the rows are HTML built in one pass, escaped cell by cell, so the
template only places them: measuring a 500-Agent page (bench/console_list_render.py), a
template loop cost more than everything else.
With ``HX-Request`` (the search box) only the ``#agents-table`` fragment is rendered.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from django.db import DatabaseError
from django.http import HttpResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from console.common import ConsoleRequest, console_view, current, render_page
from console.presentation import id_html, sprite_url, time_html
from occ.errors import Forbidden, OccError, UnknownOutcome
from occ.selectors.agents import AgentSummary, agent_summaries

PAGE_TEMPLATE = "console/agents/list.html"
QUERY_MAX_CHARS = 200

EXECUTION_MODE_LABELS = {"embedded": "Embedded", "dedicated": "Dedicated"}
DESIRED_STATE_LABELS = {"running": "Running", "stopped": "Stopped"}
_ID_PLACEHOLDER = "agent-id-placeholder"


def search_text(raw: str | None) -> str:
    return (raw or "").strip()[:QUERY_MAX_CHARS]


def matching(agents: Iterable[AgentSummary], query: str) -> list[AgentSummary]:
    """Agents whose name or id contains ``query``, ignoring case; every one when it is empty."""
    if not query:
        return list(agents)
    needle = query.casefold()
    return [agent for agent in agents if needle in agent.name.casefold() or needle in agent.id.casefold()]


def agent_rows_html(agents: Iterable[AgentSummary], namespace_id: str) -> str:
    """Every Agent's ``<tr>``, sorted by name then id (as the reference console lists them):
    the name first, its short id with a copy button under it (console.presentation). Every
    value goes through ``html.escape`` (quotes too), as autoescape would."""
    link = reverse("console:agent", args=[namespace_id, _ID_PLACEHOLDER])
    prefix, suffix = (escape(part) for part in link.split(_ID_PLACEHOLDER))
    sprite = sprite_url()
    now = timezone.now()
    html = []
    for agent in sorted(agents, key=lambda a: (a.name.casefold(), a.id)):
        mode = agent.execution_mode
        revision = agent.active_revision_id
        desired = agent.desired_runtime_state
        html.append(
            f'<tr><td data-label="Agent"><a href="{prefix}{escape(agent.id)}{suffix}">{escape(agent.name)}</a>'
            f'<div class="cell-sub">{id_html(agent.id, sprite=sprite)}</div></td>'
            f'<td class="hide-narrow" data-label="Execution mode">{escape(EXECUTION_MODE_LABELS.get(mode, mode))}</td>'
            f'<td data-label="Desired state">{escape(DESIRED_STATE_LABELS.get(desired, desired))}</td>'
            f'<td data-label="Active revision">{id_html(revision, sprite=sprite) if revision else "None yet"}</td>'
            f'<td data-label="Created">{time_html(agent.created_at, now=now)}</td></tr>'
        )
    return "\n".join(html)


@require_GET
@console_view
def agents(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    console = current(request)
    query = search_text(request.GET.get("q"))
    context: dict[str, Any] = {"console": console, "nav": "agents", "q": query, "namespace_id": namespace_id,
                               "rows_html": "", "total": 0, "load_error": None, "request_id": console.request_id}
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
        context["rows_html"] = mark_safe(agent_rows_html(matching(rows, query), namespace_id))  # noqa: S308
    return render_page(request, PAGE_TEMPLATE, context, partial="agents-table", status=status)


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents", agents, name="agents"),
]
