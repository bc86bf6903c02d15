"""The Secrets of a Namespace: list, create, replace a value, delete.

Values are write-only here: a value goes from the form to ``occ.services.secrets`` and is
never put in a template context, so no response can carry it back, not even as a masked
field of its length. Password inputs always render empty, also after a refused form.
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
from django.views.decorators.http import require_http_methods
from django_htmx.http import reswap, retarget

from console.common import (
    CLOSE_MODAL_EVENT,
    ConsoleRequest,
    console_view,
    current,
    field_errors,
    render_page,
    trigger,
)
from console.presentation import id_html, sprite_url, time_html
from occ.commands.base import build
from occ.commands.secrets import SecretCreate, SecretValueUpdate
from occ.errors import Conflict, InvalidRequest
from occ.models import Secret
from occ.selectors.secrets import secret_get, secret_list
from occ.services.secrets import secret_create, secret_delete, secret_update_value

LIST = "console/secrets/list.html"
_CREATE_FIELDS = {"/name": "name", "/value": "value"}
_ID_PLACEHOLDER = "secret-id-placeholder"


def secret_rows_html(secrets: Iterable[Secret], namespace_id: str) -> SafeString:
    """Every Secret's ``<tr>`` (root ``#secret-row-<id>``): its name, short id with copy, when it
    was created, Replace value and Delete. Names and ids only, never a value. Built in one pass
    and escaped cell by cell like the Agents list (``console.views.agents``): a template loop
    made a 200-Secret page 5.8x its JSON list (bench/console_list_render.py)."""
    urls = {name: [escape(part) for part in reverse(f"console:secret-{name}", args=[namespace_id, _ID_PLACEHOLDER])
                   .split(_ID_PLACEHOLDER)] for name in ("value", "delete")}
    sprite = sprite_url()
    trash = f'<svg class="icon" aria-hidden="true" focusable="false"><use href="{escape(sprite)}#trash-2"></use></svg>'
    now = timezone.now()
    rows = []
    for secret in secrets:
        sid = escape(secret.id)
        value_url = f"{urls['value'][0]}{sid}{urls['value'][1]}"
        delete_url = f"{urls['delete'][0]}{sid}{urls['delete'][1]}"
        rows.append(
            f'<tr id="secret-row-{sid}">'
            f'<td data-label="Secret"><span id="secret-name-{sid}">{escape(secret.name)}</span>'
            f'<div class="cell-sub">{id_html(secret.id, sprite=sprite)}</div></td>'
            f'<td data-label="Created">{time_html(secret.created_at, now=now)}</td>'
            f'<td><div class="row-actions"><form method="get" action="{value_url}">'
            f'<button type="submit" class="small" aria-describedby="secret-name-{sid}" data-opens-modal '
            f'hx-get="{value_url}" hx-target="#modal-root" hx-swap="innerHTML">Replace value</button></form>'
            f'<form method="get" action="{delete_url}">'
            f'<button type="submit" class="small ghost link-danger" aria-describedby="secret-name-{sid}" '
            f'data-opens-modal hx-get="{delete_url}" hx-target="#modal-root" hx-swap="innerHTML">{trash}Delete</button>'
            f"</form></div></td></tr>")
    return mark_safe("\n".join(rows))  # noqa: S308 - every value above is escaped


def _list_context(request: ConsoleRequest, **extra: Any) -> dict[str, Any]:
    console = current(request)
    return {
        "console": console,
        "nav": "secrets",
        "namespace_id": console.namespace_id,
        "secrets": SimpleLazyObject(lambda: secret_rows_html(
            secret_list(actor=console.actor, namespace_id=console.namespace_id), console.namespace_id)),
        "form": {"name": ""},
        "errors": {},
        **extra,
        "form_errors": extra.get("errors", {}).get("__all__", []),  # templates cannot read "__all__"
    }


def _create_errors(exc: InvalidRequest | Conflict) -> dict[str, list[str]]:
    if isinstance(exc, Conflict) and exc.code == "RESOURCE_CONFLICT":  # the name is taken
        return {"name": [exc.message]}
    return field_errors(exc, _CREATE_FIELDS)


def _create(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    console = current(request)
    name = request.POST.get("name", "").strip()
    try:
        secret = secret_create(actor=console.actor, namespace_id=namespace_id,
                               command=build(SecretCreate, name=name, value=request.POST.get("value", "")))
    except (InvalidRequest, Conflict) as exc:
        context = _list_context(request, form={"name": name}, errors=_create_errors(exc))
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
    return render(request, LIST, _list_context(request))


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
    try:
        secret = secret_update_value(actor=console.actor, namespace_id=namespace_id, secret_id=secret.id,
                                     command=build(SecretValueUpdate, value=request.POST.get("value", "")))
    except (InvalidRequest, Conflict) as exc:
        context = _secret_context(request, secret, errors=field_errors(exc, {"/value": "value"}))
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
