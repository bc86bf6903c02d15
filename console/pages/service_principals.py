"""What the two service principal pages share (a Namespace's, ``console.views.access`` and
``console.views.service_keys``; the Installation's, ``console.views.installation_principals``):
creating one from its list, and its page's keys panel (the issue form, the keys, a new key's
token shown once, and revoking one behind its confirmation).

Creating is ``occ.services.iam_policy.service_principal_create``; issuing and revoking are
``occ.services.service_keys``, the API's own. A new key's token exists only in the answer to the
POST that issued it (``#keys-panel``): it is never stored, put in a session or a message, or
rendered by a GET.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django_htmx.http import reswap, retarget

from console.common import CLOSE_MODAL_EVENT, ConsoleRequest, current, render_page, trigger
from console.forms.access import DAY, ServiceKeyForm, ServicePrincipalForm
from occ.commands.base import build
from occ.commands.iam import ServicePrincipalCreate
from occ.commands.service_keys import ServiceKeyCreate
from occ.errors import InvalidRequest, NotFound
from occ.models import Principal
from occ.services.iam_policy import service_principal_create
from occ.services.service_keys import IssuedKey, service_key_create, service_key_revoke


def create_principal(request: ConsoleRequest, form: ServicePrincipalForm, *,
                     namespace_id: str | None) -> Principal | None:
    """Create the service principal ``form`` names (``namespace_id=None``: an Installation one) and
    say so; None, with the refusal on ``form``, when it is not valid or the service refuses it."""
    if not form.is_valid():
        return None
    try:
        principal = service_principal_create(actor=current(request).actor, namespace_id=namespace_id,
                                             command=build(ServicePrincipalCreate, name=form.cleaned_data["name"]))
    except InvalidRequest as exc:
        form.refuse(exc, ServicePrincipalCreate)
        return None
    messages.success(request, f"Service principal {principal.name} created. Issue it a key here.")
    return principal


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
            form.refuse(exc, ServiceKeyCreate)
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
