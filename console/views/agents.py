"""The Agents list of a Namespace: search, keyset pages, empty and error states, one fragment.

The list is the selector's ``agent_summary_page``: a page of ``PAGE_SIZE`` Agents the viewer may
read (the few columns a list shows), ordered by name ignoring case (``lower(name)``, then id,
so two names that differ only in case keep one order), filtered in SQL by the search (any part
of the name or id, ignoring case); then, for the Agents on the page only, their health
(``agent_health``: runtime state, model, version, last deploy) for ``console/agents/list.html``.
``after`` and ``before`` are the page's cursors (Next and Previous); a cursor that is not one
of ours, or a stale one, shows the first page. With ``HX-Request`` (the search box, the pager,
and the list re-reading the same page: every few seconds while an Agent is starting or
stopping, else every half minute) only the ``#agents-table`` fragment is rendered.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.db import DatabaseError
from django.http import HttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET

from console.common import ConsoleRequest, console_view, current, render_page
from console.pages.refusals import CREATE_AGENT_REFUSED
from occ.errors import Forbidden, OccError, UnknownOutcome
from occ.selectors.agent_list import agent_health
from occ.selectors.agents import agent_summary_page
from occ.selectors.permissions import may_provision

PAGE_TEMPLATE = "console/agents/list.html"
PAGE_SIZE = 50
QUERY_MAX_CHARS = 200
CURSOR_MAX_CHARS = 2000  # a 200-character name and an id, base64
POLL_SECONDS_BUSY = 5  # while an Agent is starting or stopping
POLL_SECONDS_IDLE = 30  # a gateway can still fail any time


def search_text(raw: str | None) -> str:
    return (raw or "").strip()[:QUERY_MAX_CHARS]


def list_url(base: str, **params: str | None) -> str:
    """``base`` with the parameters that have a value (the search, one cursor)."""
    kept = {key: value for key, value in params.items() if value}
    return f"{base}?{urlencode(kept)}" if kept else base


@require_GET
@console_view
def agents(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    console = current(request)
    query = search_text(request.GET.get("q"))
    after = request.GET.get("after", "")[:CURSOR_MAX_CHARS]
    before = request.GET.get("before", "")[:CURSOR_MAX_CHARS]
    base = reverse("console:agents", args=[namespace_id])
    context: dict[str, Any] = {"console": console, "nav": "agents", "q": query, "namespace_id": namespace_id,
                               "agents": [], "any_agents": False, "load_error": None, "request_id": console.request_id,
                               "create_refused": "" if may_provision(console.actor, namespace_id)
                               else CREATE_AGENT_REFUSED}
    status = 200
    try:
        page = agent_summary_page(actor=console.actor, namespace_id=namespace_id, query=query, after=after,
                                  before=before, page_size=PAGE_SIZE)
    except (OccError, DatabaseError) as exc:
        # A failed read is an error state, never "No Agents yet". HTMX searches and denials
        # go through the shell's error handling (toast fragment, denial audit).
        if request.htmx or isinstance(exc, Forbidden):
            raise
        error = exc if isinstance(exc, OccError) else UnknownOutcome("The database did not answer.")
        context["load_error"] = error
        status = error.status
    else:
        context["any_agents"] = page.any_agents
        context["agents"] = agent_health(console.actor, namespace_id, page.rows)
        busy = any(row.transitional for row in context["agents"])
        context["poll_seconds"] = POLL_SECONDS_BUSY if busy else POLL_SECONDS_IDLE
        # The poll re-reads this page: its search and its cursor (after wins, as in the selector).
        context["self_url"] = list_url(base, q=query, after=after or None, before=None if after else before)
        context["first_url"] = list_url(base, q=query) if page.previous_cursor else None
        context["previous_url"] = list_url(base, q=query, before=page.previous_cursor) \
            if page.previous_cursor else None
        context["next_url"] = list_url(base, q=query, after=page.next_cursor) if page.next_cursor else None
    return render_page(request, PAGE_TEMPLATE, context, partial="agents-table", status=status)


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents", agents, name="agents"),
]
