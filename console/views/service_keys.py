"""A Namespace service principal's page: its API keys (issue, revoke) and the Roles it holds.

Issuing and revoking are ``occ.services.service_keys``, the API's own (``installation:administer``
outside any Namespace scope, audited with identifiers only), through the keys panel both principal
pages share (``console.pages.service_principals``). The new key's token exists in one
place: the answer to the POST that issued it (``#keys-panel`` with the ``#new-key`` block and its
copy button). It is never stored, put in a session or a message, or rendered by a GET; console
pages are ``no-store``, so neither a reload nor the back button shows it again.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.common import ConsoleRequest, console_view, current, render_page
from console.forms.access import ServiceKeyForm
from console.pages.service_principals import issue_key, revoke_key
from occ.selectors.access import namespace_access, service_key_list

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
