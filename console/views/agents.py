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
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from console.common import ConsoleRequest, console_view, current, render_page
from occ.errors import Forbidden, OccError, UnknownOutcome
from occ.selectors.agents import AgentSummary, agent_summaries
from occ.timestamps import rfc3339

PAGE_TEMPLATE = "console/agents/list.html"
QUERY_MAX_CHARS = 200

EXECUTION_MODE_LABELS = {"embedded": "Embedded", "dedicated": "Dedicated"}
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
    """Every Agent's ``<tr>``, sorted by name then id (as the reference console lists them).
    Every value goes through ``html.escape`` (quotes too), as autoescape would."""
    link = reverse("console:agent", args=[namespace_id, _ID_PLACEHOLDER])
    prefix, suffix = (escape(part) for part in link.split(_ID_PLACEHOLDER))
    html = []
    for agent in sorted(agents, key=lambda a: (a.name.casefold(), a.id)):
        agent_id = escape(agent.id)
        mode = agent.execution_mode
        revision = agent.active_revision_id
        created = escape(rfc3339(agent.created_at))  # RFC 3339 UTC: 2026-11-30T09:17:13.533Z
        html.append(
            f'<tr><td><a href="{prefix}{agent_id}{suffix}">{escape(agent.name)}</a><br>'
            f'<code class="id">{agent_id}</code></td>'
            f"<td>{escape(EXECUTION_MODE_LABELS.get(mode, mode))}</td>"
            f"<td>{escape(agent.desired_runtime_state)}</td>"
            f"<td>{f'<code>{escape(revision)}</code>' if revision else 'No active revision'}</td>"
            f'<td><time datetime="{created}">{created[:10]} {created[11:16]} UTC</time></td></tr>'
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
