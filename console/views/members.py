"""Members: the Installation's people (accounts) and what they hold; adding a person with a Role
on some Namespaces (or everywhere, or none); a person's page to disable, re-enable or remove
them or give them a one-time password; and everyone's own "Change password" page.

The writes are ``occ.services.accounts``, as ``/api/auth/accounts`` calls them (authorized by
``installation:administer``, or being the person, and audited in their transaction). Passwords
go from a form to the service and are never rendered back (the inputs always render empty).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods, require_POST

from console.common import ConsoleRequest, console_view, current, render_page
from console.forms.access import AccountForm, PasswordChangeForm, PasswordSetForm, SingleSignOnForm
from console.pages.lists import PAGE_SIZE, keyset_page, search_text
from occ.commands.accounts import AccountCreate, PasswordChange, PasswordSet
from occ.commands.base import build
from occ.errors import Conflict, InvalidRequest
from occ.iam import oidc
from occ.selectors.access import AccountView, account_get, account_page, installation_role_choices, namespace_choices
from occ.selectors.paging import decode_text_cursor
from occ.services.accounts import (
    account_create,
    account_delete,
    account_password_change,
    account_password_set,
    account_set_active,
)
from occ.services.single_sign_on import account_sso_set

PAGE = "console/access/members.html"
PERSON_PAGE = "console/access/member.html"
PASSWORD_PAGE = "console/access/password.html"


def _account_form(request: ConsoleRequest, data: Any = None) -> AccountForm:
    actor = current(request).actor
    return AccountForm(data, roles=installation_role_choices(actor=actor), namespaces=namespace_choices(actor=actor))


def _context(request: ConsoleRequest, **extra: Any) -> dict[str, Any]:
    console = current(request)
    q = search_text(request) if request.method == "GET" else ""

    def read(after: str) -> tuple[list[AccountView], str | None]:
        page = account_page(actor=console.actor, search=q, after=after, page_size=PAGE_SIZE)
        return page.rows, page.next_cursor

    page = keyset_page(request, read, base=reverse("console:members"), keep={"q": q} if q else None,
                       decode=decode_text_cursor)
    context: dict[str, Any] = {
        "console": console, "nav": "members", "hide_namespace_selector": True, "q": q, "page": page,
        "accounts": page.rows,
        "form": _account_form(request),
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
    form = _account_form(request, request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            account = account_create(actor=console.actor, command=build(
                AccountCreate, username=data["username"], name=data["name"] or None, password=data["password"],
                role_id=data["role"] or None, namespace_ids=data["namespaces"]))
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


def _person_context(request: ConsoleRequest, principal_id: str, **extra: Any) -> dict[str, Any]:
    console = current(request)
    account = account_get(actor=console.actor, principal_id=principal_id)
    context: dict[str, Any] = {
        "console": console, "nav": "members", "hide_namespace_selector": True, "account": account,
        "is_self": console.actor.id == principal_id, "password_form": PasswordSetForm(),
        "sso_provider": oidc.provider_name() if oidc.enabled() else None,
        "sso_form": SingleSignOnForm(initial={"email": account.email, "subject": account.sso_subject or ""}),
    }
    context.update(extra)
    return context


@require_http_methods(["GET"])
@console_view
def member(request: ConsoleRequest, principal_id: str) -> HttpResponse:
    return render_page(request, PERSON_PAGE, _person_context(request, principal_id), partial="member-panel")


def _after(request: ConsoleRequest, principal_id: str, refused: Conflict | None = None) -> HttpResponse:
    if refused is not None:
        messages.error(request, refused.message)
    if not request.htmx:
        return redirect("console:member", principal_id)
    return render_page(request, PERSON_PAGE, _person_context(request, principal_id), partial="member-panel")


@require_POST
@console_view
def member_active(request: ConsoleRequest, principal_id: str) -> HttpResponse:
    """Disable (``active=0``: sessions and keys end at once) or re-enable (``active=1``)."""
    active = request.POST.get("active") == "1"
    try:
        account_set_active(actor=current(request).actor, principal_id=principal_id, active=active)
    except Conflict as exc:
        return _after(request, principal_id, exc)
    messages.success(request, "Account enabled: they can sign in again." if active else
                     "Account disabled: their sessions ended and they cannot sign in.")
    return _after(request, principal_id)


@require_POST
@console_view
def member_password(request: ConsoleRequest, principal_id: str) -> HttpResponse:
    """Set a one-time password; the person must choose their own after signing in with it."""
    form = PasswordSetForm(request.POST)
    if form.is_valid():
        try:
            account_password_set(actor=current(request).actor, principal_id=principal_id,
                                 command=build(PasswordSet, password=form.cleaned_data["password"]))
        except Conflict as exc:
            return _after(request, principal_id, exc)
        except InvalidRequest as exc:
            form.refuse(exc, PasswordSet)
        else:
            messages.success(request, "One-time password set. Give it to them privately; "
                             "they choose their own when they sign in.")
            return _after(request, principal_id)
    return render_page(request, PERSON_PAGE, _person_context(request, principal_id, password_form=form),
                       partial="member-panel")


@require_POST
@console_view
def member_single_sign_on(request: ConsoleRequest, principal_id: str) -> HttpResponse:
    """The person's email for linking by verified email, and their explicit link (a subject);
    there is no such page while single sign-on is off."""
    if not oidc.enabled():
        raise Http404("Single sign-on is not configured.")
    form = SingleSignOnForm(request.POST)
    if form.is_valid():
        try:
            account_sso_set(actor=current(request).actor, principal_id=principal_id,
                            subject=form.cleaned_data["subject"], email=form.cleaned_data["email"])
        except (Conflict, InvalidRequest) as exc:
            form.add_error("subject" if isinstance(exc, Conflict) else "email", exc.message)
        else:
            messages.success(request, "Single sign-on settings saved.")
            return _after(request, principal_id)
    return render_page(request, PERSON_PAGE, _person_context(request, principal_id, sso_form=form),
                       partial="member-panel")


@require_POST
@console_view
def member_delete(request: ConsoleRequest, principal_id: str) -> HttpResponse:
    console = current(request)
    account = account_get(actor=console.actor, principal_id=principal_id)
    try:
        account_delete(actor=console.actor, principal_id=principal_id)
    except Conflict as exc:
        return _after(request, principal_id, exc)
    messages.success(request, f"Account {account.username} removed.")
    return redirect("console:members")


@require_http_methods(["GET", "POST"])
@console_view
def password(request: ConsoleRequest) -> HttpResponse:
    """The signed-in person's own password; the only page open while a one-time one is pending."""
    console = current(request)
    form = PasswordChangeForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = account_password_change(actor=console.actor, command=build(
                PasswordChange, current_password=data["current_password"], new_password=data["new_password"]))
        except InvalidRequest as exc:
            form.refuse(exc, PasswordChange)
        else:
            update_session_auth_hash(request, user)
            messages.success(request, "Password changed. Your other sessions were signed out.")
            return redirect("console:home")
    context = {"console": console, "nav": "", "hide_namespace_selector": True, "form": form,
               "pending": console.actor.principal.must_change_password}
    return render_page(request, PASSWORD_PAGE, context, partial="password-panel")


urlpatterns = [
    path("members", members, name="members"),
    path("members/people/<str:principal_id>", member, name="member"),
    path("members/people/<str:principal_id>/active", member_active, name="member-active"),
    path("members/people/<str:principal_id>/password", member_password, name="member-password"),
    path("members/people/<str:principal_id>/delete", member_delete, name="member-delete"),
    path("members/people/<str:principal_id>/single-sign-on", member_single_sign_on, name="member-single-sign-on"),
    path("account/password", password, name="password"),
]
