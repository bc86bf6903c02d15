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

from django.contrib import messages
from django.http import HttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.common import (
    ConsoleRequest,
    console_view,
    current,
    redirect_or_hx,
    render_page,
)
from console.forms.access import ServiceKeyForm, ServicePrincipalForm
from console.pages.lists import PAGE_SIZE, keyset_page, search_text
from console.pages.service_principals import create_principal, issue_key, revoke_key
from occ.models import Principal
from occ.selectors.access import installation_roles_held, service_key_list, service_principal_summary_page
from occ.selectors.paging import decode_text_cursor
from occ.services.iam_policy import service_principal_delete

LIST = "console/access/installation_principals.html"
PAGE = "console/access/installation_principal.html"
NAV = "installation-principals"


def _list_context(request: ConsoleRequest, **extra: Any) -> dict[str, Any]:
    console = current(request)
    q = search_text(request) if request.method == "GET" else ""

    def read(after: str) -> tuple[list[tuple[Principal, int]], str | None]:
        page = service_principal_summary_page(actor=console.actor, namespace_id=None, search=q, after=after,
                                              page_size=PAGE_SIZE)
        return page.rows, page.next_cursor

    page = keyset_page(request, read, base=reverse("console:installation-principals"),
                       keep={"q": q} if q else None, decode=decode_text_cursor)
    roles = installation_roles_held([p.id for p, _ in page.rows])  # the page's principals only
    context: dict[str, Any] = {
        "console": console, "nav": NAV, "hide_namespace_selector": True, "q": q, "page": page,
        "principals": [(p, keys, roles.get(p.id, [])) for p, keys in page.rows],
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
    form = ServicePrincipalForm(request.POST)
    principal = create_principal(request, form, namespace_id=None)
    if principal is not None:
        return redirect_or_hx(request, reverse("console:installation-principal", args=[principal.id]))
    return render_page(request, LIST, _list_context(request, principal_form=form),
                       partial="installation-principals-panel")


def _context(request: ConsoleRequest, principal_id: str, **extra: Any) -> dict[str, Any]:
    console = current(request)
    principal, keys = service_key_list(actor=console.actor, namespace_id=None, principal_id=principal_id)
    context: dict[str, Any] = {
        "console": console, "nav": NAV, "hide_namespace_selector": True, "principal": principal, "keys": keys,
        "held": installation_roles_held([principal.id]).get(principal.id, []),
        "keys_url": reverse("console:installation-keys", args=[principal.id]),
        "key_rows": [(key, reverse("console:installation-key-revoke", args=[principal.id, key.id])) for key in keys],
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
    return issue_key(request, namespace_id=None, principal_id=principal_id, page=PAGE, context_of=_context)


@require_http_methods(["GET", "POST"])
@console_view
def key_revoke(request: ConsoleRequest, principal_id: str, key_id: str) -> HttpResponse:
    return revoke_key(request, principal_id=principal_id, key_id=key_id, page=PAGE,
                      confirm="console/access/installation_key_revoke.html", context_of=_context,
                      page_url=reverse("console:installation-principal", args=[principal_id]))


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
