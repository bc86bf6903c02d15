"""The audit log: the events the viewer may read (``occ.selectors.audit`` decides which),
filtered by actor, resource, action and time, newest first, in keyset pages; each event links
to its resource's console page where one exists. Operators keep the Django admin's view.

One view serves the page and its ``#audit-results`` fragment (the filter form and the pager ask
for it with ``hx-get`` and push the URL, so a filtered page is a link; without JavaScript they
are a plain GET form and plain links)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import HttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET

from console.common import ConsoleRequest, console_view, current, render_page
from console.forms.base import TimeRangeMixin
from occ.iam.permissions import Kind
from occ.selectors.audit import AuditQuery, AuditRow, audit_event_page
from occ.services.audit import METADATA_KEY

PAGE = "console/audit/list.html"


def _text(label: str, help_text: str) -> forms.CharField:
    return forms.CharField(label=label, help_text=help_text, required=False, max_length=200, strip=True)

_WHEN = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")


class AuditFilterForm(TimeRangeMixin):
    actor = _text("Actor", "A principal's ID, or part of a name or username.")
    resource = _text("Resource", "A resource or Namespace ID, or a kind (agent, secret, …).")
    action = _text("Action", "Part of an action, e.g. service_keys or agents.deploy.")
    since = forms.DateTimeField(label="From (UTC)", required=False, widget=_WHEN)
    until = forms.DateTimeField(label="Until (UTC)", required=False, widget=_WHEN)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            described = f"id_{name}-hint" if field.help_text else ""
            if self.is_bound and self.errors.get(name):
                field.widget.attrs["aria-invalid"] = "true"
                described = f"{described} id_{name}-error".strip()
            if described:
                field.widget.attrs["aria-describedby"] = described

    def query(self) -> AuditQuery:
        data = self.cleaned_data
        return AuditQuery(actor=data.get("actor") or "", resource=data.get("resource") or "",
                          action=data.get("action") or "", since=data.get("since"), until=data.get("until"))


def resource_url(row: AuditRow) -> str | None:
    """The console page of the event's resource, where the console has one and it still exists
    (a deleted resource's page would be a 404: the row says "(deleted)" instead)."""
    if row.resource_deleted:
        return None
    event = row.event
    ns, kind, rid = event.namespace_id, event.resource_kind, event.resource_id
    if kind == Kind.AGENT and ns and rid:
        return reverse("console:agent", args=[ns, rid])
    if kind == Kind.AGENT_REVISION and ns and row.agent_id:
        return reverse("console:agent", args=[ns, row.agent_id])
    if kind == Kind.CONFIGURATION and ns and rid:
        return reverse("console:configuration", args=[ns, rid])
    if kind == Kind.SECRET and ns:
        return reverse("console:secrets", args=[ns])
    if kind == Kind.NAMESPACE and ns:
        return reverse("console:agents", args=[ns])
    if kind == "service_principal" and ns and rid:
        return reverse("console:service-principal", args=[ns, rid])
    if kind == "service_key" and ns and isinstance(event.details.get("servicePrincipalId"), str):
        return reverse("console:service-principal", args=[ns, event.details["servicePrincipalId"]])
    if kind in ("access_binding", "role") and ns:
        return reverse("console:access", args=[ns])
    if kind in ("principal", "account"):
        return reverse("console:members")
    return None


@dataclass(frozen=True)
class EventLine:
    """One row as the table shows it: the event, its actor's name, its resource's page, and
    its details without OCC's own metadata (shown apart: source and request id)."""

    row: AuditRow
    url: str | None
    facts: list[tuple[str, Any]]
    source: str
    request_id: str


def event_line(row: AuditRow) -> EventLine:
    details = row.event.details if isinstance(row.event.details, dict) else {}
    meta = details.get(METADATA_KEY) or {}
    return EventLine(row=row, url=resource_url(row), source=str(meta.get("source", "")),
                     request_id=str(meta.get("requestId", "")),
                     facts=[(key, value) for key, value in details.items() if key != METADATA_KEY])


@require_GET
@console_view
def audit_log(request: ConsoleRequest) -> HttpResponse:
    console = current(request)
    form = AuditFilterForm(request.GET)
    page = None
    if form.is_valid():
        page = audit_event_page(actor=console.actor, query=form.query(),
                                older_than=request.GET.get("older", "")[:200],
                                newer_than=request.GET.get("newer", "")[:200])
    filters = request.GET.copy()
    for cursor in ("older", "newer"):
        filters.pop(cursor, None)
    context = {
        "console": console, "nav": "audit", "form": form, "page": page,
        "lines": [event_line(row) for row in page.rows] if page else [],
        "filters": filters.urlencode(), "filtered": any(v for k, v in filters.items()),
        "first_page": not request.GET.get("older") and not request.GET.get("newer"),
    }
    return render_page(request, PAGE, context, partial="audit-results")


urlpatterns = [
    path("audit", audit_log, name="audit"),
]
