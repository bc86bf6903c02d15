"""The production routes plus the bench-only ones:

- ``GET /bench/bare``: the web stack's floor, served by the same server;
- ``GET /bench/json/...``: the rows of a console list page the API has no list of (Configurations,
  accounts, audit events), as JSON: the page's own selector, the same page of rows, the same
  session and console checks (``console_view``). ``bench/console_list_render.py`` compares each
  page with them, so the ratio is the page's rendering cost alone.
"""

from dataclasses import asdict

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.http import require_GET

from console.common import ConsoleRequest, console_view, current
from console.views import configurations, members
from console.views.audit import AuditFilterForm
from occ.selectors.access import account_page
from occ.selectors.audit import audit_event_page
from occ.selectors.configurations import configuration_page
from occ.timestamps import rfc3339
from project.urls import urlpatterns as occ_urlpatterns


@require_GET
def bare(request: HttpRequest) -> JsonResponse:
    """No database, no authentication: routing, the middleware stack and a tiny JSON body."""
    return JsonResponse({"data": {"ok": True}})


@require_GET
@console_view
def configurations_json(request: ConsoleRequest, namespace_id: str) -> JsonResponse:
    page = configuration_page(actor=current(request).actor, namespace_id=namespace_id,
                              after=request.GET.get("after", ""), page_size=configurations.PAGE_SIZE)
    return JsonResponse({"data": [asdict(summary) for summary in page.rows], "next": page.next_cursor})


@require_GET
@console_view
def members_json(request: ConsoleRequest) -> JsonResponse:
    page = account_page(actor=current(request).actor, after=request.GET.get("after", ""), page_size=members.PAGE_SIZE)
    return JsonResponse({"data": [asdict(account) for account in page.rows], "next": page.next_cursor})


@require_GET
@console_view
def audit_json(request: ConsoleRequest) -> JsonResponse:
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return JsonResponse({"errors": form.errors}, status=400)
    page = audit_event_page(actor=current(request).actor, query=form.query())
    return JsonResponse({"data": [
        {"id": row.event.id, "occurredAt": rfc3339(row.event.occurred_at), "kind": row.event.kind,
         "actorId": row.event.actor_id, "actorName": row.actor_name, "action": row.event.action,
         "namespaceId": row.event.namespace_id, "resourceKind": row.event.resource_kind,
         "resourceId": row.event.resource_id, "outcome": row.event.outcome, "details": row.event.details,
         "agentId": row.agent_id} for row in page.rows], "older": page.older})


urlpatterns = [
    path("bench/bare", bare),
    path("bench/json/namespaces/<str:namespace_id>/configurations", configurations_json),
    path("bench/json/members", members_json),
    path("bench/json/audit", audit_json),
    *occ_urlpatterns,
]
