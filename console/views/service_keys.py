"""A Namespace service principal's page: its API keys (issue, revoke) and the Roles it holds.

Issuing and revoking are ``occ.services.service_keys``, the API's own (``installation:administer``
outside any Namespace scope, audited with identifiers only). The new key's token exists in one
place: the answer to the POST that issued it (``#keys-panel`` with the ``#new-key`` block and its
copy button). It is never stored, put in a session or a message, or rendered by a GET; console
pages are ``no-store``, so neither a reload nor the back button shows it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget

from console.access_forms import DAY, ServiceKeyForm, refuse
from console.common import CLOSE_MODAL_EVENT, ConsoleRequest, console_view, current, render_page, trigger
from occ.commands.base import build
from occ.commands.service_keys import ServiceKeyCreate
from occ.errors import InvalidRequest, NotFound
from occ.selectors.access import namespace_access, service_key_list
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
        "keys_url": reverse("console:service-keys", args=[console.namespace_id, principal.id]),
        "key_rows": [(key, reverse("console:service-key-revoke", args=[console.namespace_id, principal.id, key.id]))
                     for key in keys],
        "key_form": ServiceKeyForm(), "modal": bool(request.htmx), "issued": None,
    }
    context.update(extra)
    return context


@require_GET
@console_view
def service_principal_page(request: ConsoleRequest, namespace_id: str, principal_id: str) -> HttpResponse:
    return render_page(request, PAGE, _context(request, principal_id), partial="keys-panel")


ContextOf = Callable[..., dict[str, Any]]
"""A principal page's context: ``(request, principal_id, **extra)``; it reads (and so authorizes)
the principal and its keys, raising the console's 403 / 404."""


def issue_key(request: ConsoleRequest, *, namespace_id: str | None, principal_id: str, page: str,
              context_of: ContextOf) -> HttpResponse:
    """Issue a key (``namespace_id=None``: an Installation principal's); the answer, the page or
    ``#keys-panel`` for htmx, shows its token once. Shared by both principal pages."""
    console = current(request)
    context = context_of(request, principal_id)  # 403 / 404 before anything is issued
    form = ServiceKeyForm(request.POST)
    issued: IssuedKey | None = None
    if form.is_valid():
        try:
            issued = service_key_create(actor=console.actor, command=build(
                ServiceKeyCreate, service_principal_id=principal_id, namespace_id=namespace_id,
                name=form.cleaned_data["name"], expires_in=form.cleaned_data["expires_in_days"] * DAY))
        except InvalidRequest as exc:
            refuse(form, exc, {"/name": "name", "/expiresIn": "expires_in_days"})
    if issued is not None:
        context = context_of(request, principal_id, issued=issued)
    else:
        context["key_form"] = form
    return render_page(request, page, context, partial="keys-panel")


def revoke_key(request: ConsoleRequest, *, principal_id: str, key_id: str, page: str, confirm: str,
               context_of: ContextOf, page_url: str) -> HttpResponse:
    """GET: the confirmation (``confirm``'s ``#key-revoke-dialog``). POST: revoke; requests with the
    key are refused from then on. Only a key of this principal, in the page's scope, is found."""
    console = current(request)
    context = context_of(request, principal_id)
    key = next((k for k in context["keys"] if k.id == key_id), None)
    if key is None:
        raise NotFound("This service principal has no such key; it may have been revoked already.")
    if request.method == "GET":
        return render_page(request, confirm, {**context, "key": key}, partial="key-revoke-dialog")
    service_key_revoke(actor=console.actor, key_id=key.id)
    messages.success(request, f"Key {key.name} revoked.")
    if not request.htmx:
        return redirect(page_url)
    response = render_page(request, page, context_of(request, principal_id), partial="keys-panel")
    return trigger(reswap(retarget(response, "#keys-panel"), "outerHTML"), CLOSE_MODAL_EVENT)


@require_POST
@console_view
def key_create(request: ConsoleRequest, namespace_id: str, principal_id: str) -> HttpResponse:
    return issue_key(request, namespace_id=namespace_id, principal_id=principal_id, page=PAGE, context_of=_context)


@require_http_methods(["GET", "POST"])
@console_view
def key_revoke(request: ConsoleRequest, namespace_id: str, principal_id: str, key_id: str) -> HttpResponse:
    return revoke_key(request, principal_id=principal_id, key_id=key_id, page=PAGE,
                      confirm="console/access/key_revoke.html", context_of=_context,
                      page_url=reverse("console:service-principal", args=[namespace_id, principal_id]))


_SP = "namespaces/<str:namespace_id>/access/service-principals/<str:principal_id>"

urlpatterns = [
    path(_SP, service_principal_page, name="service-principal"),
    path(f"{_SP}/keys", key_create, name="service-keys"),
    path(f"{_SP}/keys/<str:key_id>/revoke", key_revoke, name="service-key-revoke"),
]
