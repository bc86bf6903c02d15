"""``/namespaces/{ns}/iam``: Namespace Roles, exact-resource access bindings and Namespace
service principals (spec §2.13); ``/installation/service-principals``: the Installation's own
service principals, as the console's Members, Service principals page has them (their keys are
``/api/auth/service-keys`` without a ``namespaceId``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, JsonResponse
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import no_content, respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.iam import (
    IDENTITY_SUBJECT,
    AccessBindingCreate,
    RoleCreate,
    ServicePrincipalCreate,
    split_permission,
)
from occ.models import AccessBinding, Principal, Role
from occ.selectors.access import installation_roles_held, service_key_list, service_principal_summary_page
from occ.selectors.iam import (
    access_binding_get,
    access_binding_page,
    role_get,
    role_page,
    service_principal_get,
    service_principal_page,
)
from occ.services.iam_policy import (
    access_binding_create,
    access_binding_delete,
    role_create,
    role_delete,
    service_principal_create,
    service_principal_delete,
)
from occ.timestamps import rfc3339

router = Router(tags=["iam"])

PREFIX = "/namespaces/{namespace_id}/iam"


class PermissionOut(ResponseSchema):
    action: str
    resourceKind: str


class RoleOut(ResponseSchema):
    id: str
    namespaceId: str
    name: str
    permissions: list[PermissionOut]
    createdAt: str


def role_wire(role: Role) -> dict[str, Any]:
    permissions = [split_permission(p) for p in role.permissions]
    return {
        "id": role.id,
        "namespaceId": role.namespace_id,
        "name": role.name,
        "permissions": [{"action": action, "resourceKind": kind} for action, kind in permissions],
        "createdAt": rfc3339(role.created_at),
    }


RoleEnvelope = envelope_of(RoleOut, "RoleEnvelope")


class RolePageOut(ResponseSchema):
    roles: list[RoleOut]
    nextCursor: str | None


@router.get(f"{PREFIX}/roles", response={200: envelope_of(RolePageOut, "RolePageEnvelope")})
def list_roles(request: ApiRequest, namespace_id: str,
               cursor: str = Query("", max_length=200, description="A nextCursor from the page before."),
               limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The Namespace's policy Roles, oldest first. Pass ``nextCursor`` as ``cursor`` for the next
    page; it is null on the last."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    roles, next_cursor = role_page(actor=request.auth, namespace_id=namespace_id, after=cursor, page_size=limit)
    return respond({"roles": [role_wire(r) for r in roles], "nextCursor": next_cursor})


@router.post(f"{PREFIX}/roles", response={201: RoleEnvelope})
def create_role(request: ApiRequest, namespace_id: str, payload: RoleCreate) -> JsonResponse:
    role = role_create(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(role_wire(role), status=201)


@router.get(f"{PREFIX}/roles/{{role_id}}", response={200: RoleEnvelope})
def get_role(request: ApiRequest, namespace_id: str, role_id: str) -> JsonResponse:
    return respond(role_wire(role_get(actor=request.auth, namespace_id=namespace_id, role_id=role_id)))


@router.delete(f"{PREFIX}/roles/{{role_id}}", response={204: None})
def delete_role(request: ApiRequest, namespace_id: str, role_id: str) -> HttpResponse:
    role_delete(actor=request.auth, namespace_id=namespace_id, role_id=role_id)
    return no_content()


class AccessBindingOut(ResponseSchema):
    id: str
    namespaceId: str
    subjectKind: str
    subjectId: str
    roleId: str
    resourceKind: str | None
    resourceId: str | None
    createdAt: str


def access_binding_wire(binding: AccessBinding) -> dict[str, Any]:
    """``resourceKind``/``resourceId`` are null for a Namespace-wide binding."""
    return {
        "id": binding.id,
        "namespaceId": binding.namespace_id,
        "subjectKind": IDENTITY_SUBJECT,
        "subjectId": binding.principal_id,
        "roleId": binding.role_id,
        "resourceKind": binding.resource_kind,
        "resourceId": binding.resource_id,
        "createdAt": rfc3339(binding.created_at),
    }


AccessBindingEnvelope = envelope_of(AccessBindingOut, "AccessBindingEnvelope")


class AccessBindingPageOut(ResponseSchema):
    accessBindings: list[AccessBindingOut]
    nextCursor: str | None


@router.get(f"{PREFIX}/access-bindings",
            response={200: envelope_of(AccessBindingPageOut, "AccessBindingPageEnvelope")})
def list_access_bindings(request: ApiRequest, namespace_id: str,
                         cursor: str = Query("", max_length=200, description="A nextCursor from the page before."),
                         limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The bindings scoped to the Namespace, oldest first. Pass ``nextCursor`` as ``cursor`` for
    the next page; it is null on the last."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    bindings, next_cursor = access_binding_page(actor=request.auth, namespace_id=namespace_id, after=cursor,
                                                page_size=limit)
    return respond({"accessBindings": [access_binding_wire(b) for b in bindings], "nextCursor": next_cursor})


@router.post(f"{PREFIX}/access-bindings", response={201: AccessBindingEnvelope})
def create_access_binding(request: ApiRequest, namespace_id: str, payload: AccessBindingCreate) -> JsonResponse:
    binding = access_binding_create(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(access_binding_wire(binding), status=201)


@router.get(f"{PREFIX}/access-bindings/{{binding_id}}", response={200: AccessBindingEnvelope})
def get_access_binding(request: ApiRequest, namespace_id: str, binding_id: str) -> JsonResponse:
    binding = access_binding_get(actor=request.auth, namespace_id=namespace_id, binding_id=binding_id)
    return respond(access_binding_wire(binding))


@router.delete(f"{PREFIX}/access-bindings/{{binding_id}}", response={204: None})
def delete_access_binding(request: ApiRequest, namespace_id: str, binding_id: str) -> HttpResponse:
    access_binding_delete(actor=request.auth, namespace_id=namespace_id, binding_id=binding_id)
    return no_content()


class ServicePrincipalOut(ResponseSchema):
    id: str
    name: str
    namespaceId: str


def service_principal_wire(principal: Principal) -> dict[str, Any]:
    return {"id": principal.id, "name": principal.name, "namespaceId": principal.namespace_id}


ServicePrincipalEnvelope = envelope_of(ServicePrincipalOut, "ServicePrincipalEnvelope")


class ServicePrincipalPageOut(ResponseSchema):
    servicePrincipals: list[ServicePrincipalOut]
    nextCursor: str | None


@router.get(f"{PREFIX}/service-principals",
            response={200: envelope_of(ServicePrincipalPageOut, "ServicePrincipalPageEnvelope")})
def list_service_principals(request: ApiRequest, namespace_id: str,
                            cursor: str = Query("", max_length=200, description="A nextCursor from the page before."),
                            limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The Namespace's own service principals (not its Agents'), oldest first. Pass
    ``nextCursor`` as ``cursor`` for the next page; it is null on the last."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    principals, next_cursor = service_principal_page(actor=request.auth, namespace_id=namespace_id, after=cursor,
                                                     page_size=limit)
    return respond({"servicePrincipals": [service_principal_wire(p) for p in principals], "nextCursor": next_cursor})


@router.post(f"{PREFIX}/service-principals", response={201: ServicePrincipalEnvelope})
def create_service_principal(request: ApiRequest, namespace_id: str,
                             payload: ServicePrincipalCreate) -> JsonResponse:
    principal = service_principal_create(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(service_principal_wire(principal), status=201)


@router.get(f"{PREFIX}/service-principals/{{principal_id}}", response={200: ServicePrincipalEnvelope})
def get_service_principal(request: ApiRequest, namespace_id: str, principal_id: str) -> JsonResponse:
    principal = service_principal_get(actor=request.auth, namespace_id=namespace_id, principal_id=principal_id)
    return respond(service_principal_wire(principal))


# --- the Installation's service principals ---------------------------------------------------

INSTALLATION_PRINCIPALS = "/installation/service-principals"
NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*$"  # PostgreSQL refuses NUL in a text comparison


class InstallationServicePrincipalOut(ResponseSchema):
    id: str
    name: str
    namespaceId: str | None = Field(description="Always null: an Installation service principal belongs to no "
                                    "Namespace.")
    installationRoles: list[str] = Field(description="The Installation Roles bound to it, by name (operators bind "
                                         "them); its keys act with these in every Namespace they reach.")
    keyCount: int = Field(description="How many API keys it has (GET /api/auth/service-keys lists them).")
    createdAt: str


class InstallationServicePrincipalPageOut(ResponseSchema):
    servicePrincipals: list[InstallationServicePrincipalOut]
    nextCursor: str | None


def installation_principal_wire(principal: Principal, *, key_count: int, roles: list[str]) -> dict[str, Any]:
    return {"id": principal.id, "name": principal.name, "namespaceId": None, "installationRoles": roles,
            "keyCount": key_count, "createdAt": rfc3339(principal.created_at)}


InstallationServicePrincipalEnvelope = envelope_of(InstallationServicePrincipalOut,
                                                   "InstallationServicePrincipalEnvelope")


@router.get(INSTALLATION_PRINCIPALS,
            response={200: envelope_of(InstallationServicePrincipalPageOut,
                                       "InstallationServicePrincipalPageEnvelope")})
def list_installation_service_principals(
    request: ApiRequest,
    q: str = Query("", max_length=200, pattern=NO_CONTROL_CHARACTERS,
                   description="Only service principals whose name or id contains this, ignoring case."),
    cursor: str = Query("", max_length=400, description="A nextCursor from the page before."),
    limit: int = Query(50, ge=1, le=100),
) -> JsonResponse:
    """The Installation's service principals (the console's list), by name, with their
    Installation Roles and number of keys. Needs ``installation:administer``. Pass
    ``nextCursor`` as ``cursor`` for the next page; it is null on the last."""
    require_known_query(request, frozenset({"q", "cursor", "limit"}))
    page = service_principal_summary_page(actor=request.auth, namespace_id=None, search=q, after=cursor,
                                          page_size=limit)
    roles = installation_roles_held([p.id for p, _ in page.rows])
    return respond({"servicePrincipals": [installation_principal_wire(p, key_count=keys, roles=roles.get(p.id, []))
                                          for p, keys in page.rows],
                    "nextCursor": page.next_cursor})


@router.post(INSTALLATION_PRINCIPALS, response={201: InstallationServicePrincipalEnvelope})
def create_installation_service_principal(request: ApiRequest, payload: ServicePrincipalCreate) -> JsonResponse:
    """Create an Installation service principal with no Roles and no keys; issue it a key with
    ``POST /api/auth/service-keys`` (no ``namespaceId``). Needs ``installation:administer``; audited."""
    principal = service_principal_create(actor=request.auth, namespace_id=None, command=payload)
    return respond(installation_principal_wire(principal, key_count=0, roles=[]), status=201)


@router.get(INSTALLATION_PRINCIPALS + "/{principal_id}", response={200: InstallationServicePrincipalEnvelope})
def get_installation_service_principal(request: ApiRequest, principal_id: str) -> JsonResponse:
    """One Installation service principal, as its console page shows it. Needs ``installation:administer``."""
    principal, keys = service_key_list(actor=request.auth, namespace_id=None, principal_id=principal_id)
    roles = installation_roles_held([principal.id]).get(principal.id, [])
    return respond(installation_principal_wire(principal, key_count=len(keys), roles=roles))


@router.delete(INSTALLATION_PRINCIPALS + "/{principal_id}", response={204: None})
def delete_installation_service_principal(request: ApiRequest, principal_id: str) -> HttpResponse:
    """Delete it with its keys and Role bindings: requests with its keys are refused from then on.
    Nobody deletes the principal they act as (409). Needs ``installation:administer``; audited."""
    service_principal_delete(actor=request.auth, namespace_id=None, principal_id=principal_id)
    return no_content()
