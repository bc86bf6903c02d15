"""The Installation-wide Namespaces page: list with status, create, delete.

A row whose Namespace is still being prepared or torn down polls its own fragment every two
seconds; the answer is 286 (htmx stops polling) once the status is terminal, and an empty
286 removes the row once the Namespace is gone. A refused delete is explained in the
confirmation dialog, with what the Namespace still holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import reswap, retarget

from console.common import (
    CLOSE_MODAL_EVENT,
    ConsoleRequest,
    console_view,
    current,
    readable_namespace,
    render_page,
    stop_polling,
    trigger,
)
from console.forms.posted import NamespaceForm
from console.pages.lists import keyset_page
from console.presentation import pill_for
from occ.commands.namespaces import NamespaceCreate
from occ.errors import Conflict, InvalidRequest
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import Namespace, NamespaceStatus
from occ.selectors.namespaces import namespace_page
from occ.services.namespaces import namespace_create, namespace_delete

LIST = "console/namespaces/list.html"
DELETE = "console/namespaces/delete.html"
PAGE_SIZE = 50

# Statuses as stored (plain strings): the templates compare them with ``ns.status``.
POLLING_STATUSES = frozenset({NamespaceStatus.PROVISIONING.value, NamespaceStatus.DELETING.value})
DELETABLE_STATUSES = frozenset({NamespaceStatus.READY.value, NamespaceStatus.FAILED.value})


def _page_context(request: ConsoleRequest, **extra: Any) -> dict[str, Any]:
    """The page of readable Namespaces the link names (``?after=``, oldest first; a form's
    answer: the first)."""
    console = current(request)
    page = keyset_page(request, lambda after: namespace_page(actor=console.actor, after=after, page_size=PAGE_SIZE),
                       base=reverse("console:namespaces"))
    return {
        "console": console,
        "nav": "namespaces",
        "namespaces": page.rows,
        "page": page,
        "can_create": allowed(console.actor, Action.CREATE, Kind.NAMESPACE),
        "polling_statuses": POLLING_STATUSES,
        "deletable_statuses": DELETABLE_STATUSES,
        "may_delete": _may_delete(console.actor, page.rows),
        "form": {"name": ""},
        "errors": {},
        **extra,
        "form_errors": extra.get("errors", {}).get("__all__", []),  # templates cannot read "__all__"
    }


def _may_delete(actor: Actor, namespaces: Iterable[Namespace]) -> frozenset[str]:
    """The Namespaces whose Delete the server would accept (the rest show it disabled, with why)."""
    return frozenset(ns.id for ns in namespaces if allowed(actor, Action.DELETE, Kind.NAMESPACE, namespace_id=ns.id))


def _row(request: ConsoleRequest, namespace: Namespace) -> HttpResponse:
    """One Namespace's row, ``list.html#namespace-row``: its poll's answer and the delete's."""
    context = {"ns": namespace, "polling_statuses": POLLING_STATUSES, "deletable_statuses": DELETABLE_STATUSES,
               "may_delete": _may_delete(current(request).actor, [namespace])}
    return render(request, f"{LIST}#namespace-row", context)


def namespace_toast(done: str, shown: Namespace) -> str:
    """``done`` and the status pill of the row rendered beside the toast (never a guess of it)."""
    return f"{done} Status: {pill_for('namespace', shown.status).label}."


def _readable(request: ConsoleRequest, namespace_id: str) -> Namespace | None:
    return readable_namespace(current(request).actor, namespace_id)


def _create(request: ConsoleRequest) -> HttpResponse:
    console = current(request)
    form = NamespaceForm(request.POST)
    form.full_clean()  # posted text: the command and the service judge it
    name = form.text("name").strip()  # kept to show again (a refusal takes it from cleaned_data)
    try:
        namespace = namespace_create(actor=console.actor, command=form.command())
    except (InvalidRequest, Conflict) as exc:
        # Every refusal of this form is about the name (bad format, taken, reserved).
        if isinstance(exc, Conflict):
            errors = {"name": [exc.message]}
        else:
            form.refuse(exc, NamespaceCreate)
            errors = form.errors_by_field()
        context = _page_context(request, form={"name": name}, errors=errors)
        return render_page(request, LIST, context, partial="namespaces-panel")
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
    # The pager's htmx links swap the table; a plain GET (or a boosted one) gets the page.
    return render_page(request, LIST, _page_context(request), partial="namespaces-table")


@require_GET
@console_view
def namespace_row(request: ConsoleRequest, ns_id: str) -> HttpResponse:
    """One row, polled while non-terminal. A Namespace no longer readable (deleted) leaves the list."""
    namespace = _readable(request, ns_id)
    if namespace is None:
        return stop_polling(HttpResponse(""))
    response = _row(request, namespace)
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
    response = _row(request, deleted)
    reswap(retarget(response, f"#namespace-row-{deleted.id}"), "outerHTML")
    return trigger(response, CLOSE_MODAL_EVENT)


urlpatterns = [
    path("namespaces", namespaces, name="namespaces"),
    path("namespaces/<str:ns_id>/row", namespace_row, name="namespace-row"),
    path("namespaces/<str:namespace_id>/delete", namespace_delete_view, name="namespace-delete"),
]
