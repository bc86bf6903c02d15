"""Create Agent after the submit: the provisioning progress, its retry, and "Check status" after
an answer that was lost. Read-only but the retry; the page model (``console.pages.agent_create``)
says what the progress shows.

URLs (all under ``namespaces/<namespace_id>/agents/new``):

- ``console:agent-new-provisioning`` GET the progress region ``#provisioning-progress`` (polled
                                     every second; 286 once terminal; ``?open=1`` answers
                                     ``HX-Redirect`` to the Agent once it succeeded)
- ``console:agent-new-provisioning-retry`` POST ``provisioning_retry``; answers the region
- ``console:agent-new-lookup`` GET   "Check status" after an unknown outcome (read-only);
                                     answers ``#outcome-lookup`` (+ region and actions, OOB)
"""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from console.common import ConsoleRequest, console_view, current, is_known_failure, redirect_or_hx, stop_polling
from console.pages.agent_create import PAGE, Progress, progress_of
from occ.commands.provisioning import REQUEST_ID
from occ.errors import OccError
from occ.selectors.provisioning import agent_named, provisioning_for_request
from occ.services.provisioning import provisioning_get, provisioning_retry


def _progress_response(request: ConsoleRequest, progress: Progress, *, status: int = 200) -> HttpResponse:
    context = {"namespace": current(request).namespace, "progress": progress, "nav": "agents"}
    if not request.htmx:
        return render(request, "console/agents/create/progress_page.html", context, status=status)
    response = render(request, f"{PAGE}#provisioning-progress", context, status=status)
    return response if progress.polling else stop_polling(response)


def _failed_read(work_id: str, exc: OccError | None) -> Progress:
    message = exc.message if exc is not None and is_known_failure(exc) else (
        "The provisioning status could not be read. Refresh to try again.")
    return Progress(work_id=work_id, request_id="", text="Provisioning status unavailable.",
                    error={"code": exc.code if exc else "UNKNOWN_OUTCOME", "message": message})


@require_GET
@console_view
def agent_new_provisioning(request: ConsoleRequest, namespace_id: str, work_id: str) -> HttpResponse:
    console = current(request)
    try:
        state = provisioning_get(actor=console.actor, namespace_id=namespace_id, work_id=work_id)
    except (OccError, DatabaseError) as exc:
        return _progress_response(request, _failed_read(work_id, exc if isinstance(exc, OccError) else None))
    progress = progress_of(state, namespace_id)
    if progress.agent_url and (request.GET.get("open") or not request.htmx):
        return redirect_or_hx(request, progress.agent_url)
    return _progress_response(request, progress)


@require_POST
@console_view
def agent_new_provisioning_retry(request: ConsoleRequest, namespace_id: str, work_id: str) -> HttpResponse:
    console = current(request)
    notice = ""
    try:
        state = provisioning_retry(actor=console.actor, namespace_id=namespace_id, work_id=work_id)
    except (OccError, DatabaseError) as exc:
        notice = (exc.message if isinstance(exc, OccError) and is_known_failure(exc) else
                  "The retry could not be confirmed. The status below is read again; do not retry twice.")
        try:
            state = provisioning_get(actor=console.actor, namespace_id=namespace_id, work_id=work_id)
        except (OccError, DatabaseError) as read_exc:
            return _progress_response(request, _failed_read(work_id, read_exc if isinstance(read_exc, OccError)
                                                            else None))
    return _progress_response(request, progress_of(state, namespace_id, notice=notice))


@require_GET
@console_view
def agent_new_lookup(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """Read-only: what did the request whose answer was lost leave behind?"""
    console = current(request)
    request_id = request.GET.get("request_id", "")
    name = request.GET.get("name", "").strip()[:200]
    context: dict[str, Any] = {"namespace": console.namespace, "nav": "agents", "request_id": request_id,
                               "found": None, "agent": None, "progress": None, "lookup_failed": False,
                               "oob": False, "outcome_unknown": False,
                               "sections": request.htmx}
    try:
        if REQUEST_ID.fullmatch(request_id):
            work = provisioning_for_request(actor=console.actor, namespace_id=namespace_id, request_id=request_id)
            if work is not None:
                state = provisioning_get(actor=console.actor, namespace_id=namespace_id, work_id=work.work_id)
                context["found"] = work
                context["progress"] = progress_of(state, namespace_id)
        if context["found"] is None and name:
            context["agent"] = agent_named(actor=console.actor, namespace_id=namespace_id, name=name)
    except (OccError, DatabaseError):
        context["lookup_failed"] = True
    if not request.htmx:
        return render(request, "console/agents/create/lookup_page.html", context)
    return render(request, f"{PAGE}#outcome-lookup", context)


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/new/lookup", agent_new_lookup, name="agent-new-lookup"),
    path("namespaces/<str:namespace_id>/agents/new/provisioning/<str:work_id>", agent_new_provisioning,
         name="agent-new-provisioning"),
    path("namespaces/<str:namespace_id>/agents/new/provisioning/<str:work_id>/retry",
         agent_new_provisioning_retry, name="agent-new-provisioning-retry"),
]
