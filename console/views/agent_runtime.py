"""The Agent page's Runtime panel and Logs tab: what the compute driver observes of the gateway.

``GET …/runtime`` answers ``#agent-runtime``: the observed state with since-when, the revision
serving, restarts, memory and CPU (``occ.selectors.runtime``). The Agent page carries only a
placeholder that asks for it once loaded, so the page never waits for the compute driver; without
script the placeholder links here (the whole page, panel filled in). The panel polls itself every 5 s
(``static/console/runtime.js`` holds the polls while the browser tab is hidden) and the view
answers 286 once the Agent is stopped and wants to stay so or is being deleted; it re-reads on the
page's events. Once the Agent is gone, the panel and the log follower return to the Agents list, as the
page's other pollers do.

``GET …/logs`` is the Logs tab (``#agent-logs``, a new, audited view of the log); with
``follow=<token>`` it answers ``#agent-log-follow``: the lines written since, then the next
poller (follow mode; Pause holds it in the browser). Every line is what the driver returned,
already redacted of every secret value (``occ.services.agent_logs``); the view adds nothing
but escaping.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from console.common import ConsoleRequest, console_view, stop_polling
from console.pages.agent_polled import load_polled
from console.pages.agent_runtime import runtime_context
from console.pages.agent_screen import Screen, respond


@require_GET
@console_view
def runtime_panel(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """The panel; 286 (stop polling) once the Agent is stopped and meant to stay stopped, or is
    being deleted (the header's deletion progress watches it then and returns to the list)."""
    screen = load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    panel = runtime_context(screen)
    response = respond(screen, "agent-runtime", runtime_panel=panel)
    return response if panel["poll"] or not request.htmx else stop_polling(response)


@require_GET
@console_view
def logs_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    follow = request.GET.get("follow")
    if follow and request.htmx:
        screen = load_polled(request, namespace_id, agent_id)
        if isinstance(screen, HttpResponse):
            return screen
        return respond(screen, "agent-log-follow", tab="logs", follow=follow)
    return respond(Screen.load(request, namespace_id, agent_id), "agent-logs", tab="logs")


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/runtime", runtime_panel, name="agent-runtime"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/logs", logs_view, name="agent-logs"),
]
