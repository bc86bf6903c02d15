"""A Namespace service principal's page: its API keys (issue, revoke) and the Roles it holds.

Issuing and revoking are ``occ.services.service_keys``, the API's own (``installation:administer``
outside any Namespace scope, audited with identifiers only). The new key's token exists in one
place: the answer to the POST that issued it (``#keys-panel`` with the ``#new-key`` block and its
copy button). It is never stored, put in a session or a message, or rendered by a GET; console
pages are ``no-store``, so neither a reload nor the back button shows it again.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget

from console.access_forms import DAY, ServiceKeyForm, refuse
from console.common import CLOSE_MODAL_EVENT, ConsoleRequest, console_view, current, render_page, trigger
from occ.commands.base import build
from occ.commands.service_keys import ServiceKeyCreate
from occ.errors import InvalidRequest, NotFound
from occ.selectors.access import KeyView, namespace_access, service_key_list
from occ.selectors.iam import service_principal_get
from occ.services.service_keys import IssuedKey, service_key_create, service_key_revoke

PAGE = "console/access/service_principal.html"


def _context(request: ConsoleRequest, principal_id: str, **extra: Any) -> dict[str, Any]:
    console = current(request)
    principal, keys = service_key_list(actor=console.actor, namespace_id=console.namespace_id,
                                       principal_id=principal_id)
    access = namespace_access(actor=console.actor, namespace_id=console.namespace_id)
    context: dict[str, Any] = {
        "console": console, "nav": "access", "namespace_id": console.namespace_id, "principal": principal,
        "keys": keys, "held": [b for b in access.bindings if b.binding.principal_id == principal.id],
        "key_form": ServiceKeyForm(), "modal": bool(request.htmx), "issued": None,
    }
    context.update(extra)
    return context


@require_GET
@console_view
def service_principal_page(request: ConsoleRequest, namespace_id: str, principal_id: str) -> HttpResponse:
    return render_page(request, PAGE, _context(request, principal_id), partial="keys-panel")


@require_POST
@console_view
def key_create(request: ConsoleRequest, namespace_id: str, principal_id: str) -> HttpResponse:
    """Issue a key; the answer (the page, or ``#keys-panel`` for htmx) shows its token once."""
    console = current(request)
    form = ServiceKeyForm(request.POST)
    issued: IssuedKey | None = None
    service_principal_get(actor=console.actor, namespace_id=namespace_id, principal_id=principal_id)
    if form.is_valid():
        try:
            issued = service_key_create(actor=console.actor, command=build(
                ServiceKeyCreate, service_principal_id=principal_id, namespace_id=namespace_id,
                name=form.cleaned_data["name"], expires_in=form.cleaned_data["expires_in_days"] * DAY))
        except InvalidRequest as exc:
            refuse(form, exc, {"/name": "name", "/expiresIn": "expires_in_days"})
    context = _context(request, principal_id, key_form=form if issued is None else ServiceKeyForm(), issued=issued)
    return render_page(request, PAGE, context, partial="keys-panel")


def _key(keys: list[KeyView], key_id: str) -> KeyView:
    found = next((k for k in keys if k.id == key_id), None)
    if found is None:
        raise NotFound("This service principal has no such key; it may have been revoked already.")
    return found


@require_http_methods(["GET", "POST"])
@console_view
def key_revoke(request: ConsoleRequest, namespace_id: str, principal_id: str, key_id: str) -> HttpResponse:
    """GET: the confirmation. POST: revoke; requests with the key are refused from then on."""
    console = current(request)
    context = _context(request, principal_id)
    key = _key(context["keys"], key_id)  # only a key of this principal, in this Namespace
    if request.method == "GET":
        return render_page(request, "console/access/key_revoke.html", {**context, "key": key},
                           partial="key-revoke-dialog")
    service_key_revoke(actor=console.actor, key_id=key.id)
    messages.success(request, f"Key {key.name} revoked.")
    if not request.htmx:
        return redirect("console:service-principal", namespace_id, principal_id)
    response = render_page(request, PAGE, _context(request, principal_id), partial="keys-panel")
    return trigger(reswap(retarget(response, "#keys-panel"), "outerHTML"), CLOSE_MODAL_EVENT)


_SP = "namespaces/<str:namespace_id>/access/service-principals/<str:principal_id>"

urlpatterns = [
    path(_SP, service_principal_page, name="service-principal"),
    path(f"{_SP}/keys", key_create, name="service-keys"),
    path(f"{_SP}/keys/<str:key_id>/revoke", key_revoke, name="service-key-revoke"),
]
