"""The Agents list of a Namespace: search, empty and error states, one table fragment.

The list is the API's own list (``agent_list_json``: each Agent's public JSON built by the
database, one query however many Agents), parsed here; the rows are HTML built in one pass,
escaped cell by cell, so the template only places them. Both choices come from measuring a
500-Agent page against the JSON list (bench/console_list_render.py): model rows cost a third
more than parsing the database's JSON, and a template loop cost more than everything else.
With ``HX-Request`` (the search box) only the ``#agents-table`` fragment is rendered.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from django.db import DatabaseError
from django.http import HttpResponse
from django.urls import path, reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from console.common import ConsoleRequest, console_view, current, render_page
from occ.errors import Forbidden, OccError, UnknownOutcome
from occ.iam.actor import Actor
from occ.selectors.agents import agent_list_json

PAGE_TEMPLATE = "console/agents/list.html"
QUERY_MAX_CHARS = 200

EXECUTION_MODE_LABELS = {"embedded": "Embedded", "dedicated": "Dedicated"}
_ID_PLACEHOLDER = "agent-id-placeholder"


def agent_list_wire(*, actor: Actor, namespace_id: str) -> list[dict[str, Any]]:
    """The readable Agents exactly as ``GET /namespaces/{ns}/agents`` lists them (camelCase)."""
    return [json.loads(text) for text in agent_list_json(actor=actor, namespace_id=namespace_id)]


def search_text(raw: str | None) -> str:
    return (raw or "").strip()[:QUERY_MAX_CHARS]


def matching(rows: Iterable[Mapping[str, Any]], query: str) -> list[Mapping[str, Any]]:
    """Rows whose name or id contains ``query``, ignoring case; every row when it is empty."""
    if not query:
        return list(rows)
    needle = query.casefold()
    return [row for row in rows if needle in row["name"].casefold() or needle in row["id"].casefold()]


def agent_rows_html(rows: Iterable[Mapping[str, Any]], namespace_id: str) -> str:
    """Every Agent's ``<tr>`` from wire rows, sorted by name then id (as the reference console
    lists them). Every value goes through ``html.escape`` (quotes too), as autoescape would."""
    link = reverse("console:agent", args=[namespace_id, _ID_PLACEHOLDER])
    prefix, suffix = (escape(part) for part in link.split(_ID_PLACEHOLDER))
    html = []
    for row in sorted(rows, key=lambda r: (r["name"].casefold(), r["id"])):
        agent_id = escape(row["id"])
        mode = row["executionMode"]
        revision = row.get("activeRevisionId")  # absent when there is none
        created = escape(row["createdAt"])  # RFC 3339 UTC: 2026-11-30T09:17:13.533Z
        html.append(
            f'<tr><td><a href="{prefix}{agent_id}{suffix}">{escape(row["name"])}</a><br>'
            f'<code class="id">{agent_id}</code></td>'
            f"<td>{escape(EXECUTION_MODE_LABELS.get(mode, mode))}</td>"
            f'<td>{escape(row["desiredRuntimeState"])}</td>'
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
        rows = agent_list_wire(actor=console.actor, namespace_id=namespace_id)
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
