"""The Agent details page and its reads: the page, header, deployment activity (with Run
diagnostics on a failed deployment), deletion progress and the Credentials tab.

``console:agent`` renders ``console/agent/page.html``; every part of it is also a URL of its
own that answers an htmx swap with that partial (partial name = DOM id = ``hx-target``) and a
plain browser with the whole page. What the page reads and how it is put together is the page
model ``console.pages.agent_screen``; the writes are ``console.views.agent_writes``.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from console.common import ConsoleRequest, console_view, known_failure_message, stop_polling, trigger
from console.pages.agent_deployment import diagnostics_view
from console.pages.agent_outcome import audit_refusal, reread
from console.pages.agent_polled import load_polled
from console.pages.agent_screen import AGENT_CHANGED, Screen, respond
from console.pages.refusals import diagnose_refusal
from occ.errors import DependencyUnavailable, Forbidden
from occ.models import AgentStatus
from occ.selectors.deployments import deployment_diagnose

PENDING_STATUSES = frozenset({"queued", "running"})


@require_GET
@console_view
def agent_page(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """The page; a tab link swapped by htmx gets ``#agent-tabs``."""
    screen = Screen.load(request, namespace_id, agent_id)
    reread(request, agent_id)
    return respond(screen, "agent-tabs", tab=request.GET.get("tab", "overview"))


@require_GET
@console_view
def agent_header(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    screen = load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    reread(request, agent_id)
    return respond(screen, "agent-header")


@require_GET
@console_view
def deployment_activity(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """The panel. Answers 286 once there is nothing left to poll; a poll that saw a pending
    deployment become terminal also tells the header to re-read (the active revision moved)."""
    screen = load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    response = respond(screen, "deployment-activity")
    if not request.htmx:
        return response
    view = screen.deployment_panel
    if request.GET.get("refresh") == "1" or (request.GET.get("since") in PENDING_STATUSES and not view["pending"]):
        trigger(response, AGENT_CHANGED)
    return response if view["pending"] else stop_polling(response)


@require_POST
@console_view
def deployment_diagnostics(request: ConsoleRequest, namespace_id: str, agent_id: str,
                           revision_id: str) -> HttpResponse:
    """Run diagnostics: the compute driver's checks of one deployment (``deployment_diagnose``,
    the API's ``POST …/deployments/{rev}/diagnostics``), shown in the panel. It changes nothing,
    so it asks for no confirmation and audits nothing but a refusal (as the API does). A refusal
    answers 403 and the driver's silence 503, each as the panel with its sentence."""
    screen = Screen.load(request, namespace_id, agent_id)
    try:
        found = deployment_diagnose(actor=screen.actor, revision_id=revision_id, **screen.ids)
    except Forbidden as exc:
        audit_refusal(request, exc)
        return respond(screen, "deployment-activity", status=403,
                       diagnostics=diagnostics_view(
                           refused=diagnose_refusal(screen.may) or known_failure_message(exc)))
    except DependencyUnavailable:
        return respond(screen, "deployment-activity", status=503, diagnostics=diagnostics_view(unavailable=True))
    return respond(screen, "deployment-activity", diagnostics=diagnostics_view(found))


@require_GET
@console_view
def status_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """Deletion progress: polls while ``deleting``; once the Agent is gone, back to the list."""
    screen = load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    response = respond(screen, "agent-deletion")
    deleting = screen.agent.status == AgentStatus.DELETING
    return response if deleting or not request.htmx else stop_polling(response)


@require_GET
@console_view
def credentials_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    return respond(Screen.load(request, namespace_id, agent_id), "agent-credentials", tab="credentials")


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>", agent_page, name="agent"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/header", agent_header, name="agent-header"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/deployment", deployment_activity,
         name="agent-deployment"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/deployments/<str:revision_id>/diagnostics",
         deployment_diagnostics, name="agent-deployment-diagnostics"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/status", status_view, name="agent-status"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/credentials", credentials_view,
         name="agent-credentials"),
]
