"""The Secrets of a Namespace: list, create, replace a value, delete.

Values are write-only here: a value goes from the form to ``occ.services.secrets`` and is
never put in a template context, so no response can carry it back, not even as a masked
field of its length. Password inputs always render empty, also after a refused form.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import reswap, retarget

from console.common import (
    CLOSE_MODAL_EVENT,
    ConsoleRequest,
    console_view,
    current,
    render_page,
    trigger,
)
from console.forms.posted import SecretCreateForm, SecretValueForm
from console.pages.lists import keyset_page
from occ.commands.secrets import SecretCreate, SecretValueUpdate
from occ.errors import Conflict, InvalidRequest
from occ.models import Secret
from occ.selectors.permissions import secret_permissions
from occ.selectors.secrets import secret_get, secret_page
from occ.services.secrets import secret_create, secret_delete, secret_update_value

LIST = "console/secrets/list.html"
PAGE_SIZE = 50


def _list_context(request: ConsoleRequest, **extra: Any) -> dict[str, Any]:
    """The page of Secrets the link names (``?after=``, oldest first; a form's answer: the first)."""
    console = current(request)

    def read(after: str) -> tuple[list[Secret], str | None]:
        page = secret_page(actor=console.actor, namespace_id=console.namespace_id, after=after, page_size=PAGE_SIZE)
        return page.rows, page.next_cursor

    page = keyset_page(request, read, base=reverse("console:secrets", args=[console.namespace_id]))
    secrets = page.rows
    return {
        "console": console,
        "nav": "secrets",
        "namespace_id": console.namespace_id,
        "secrets": secrets,
        "page": page,
        # What to offer: a control the server would refuse is absent or disabled with its reason.
        "may": secret_permissions(actor=console.actor, namespace_id=console.namespace_id,
                                  secret_ids=[secret.id for secret in secrets]),
        "form": {"name": ""},
        "errors": {},
        **extra,
        "form_errors": extra.get("errors", {}).get("__all__", []),  # templates cannot read "__all__"
    }


def _create_errors(form: SecretCreateForm, exc: InvalidRequest | Conflict) -> dict[str, list[str]]:
    if isinstance(exc, Conflict) and exc.code == "RESOURCE_CONFLICT":  # the name is taken
        return {"name": [exc.message]}
    form.refuse(exc, SecretCreate)
    return form.errors_by_field()


def _create(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    console = current(request)
    form = SecretCreateForm(request.POST)
    form.full_clean()  # posted text: the command and the service judge it
    name = form.text("name").strip()  # kept to show again (a refusal takes it from cleaned_data)
    try:
        secret = secret_create(actor=console.actor, namespace_id=namespace_id, command=form.command())
    except (InvalidRequest, Conflict) as exc:
        context = _list_context(request, form={"name": name}, errors=_create_errors(form, exc))
        return render_page(request, LIST, context, partial="secrets-panel")
    messages.success(request, f"Secret {secret.name} created.")
    if not request.htmx:
        return redirect("console:secrets", namespace_id)
    return render_page(request, LIST, _list_context(request), partial="secrets-panel")


@require_http_methods(["GET", "POST"])
@console_view
def secrets(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    if request.method == "POST":
        return _create(request, namespace_id)
    # The pager's htmx links swap the table; a plain GET (or a boosted one) gets the page.
    return render_page(request, LIST, _list_context(request), partial="secrets-table")


def _secret_context(request: ConsoleRequest, secret: Secret, **extra: Any) -> dict[str, Any]:
    console = current(request)
    return {"console": console, "nav": "secrets", "namespace_id": console.namespace_id, "secret": secret,
            "modal": request.htmx, "errors": {}, **extra,
            "form_errors": extra.get("errors", {}).get("__all__", [])}


def _dialog_or_page(request: ConsoleRequest, secret: Secret, name: str) -> HttpResponse:
    """A Secret's form: the page ``<name>.html``, or for htmx its modal ``#secret-<name>-dialog``."""
    return render_page(request, f"console/secrets/{name}.html", _secret_context(request, secret),
                       partial=f"secret-{name}-dialog")


@require_http_methods(["GET", "POST"])
@console_view
def secret_value(request: ConsoleRequest, namespace_id: str, secret_id: str) -> HttpResponse:
    """GET: the "Replace value" form (a dialog for htmx, a page otherwise). POST: replace it."""
    console = current(request)
    secret = secret_get(actor=console.actor, namespace_id=namespace_id, secret_id=secret_id)
    if request.method == "GET":
        return _dialog_or_page(request, secret, "value")
    form = SecretValueForm(request.POST)
    form.full_clean()
    try:
        secret = secret_update_value(actor=console.actor, namespace_id=namespace_id, secret_id=secret.id,
                                     command=form.command())
    except (InvalidRequest, Conflict) as exc:
        form.refuse(exc, SecretValueUpdate)
        context = _secret_context(request, secret, errors=form.errors_by_field())
        return render_page(request, "console/secrets/value.html", context, partial="secret-value-form")
    messages.success(request, f"The value of Secret {secret.name} was replaced.")
    if not request.htmx:
        return redirect("console:secrets", namespace_id)
    # Nothing on the page changes: the dialog closes and focus returns to the row's button
    # (swapping the row would remove the button that opened the dialog).
    return trigger(reswap(HttpResponse(""), "none"), CLOSE_MODAL_EVENT)


@require_http_methods(["GET", "POST"])
@console_view
def secret_delete_view(request: ConsoleRequest, namespace_id: str, secret_id: str) -> HttpResponse:
    """GET: the confirmation. POST: delete; a refusal (still referenced or delivered) is explained."""
    console = current(request)
    secret = secret_get(actor=console.actor, namespace_id=namespace_id, secret_id=secret_id)
    if request.method == "GET":
        return _dialog_or_page(request, secret, "delete")
    try:
        secret_delete(actor=console.actor, namespace_id=namespace_id, secret_id=secret.id)
    except Conflict as exc:
        # 409 either way: htmx swaps the explanation into the open dialog (responseHandling).
        return render_page(request, "console/secrets/delete.html", _secret_context(request, secret, refusal=exc),
                           partial="secret-delete-body", status=exc.status)
    messages.success(request, f"Secret {secret.name} deleted.")
    if not request.htmx:
        return redirect("console:secrets", namespace_id)
    response = retarget(render(request, f"{LIST}#secrets-table", _list_context(request)), "#secrets-table")
    return trigger(response, CLOSE_MODAL_EVENT)


urlpatterns = [
    path("namespaces/<str:namespace_id>/secrets", secrets, name="secrets"),
    path("namespaces/<str:namespace_id>/secrets/<str:secret_id>/value", secret_value, name="secret-value"),
    path("namespaces/<str:namespace_id>/secrets/<str:secret_id>/delete", secret_delete_view, name="secret-delete"),
]
