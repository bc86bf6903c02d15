"""The Installation-wide Namespaces page: list with status, create, delete.

A row whose Namespace is still being prepared or torn down polls its own fragment every two
seconds; the answer is 286 (htmx stops polling) once the status is terminal, and an empty
286 removes the row once the Namespace is gone. A refused delete is explained in the
confirmation dialog, with what the Namespace still holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.functional import SimpleLazyObject
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import reswap, retarget

from console.common import (
    CLOSE_MODAL_EVENT,
    ConsoleRequest,
    console_view,
    current,
    field_errors,
    render_page,
    stop_polling,
    trigger,
)
from console.presentation import id_html, pill_for, pill_html, sprite_url, time_html
from occ.commands.base import build
from occ.commands.namespaces import NamespaceCreate
from occ.errors import Conflict, InvalidRequest
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import Namespace, NamespaceStatus
from occ.selectors.namespaces import namespace_list
from occ.services.namespaces import namespace_create, namespace_delete

LIST = "console/namespaces/list.html"
DELETE = "console/namespaces/delete.html"

# Statuses as stored (plain strings): the templates compare them with ``ns.status``.
POLLING_STATUSES = frozenset({NamespaceStatus.PROVISIONING.value, NamespaceStatus.DELETING.value})
DELETABLE_STATUSES = frozenset({NamespaceStatus.READY.value, NamespaceStatus.FAILED.value})


_ID_PLACEHOLDER = "namespace-id-placeholder"


def namespace_rows_html(namespaces: Iterable[Namespace]) -> SafeString:
    """Each Namespace's ``<tr>`` (root ``#namespace-row-<id>``, the ``namespace-row`` answer too):
    the name (a link to its Agents once ready), short id with copy, live status pill, created,
    Delete when it may be deleted; a row still being prepared or torn down polls itself. Built in
    one pass, escaped cell by cell, like the Agents list: a template loop cost the page more
    than everything else (bench/console_list_render.py)."""
    def split(name: str) -> list[str]:
        return [escape(part) for part in reverse(f"console:{name}", args=[_ID_PLACEHOLDER]).split(_ID_PLACEHOLDER)]

    row_url, agents_url, delete_url = split("namespace-row"), split("agents"), split("namespace-delete")
    sprite = sprite_url()
    trash = f'<svg class="icon" aria-hidden="true" focusable="false"><use href="{escape(sprite)}#trash-2"></use></svg>'
    now = timezone.now()
    rows = []
    for ns in namespaces:
        nid, name = escape(ns.id), escape(ns.name)
        poll = (f' hx-get="{row_url[0]}{nid}{row_url[1]}" hx-trigger="every 2s" hx-swap="outerHTML"'
                if ns.status in POLLING_STATUSES else "")
        title = (f'<a id="namespace-name-{nid}" href="{agents_url[0]}{nid}{agents_url[1]}">{name}</a>'
                 if ns.status == NamespaceStatus.READY else f'<span id="namespace-name-{nid}">{name}</span>')
        actions = ""
        if ns.status in DELETABLE_STATUSES:
            url = f"{delete_url[0]}{nid}{delete_url[1]}"
            actions = (f'<form method="get" action="{url}"><button type="submit" class="small ghost link-danger" '
                       f'aria-describedby="namespace-name-{nid}" data-opens-modal hx-get="{url}" '
                       f'hx-target="#modal-root" hx-swap="innerHTML">{trash}Delete</button></form>')
        rows.append(f'<tr id="namespace-row-{nid}"{poll}><td data-label="Namespace">{title}<div class="cell-sub">'
                    f"{id_html(ns.id, sprite=sprite)}</div></td>"
                    f'<td data-label="Status">{pill_html("namespace", ns.status, live=True)}</td>'
                    f'<td data-label="Created">{time_html(ns.created_at, now=now)}</td>'
                    f'<td><div class="row-actions">{actions}</div></td></tr>')
    return mark_safe("\n".join(rows))  # noqa: S308 - every value above is escaped


def _page_context(request: ConsoleRequest, **extra: Any) -> dict[str, Any]:
    console = current(request)
    return {
        "console": console,
        "nav": "namespaces",
        "namespaces": console.namespaces,
        "rows_html": SimpleLazyObject(lambda: namespace_rows_html(console.namespaces)),
        "can_create": allowed(console.actor, Action.CREATE, Kind.NAMESPACE),
        "polling_statuses": POLLING_STATUSES,
        "deletable_statuses": DELETABLE_STATUSES,
        "form": {"name": ""},
        "errors": {},
        **extra,
        "form_errors": extra.get("errors", {}).get("__all__", []),  # templates cannot read "__all__"
    }


def namespace_toast(done: str, shown: Namespace) -> str:
    """``done`` and the status pill of the row rendered beside the toast (never a guess of it)."""
    return f"{done} Status: {pill_for('namespace', shown.status).label}."


def _readable(request: ConsoleRequest, namespace_id: str) -> Namespace | None:
    return next((ns for ns in current(request).namespaces if ns.id == namespace_id), None)


def _create(request: ConsoleRequest) -> HttpResponse:
    console = current(request)
    name = request.POST.get("name", "").strip()
    try:
        namespace = namespace_create(actor=console.actor, command=build(NamespaceCreate, name=name))
    except (InvalidRequest, Conflict) as exc:
        # Every refusal of this form is about the name (bad format, taken, reserved).
        errors = field_errors(exc, {"/name": "name"})
        if isinstance(exc, Conflict):
            errors = {"name": [exc.message]}
        context = _page_context(request, form={"name": name}, errors=errors)
        return render_page(request, LIST, context, partial="namespaces-panel")
    console.namespaces = namespace_list(actor=console.actor)
    shown = _readable(request, namespace.id) or namespace  # the row the list renders
    messages.success(request, namespace_toast(f"Namespace {namespace.name} created.", shown))
    if not request.htmx:
        return redirect("console:namespaces")
    return render_page(request, LIST, _page_context(request), partial="namespaces-panel")


@require_http_methods(["GET", "POST"])
@console_view
def namespaces(request: ConsoleRequest) -> HttpResponse:
    if request.method == "POST":
        return _create(request)
    return render(request, LIST, _page_context(request))


@require_GET
@console_view
def namespace_row(request: ConsoleRequest, ns_id: str) -> HttpResponse:
    """One row, polled while non-terminal. A Namespace no longer readable (deleted) leaves the list."""
    namespace = _readable(request, ns_id)
    if namespace is None:
        return stop_polling(HttpResponse(""))
    response = HttpResponse(namespace_rows_html([namespace]))
    return response if namespace.status in POLLING_STATUSES else stop_polling(response)


def _delete_refused(request: ConsoleRequest, namespace: Namespace, exc: Conflict) -> HttpResponse:
    # 409 either way: htmx swaps the explanation into the open dialog (responseHandling).
    context = _page_context(request, ns=namespace, refusal=exc, modal=bool(request.htmx))
    return render_page(request, DELETE, context, partial="namespace-delete-body", status=exc.status)


@require_http_methods(["GET", "POST"])
@console_view
def namespace_delete_view(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """``namespace_id``: console_view answers "Namespace unavailable" for one that is gone or unreadable."""
    namespace = current(request).namespace
    assert namespace is not None
    if request.method == "GET":
        context = _page_context(request, ns=namespace, modal=bool(request.htmx))
        return render_page(request, DELETE, context, partial="namespace-delete-dialog")
    console = current(request)
    try:
        deleted = namespace_delete(actor=console.actor, namespace_id=namespace.id)
    except Conflict as exc:
        return _delete_refused(request, namespace, exc)
    messages.success(request, namespace_toast(f"Delete requested for Namespace {deleted.name}.", deleted))
    if not request.htmx:
        return redirect("console:namespaces")
    response = HttpResponse(namespace_rows_html([deleted]))
    reswap(retarget(response, f"#namespace-row-{deleted.id}"), "outerHTML")
    return trigger(response, CLOSE_MODAL_EVENT)


urlpatterns = [
    path("namespaces", namespaces, name="namespaces"),
    path("namespaces/<str:ns_id>/row", namespace_row, name="namespace-row"),
    path("namespaces/<str:namespace_id>/delete", namespace_delete_view, name="namespace-delete"),
]
