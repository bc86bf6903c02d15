"""Access to a Namespace: its service principals, its Roles and its role bindings.

Every write is the API's own service (``occ.services.iam_policy``), so it is authorized on the
exact Namespace and audited in its transaction exactly as ``/namespaces/{ns}/iam`` is; the
reads are the selectors the API uses (``policy_namespace`` first: ``installation:administer``
and ``read`` on the Namespace). A person without that sees the console's 403 page.

Fragments (partial = DOM id = ``hx-target``): ``#service-principals-panel`` (create form and
table), ``#service-principals-table`` (search and pages), ``#bindings-panel`` (grant form and
table; it reloads itself on ``occ:roles-changed``, when the Roles it offers change),
``#roles-panel``, and the confirmations ``#binding-revoke-dialog`` / ``#role-delete-dialog``.
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget

from console.common import (
    CLOSE_MODAL_EVENT,
    ConsoleRequest,
    console_view,
    current,
    redirect_or_hx,
    render_page,
    trigger,
)
from console.forms.access import BindingForm, RoleForm, ServicePrincipalForm
from console.pages.lists import PAGE_SIZE, KeysetPage, keyset_page, paged, search_text
from console.pages.service_principals import create_principal
from occ.commands.base import build
from occ.commands.iam import IDENTITY_SUBJECT, AccessBindingCreate, RoleCreate
from occ.errors import Conflict, InvalidRequest, NotFound
from occ.models import Principal
from occ.selectors.access import (
    BindingView,
    Choice,
    NamespaceAccess,
    namespace_access,
    service_principal_summary_page,
)
from occ.selectors.iam import role_get, role_grantable
from occ.selectors.paging import decode_text_cursor
from occ.services.iam_policy import access_binding_create, access_binding_delete, role_create, role_delete

PAGE = "console/access/namespace.html"
ROLES_CHANGED = "occ:roles-changed"


def _matching_bindings(bindings: list[BindingView], text: str) -> list[BindingView]:
    if not text:
        return bindings
    needle = text.casefold()
    return [b for b in bindings if needle in " ".join(
        (b.subject_name, b.role_name, b.target_label, b.binding.id, b.binding.principal_id)).casefold()]


def _principal_page(request: ConsoleRequest, q: str) -> KeysetPage[tuple[Principal, int]]:
    """The page of the Namespace's service principals matching ``q`` the link names (``?after=``), by name."""
    console = current(request)

    def read(after: str) -> tuple[list[tuple[Principal, int]], str | None]:
        page = service_principal_summary_page(actor=console.actor, namespace_id=console.namespace_id, search=q,
                                              after=after, page_size=PAGE_SIZE)
        return page.rows, page.next_cursor

    return keyset_page(request, read, base=reverse("console:service-principals", args=[console.namespace_id]),
                       keep={"q": q} if q else None, decode=decode_text_cursor)


def _context(request: ConsoleRequest, access: NamespaceAccess | None = None, **extra: Any) -> dict[str, Any]:
    console = current(request)
    access = access or namespace_access(actor=console.actor, namespace_id=console.namespace_id)
    q = search_text(request) if request.method == "GET" else ""
    binding_q = search_text(request, "bq") if request.method == "GET" else ""
    context: dict[str, Any] = {
        "console": console, "nav": "access", "namespace_id": console.namespace_id, "access": access,
        "q": q, "bq": binding_q, "modal": bool(request.htmx),
        "q_keep": urlencode({"q": q}) if q else "", "bq_keep": urlencode({"bq": binding_q}) if binding_q else "",
        "principals": _principal_page(request, q),
        "bindings": paged(_matching_bindings(access.bindings, binding_q), request.GET.get("bpage")),
        "principal_form": ServicePrincipalForm(),
        "role_form": role_form(request),
        "binding_form": binding_form(access),
    }
    context.update(extra)
    return context


def role_form(request: ConsoleRequest, data: Any = None) -> RoleForm:
    """The Role form offering what the caller may grant (everything, for an Installation administrator)."""
    console = current(request)
    return RoleForm(data, grantable=functools.partial(role_grantable, console.actor, console.namespace_id))


def binding_form(access: NamespaceAccess, data: Any = None) -> BindingForm:
    return BindingForm(data, subjects=access.subjects, targets=access.targets,
                       roles=[Choice(r.id, r.name) for r in access.roles])


@require_GET
@console_view
def access_page(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    return render_page(request, PAGE, _context(request), partial="access-page")


# --- service principals ----------------------------------------------------------------------

@require_http_methods(["GET", "POST"])
@console_view
def service_principals(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """GET: the table (search, pages). POST: create one, then go to its page to issue a key."""
    if request.method == "GET":
        return render_page(request, PAGE, _context(request), partial="service-principals-table")
    form = ServicePrincipalForm(request.POST)
    principal = create_principal(request, form, namespace_id=namespace_id)
    if principal is not None:
        return redirect_or_hx(request, reverse("console:service-principal", args=[namespace_id, principal.id]))
    return render_page(request, PAGE, _context(request, principal_form=form), partial="service-principals-panel")


# --- role bindings ---------------------------------------------------------------------------

@require_http_methods(["GET", "POST"])
@console_view
def bindings(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """GET: the panel (search, pages, fresh Role choices). POST: grant a Role to a principal."""
    if request.method == "GET":
        partial = "bindings-table" if "bq" in request.GET or "bpage" in request.GET else "bindings-panel"
        return render_page(request, PAGE, _context(request), partial=partial)
    console = current(request)
    access = namespace_access(actor=console.actor, namespace_id=namespace_id)
    form = binding_form(access, request.POST)
    if form.is_valid():
        kind, resource_id = form.target_parts()
        try:
            binding = access_binding_create(actor=console.actor, namespace_id=namespace_id, command=build(
                AccessBindingCreate, subject_kind=IDENTITY_SUBJECT, subject_id=form.cleaned_data["subject"],
                role_id=form.cleaned_data["role"], resource_kind=kind, resource_id=resource_id))
        except (InvalidRequest, Conflict) as exc:
            form.refuse(exc, AccessBindingCreate)
        else:
            # Named as the bindings table names it (the fresh read the panel renders), never by id.
            access = namespace_access(actor=console.actor, namespace_id=namespace_id)
            granted = _binding(access, binding.id)
            messages.success(request, f"Granted {granted.role_name} to {granted.subject_name}.")
            if not request.htmx:
                return redirect("console:access", namespace_id)
            return render_page(request, PAGE, _context(request, access), partial="bindings-panel")
    return render_page(request, PAGE, _context(request, access, binding_form=form), partial="bindings-panel")


def _binding(access: NamespaceAccess, binding_id: str) -> BindingView:
    found = next((b for b in access.bindings if b.binding.id == binding_id), None)
    if found is None:
        raise NotFound("The role binding does not exist in this Namespace; it may have been revoked already.")
    return found


@require_http_methods(["GET", "POST"])
@console_view
def binding_revoke(request: ConsoleRequest, namespace_id: str, binding_id: str) -> HttpResponse:
    """GET: the confirmation (a dialog for htmx, a page otherwise). POST: revoke the binding."""
    console = current(request)
    access = namespace_access(actor=console.actor, namespace_id=namespace_id)
    found = _binding(access, binding_id)
    if request.method == "GET":
        return render_page(request, "console/access/binding_revoke.html",
                           _context(request, access, binding=found), partial="binding-revoke-dialog")
    access_binding_delete(actor=console.actor, namespace_id=namespace_id, binding_id=binding_id)
    messages.success(request, f"Revoked {found.role_name} from {found.subject_name}.")
    if not request.htmx:
        return redirect("console:access", namespace_id)
    response = render_page(request, PAGE, _context(request), partial="bindings-panel")
    return trigger(reswap(retarget(response, "#bindings-panel"), "outerHTML"), CLOSE_MODAL_EVENT)


# --- Roles -----------------------------------------------------------------------------------

@require_POST
@console_view
def roles(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """Create a Role; the bindings panel reloads to offer it (``occ:roles-changed``)."""
    console = current(request)
    form = role_form(request, request.POST)
    if form.is_valid():
        try:
            role = role_create(actor=console.actor, namespace_id=namespace_id, command=build(
                RoleCreate, name=form.cleaned_data["name"], permissions=form.permission_pairs()))
        except (InvalidRequest, Conflict) as exc:
            form.refuse(exc, RoleCreate)
        else:
            messages.success(request, f"Role {role.name} created.")
            if not request.htmx:
                return redirect("console:access", namespace_id)
            return trigger(render_page(request, PAGE, _context(request), partial="roles-panel"), ROLES_CHANGED)
    return render_page(request, PAGE, _context(request, role_form=form), partial="roles-panel")


@require_http_methods(["GET", "POST"])
@console_view
def role_delete_view(request: ConsoleRequest, namespace_id: str, role_id: str) -> HttpResponse:
    """GET: the confirmation. POST: delete; a Role still bound is refused with the bindings named."""
    console = current(request)
    role = role_get(actor=console.actor, namespace_id=namespace_id, role_id=role_id)
    template = "console/access/role_delete.html"
    if request.method == "GET":
        return render_page(request, template, _context(request, role=role), partial="role-delete-dialog")
    try:
        role_delete(actor=console.actor, namespace_id=namespace_id, role_id=role.id)
    except Conflict as exc:
        return render_page(request, template, _context(request, role=role, refusal=exc),
                           partial="role-delete-body", status=exc.status)
    messages.success(request, f"Role {role.name} deleted.")
    if not request.htmx:
        return redirect("console:access", namespace_id)
    response = render_page(request, PAGE, _context(request), partial="roles-panel")
    return trigger(trigger(reswap(retarget(response, "#roles-panel"), "outerHTML"), CLOSE_MODAL_EVENT), ROLES_CHANGED)


_NS = "namespaces/<str:namespace_id>/access"

urlpatterns = [
    path(_NS, access_page, name="access"),
    path(f"{_NS}/service-principals", service_principals, name="service-principals"),
    path(f"{_NS}/bindings", bindings, name="bindings"),
    path(f"{_NS}/bindings/<str:binding_id>/revoke", binding_revoke, name="binding-revoke"),
    path(f"{_NS}/roles", roles, name="roles"),
    path(f"{_NS}/roles/<str:role_id>/delete", role_delete_view, name="role-delete"),
]
