"""The Agent details page and its URLs: header, deployment activity, four tabs, the writes.

``console:agent`` renders ``console/agent/page.html``; every part of it is also a URL of its
own that answers an htmx swap with that partial (partial name = DOM id = ``hx-target``) and a
plain browser with the whole page. What the page reads and how it is put together lives in
``agent_screen``; the deployment panel's model in ``console.agent_deployment``; the writes in
``agent_writes``.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.common import ConsoleRequest, console_view, redirect_or_hx, stop_polling, trigger
from console.views import agent_writes
from console.views.agent_screen import (
    AGENT_CHANGED,
    DELETING_NAMES_KEY,
    Screen,
    clear_outcome_unknown,
    confirmation,
    reread,
    respond,
)
from occ.errors import NotFound
from occ.models import AgentStatus
from occ.selectors.revisions import revision_get

PENDING_STATUSES = frozenset({"queued", "running"})


@require_GET
@console_view
def agent_page(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """The page; a tab link swapped by htmx gets ``#agent-tabs``."""
    screen = Screen.load(request, namespace_id, agent_id)
    reread(request, agent_id)
    return respond(screen, "agent-tabs", tab=request.GET.get("tab", "overview"))


def _gone(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """The Agent no longer exists (deleted, maybe by someone else): back to the Agents list,
    instead of a polling fragment that would fail every few seconds."""
    names = dict(request.session.get(DELETING_NAMES_KEY, {}))
    name = names.pop(agent_id, None)
    request.session[DELETING_NAMES_KEY] = names
    clear_outcome_unknown(request, agent_id)
    messages.success(request, f"Agent {name} deleted." if name else "The Agent no longer exists.")
    return redirect_or_hx(request, reverse("console:agents", args=[namespace_id]))


def _load_polled(request: ConsoleRequest, namespace_id: str, agent_id: str) -> Screen | HttpResponse:
    try:
        return Screen.load(request, namespace_id, agent_id)
    except NotFound:
        return _gone(request, namespace_id, agent_id)


@require_GET
@console_view
def agent_header(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    screen = _load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    reread(request, agent_id)
    return respond(screen, "agent-header")


@require_GET
@console_view
def deployment_activity(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """The panel. Answers 286 once there is nothing left to poll; a poll that saw a pending
    deployment become terminal also tells the header to re-read (the active revision moved)."""
    screen = _load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    response = respond(screen, "deployment-activity")
    if not request.htmx:
        return response
    view = screen.deployment_panel
    if request.GET.get("refresh") == "1" or (request.GET.get("since") in PENDING_STATUSES and not view["pending"]):
        trigger(response, AGENT_CHANGED)
    return response if view["pending"] else stop_polling(response)


@require_GET
@console_view
def status_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """Deletion progress: polls while ``deleting``; once the Agent is gone, back to the list."""
    screen = _load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    response = respond(screen, "agent-deletion")
    deleting = screen.agent.status == AgentStatus.DELETING
    return response if deleting or not request.htmx else stop_polling(response)


@require_http_methods(["GET", "POST"])
@console_view
def configuration_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """GET: the Configuration tab. POST: save it."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "POST":
        return agent_writes.configuration_save(screen)
    return respond(screen, "agent-configuration", tab="configuration")


@require_GET
@console_view
def credentials_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    return respond(Screen.load(request, namespace_id, agent_id), "agent-credentials", tab="credentials")


@require_POST
@console_view
def credentials_grant_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    return agent_writes.credentials_grant(Screen.load(request, namespace_id, agent_id))


@require_POST
@console_view
def deploy_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    return agent_writes.deploy(Screen.load(request, namespace_id, agent_id))


@require_http_methods(["GET", "POST"])
@console_view
def redeploy_view(request: ConsoleRequest, namespace_id: str, agent_id: str, revision_id: str) -> HttpResponse:
    """GET: the confirmation (a dialog for htmx) naming the revision. POST: redeploy it."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "GET":
        revision = revision_get(actor=screen.actor, revision_id=revision_id, **screen.ids)
        return confirmation(screen, "redeploy", revision)
    return agent_writes.redeploy(screen, revision_id)


@require_http_methods(["GET", "POST"])
@console_view
def stop_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """GET: the confirmation (a dialog for htmx). POST: record desired state stopped."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "GET":
        return confirmation(screen, "stop")
    return agent_writes.stop(screen)


@require_POST
@console_view
def start_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """Record desired state running: the worker starts the Agent on its last revision."""
    return agent_writes.start(Screen.load(request, namespace_id, agent_id))


@require_http_methods(["GET", "POST"])
@console_view
def delete_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """GET: the confirmation. POST: the Agent becomes ``deleting``."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "GET":
        return confirmation(screen, "delete")
    return agent_writes.delete(screen)


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>", agent_page, name="agent"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/header", agent_header, name="agent-header"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/deployment", deployment_activity,
         name="agent-deployment"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/deploy", deploy_view, name="agent-deploy"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/revisions/<str:revision_id>/redeploy", redeploy_view,
         name="agent-revision-redeploy"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/stop", stop_view, name="agent-stop"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/start", start_view, name="agent-start"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/delete", delete_view, name="agent-delete"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/status", status_view, name="agent-status"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/configuration", configuration_view,
         name="agent-configuration"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/credentials", credentials_view,
         name="agent-credentials"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/credentials/grant", credentials_grant_view,
         name="agent-credentials-grant"),
]
