"""The Installation's own service principals (no Namespace): the list with search and pages,
creating one, its page with its API keys, and deleting it.

Every read and write asks what the API's services ask, ``installation:administer`` outside any
Namespace scope: ``service_principal_create`` / ``service_principal_delete`` with
``namespace_id=None``, and the same key services as a Namespace principal's page. A person without
it gets the console's 403 page, as on Members. A new key's token is only in the answer to the POST
that issued it (``#keys-panel``), never in a GET, a session or a message.

Fragments (partial = DOM id = ``hx-target``): ``#installation-principals-panel`` (create form and
table), ``#installation-principals-table`` (search, pages), ``#keys-panel``, and the
confirmations ``#key-revoke-dialog`` / ``#principal-delete-dialog``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget

from console.access_forms import DAY, ServiceKeyForm, ServicePrincipalForm, refuse
from console.common import (
    CLOSE_MODAL_EVENT,
    ConsoleRequest,
    console_view,
    current,
    redirect_or_hx,
    render_page,
    trigger,
)
from console.views.access import paged, search_text
from occ.commands.base import build
from occ.commands.iam import ServicePrincipalCreate
from occ.commands.service_keys import ServiceKeyCreate
from occ.errors import InvalidRequest, NotFound
from occ.selectors.access import KeyView, installation_roles_held, service_key_list, service_principal_summaries
from occ.services.iam_policy import service_principal_create, service_principal_delete
from occ.services.service_keys import IssuedKey, service_key_create, service_key_revoke

LIST = "console/access/installation_principals.html"
PAGE = "console/access/installation_principal.html"
NAV = "installation-principals"


def _list_context(request: ConsoleRequest, **extra: Any) -> dict[str, Any]:
    console = current(request)
    q = search_text(request) if request.method == "GET" else ""
    summaries = service_principal_summaries(actor=console.actor, namespace_id=None, search=q)
    roles = installation_roles_held([p.id for p, _ in summaries])
    context: dict[str, Any] = {
        "console": console, "nav": NAV, "hide_namespace_selector": True, "q": q,
        "q_keep": urlencode({"q": q}) if q else "",
        "principals": paged([(p, keys, roles.get(p.id, [])) for p, keys in summaries], request.GET.get("page")),
        "principal_form": ServicePrincipalForm(),
    }
    context.update(extra)
    return context


@require_http_methods(["GET", "POST"])
@console_view
def installation_principals(request: ConsoleRequest) -> HttpResponse:
    """GET: the page, or its ``#installation-principals-table`` for the search and pages. POST:
    create one, then go to its page to issue a key."""
    if request.method == "GET":
        return render_page(request, LIST, _list_context(request), partial="installation-principals-table")
    console = current(request)
    form = ServicePrincipalForm(request.POST)
    if form.is_valid():
        try:
            principal = service_principal_create(actor=console.actor, namespace_id=None,
                                                 command=build(ServicePrincipalCreate, name=form.cleaned_data["name"]))
        except InvalidRequest as exc:
            refuse(form, exc, {"/name": "name"})
        else:
            messages.success(request, f"Service principal {principal.name} created. Issue it a key here.")
            return redirect_or_hx(request, reverse("console:installation-principal", args=[principal.id]))
    return render_page(request, LIST, _list_context(request, principal_form=form),
                       partial="installation-principals-panel")


def _context(request: ConsoleRequest, principal_id: str, **extra: Any) -> dict[str, Any]:
    console = current(request)
    principal, keys = service_key_list(actor=console.actor, namespace_id=None, principal_id=principal_id)
    context: dict[str, Any] = {
        "console": console, "nav": NAV, "hide_namespace_selector": True, "principal": principal, "keys": keys,
        "held": installation_roles_held([principal.id]).get(principal.id, []),
        "key_form": ServiceKeyForm(), "modal": bool(request.htmx), "issued": None,
    }
    context.update(extra)
    return context


@require_GET
@console_view
def installation_principal(request: ConsoleRequest, principal_id: str) -> HttpResponse:
    return render_page(request, PAGE, _context(request, principal_id), partial="keys-panel")


@require_POST
@console_view
def key_create(request: ConsoleRequest, principal_id: str) -> HttpResponse:
    """Issue a key; the answer (the page, or ``#keys-panel`` for htmx) shows its token once."""
    console = current(request)
    context = _context(request, principal_id)  # 403 / 404 before anything is issued
    form = ServiceKeyForm(request.POST)
    issued: IssuedKey | None = None
    if form.is_valid():
        try:
            issued = service_key_create(actor=console.actor, command=build(
                ServiceKeyCreate, service_principal_id=principal_id, namespace_id=None,
                name=form.cleaned_data["name"], expires_in=form.cleaned_data["expires_in_days"] * DAY))
        except InvalidRequest as exc:
            refuse(form, exc, {"/name": "name", "/expiresIn": "expires_in_days"})
    if issued is not None:
        context = _context(request, principal_id, issued=issued)
    else:
        context["key_form"] = form
    return render_page(request, PAGE, context, partial="keys-panel")


def _key(keys: list[KeyView], key_id: str) -> KeyView:
    found = next((k for k in keys if k.id == key_id), None)
    if found is None:
        raise NotFound("This service principal has no such key; it may have been revoked already.")
    return found


@require_http_methods(["GET", "POST"])
@console_view
def key_revoke(request: ConsoleRequest, principal_id: str, key_id: str) -> HttpResponse:
    """GET: the confirmation. POST: revoke; requests with the key are refused from then on."""
    console = current(request)
    context = _context(request, principal_id)
    key = _key(context["keys"], key_id)  # only a key of this principal
    if request.method == "GET":
        return render_page(request, "console/access/installation_key_revoke.html", {**context, "key": key},
                           partial="key-revoke-dialog")
    service_key_revoke(actor=console.actor, key_id=key.id)
    messages.success(request, f"Key {key.name} revoked.")
    if not request.htmx:
        return redirect("console:installation-principal", principal_id)
    response = render_page(request, PAGE, _context(request, principal_id), partial="keys-panel")
    return trigger(reswap(retarget(response, "#keys-panel"), "outerHTML"), CLOSE_MODAL_EVENT)


@require_http_methods(["GET", "POST"])
@console_view
def principal_delete(request: ConsoleRequest, principal_id: str) -> HttpResponse:
    """GET: the confirmation. POST: delete it with its keys and Role bindings, then go to the list."""
    console = current(request)
    context = _context(request, principal_id)
    template = "console/access/installation_principal_delete.html"
    if request.method == "GET":
        return render_page(request, template, context, partial="principal-delete-dialog")
    # The one refusal past the 403/404 above (deleting the principal one acts as) cannot meet a person.
    service_principal_delete(actor=console.actor, namespace_id=None, principal_id=principal_id)
    messages.success(request, f"Service principal {context['principal'].name} deleted; its keys no longer work.")
    return redirect_or_hx(request, reverse("console:installation-principals"))


_SP = "members/service-principals"

urlpatterns = [
    path(_SP, installation_principals, name="installation-principals"),
    path(f"{_SP}/<str:principal_id>", installation_principal, name="installation-principal"),
    path(f"{_SP}/<str:principal_id>/keys", key_create, name="installation-keys"),
    path(f"{_SP}/<str:principal_id>/keys/<str:key_id>/revoke", key_revoke, name="installation-key-revoke"),
    path(f"{_SP}/<str:principal_id>/delete", principal_delete, name="installation-principal-delete"),
]
