"""Members: the Installation's people (accounts) and their Installation Roles; creating an
account. ``occ.services.accounts`` does it as ``POST /api/auth/accounts`` does (authorized by
``installation:administer``, audited in its transaction); the password goes from the form to the
service and is never rendered back (the input is always empty)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_http_methods

from console.common import ConsoleRequest, console_view, current, render_page
from console.forms.access import AccountForm
from console.pages.lists import paged, search_text
from occ.commands.accounts import AccountCreate
from occ.commands.base import build
from occ.errors import Conflict, InvalidRequest
from occ.selectors.access import account_list, installation_role_choices
from occ.services.accounts import account_create

PAGE = "console/access/members.html"


def _context(request: ConsoleRequest, **extra: Any) -> dict[str, Any]:
    console = current(request)
    q = search_text(request) if request.method == "GET" else ""
    roles = installation_role_choices(actor=console.actor)
    context: dict[str, Any] = {
        "console": console, "nav": "members", "hide_namespace_selector": True, "q": q,
        "q_keep": urlencode({"q": q}) if q else "",
        "accounts": paged(account_list(actor=console.actor, search=q), request.GET.get("page")),
        "roles": roles, "form": AccountForm(roles=roles),
    }
    context.update(extra)
    return context


@require_http_methods(["GET", "POST"])
@console_view
def members(request: ConsoleRequest) -> HttpResponse:
    """GET: the page, or its ``#accounts-table`` for the search and pages. POST: create an account."""
    if request.method == "GET":
        return render_page(request, PAGE, _context(request), partial="accounts-table")
    console = current(request)
    form = AccountForm(request.POST, roles=installation_role_choices(actor=console.actor))
    if form.is_valid():
        data = form.cleaned_data
        try:
            account = account_create(actor=console.actor, command=build(
                AccountCreate, username=data["username"], name=data["name"] or None, password=data["password"],
                role_id=data["role"]))
        except (InvalidRequest, Conflict) as exc:
            if isinstance(exc, Conflict):  # the username is taken
                form.add_error("username", exc.message)
            else:
                form.refuse(exc, AccountCreate)
        else:
            messages.success(request, f"Account {account.username} created. They can sign in now.")
            if not request.htmx:
                return redirect("console:members")
            return render_page(request, PAGE, _context(request), partial="accounts-panel")
    return render_page(request, PAGE, _context(request, form=form), partial="accounts-panel")


urlpatterns = [
    path("members", members, name="members"),
]
