"""``/namespaces/{ns}/iam``: Namespace Roles, exact-resource access bindings and Namespace
service principals (spec §2.13)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import no_content, respond
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.iam import (
    IDENTITY_SUBJECT,
    AccessBindingCreate,
    RoleCreate,
    ServicePrincipalCreate,
    split_permission,
)
from occ.models import AccessBinding, Principal, Role
from occ.selectors.iam import (
    access_binding_get,
    access_binding_list,
    role_get,
    role_list,
    service_principal_get,
    service_principal_list,
)
from occ.services.iam_policy import (
    access_binding_create,
    access_binding_delete,
    role_create,
    role_delete,
    service_principal_create,
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


@router.get(f"{PREFIX}/roles", response={200: envelope_of(list[RoleOut], "RoleListEnvelope")})
def list_roles(request: ApiRequest, namespace_id: str) -> JsonResponse:
    return respond([role_wire(r) for r in role_list(actor=request.auth, namespace_id=namespace_id)])


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


@router.get(f"{PREFIX}/access-bindings",
            response={200: envelope_of(list[AccessBindingOut], "AccessBindingListEnvelope")})
def list_access_bindings(request: ApiRequest, namespace_id: str) -> JsonResponse:
    bindings = access_binding_list(actor=request.auth, namespace_id=namespace_id)
    return respond([access_binding_wire(b) for b in bindings])


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


@router.get(f"{PREFIX}/service-principals",
            response={200: envelope_of(list[ServicePrincipalOut], "ServicePrincipalListEnvelope")})
def list_service_principals(request: ApiRequest, namespace_id: str) -> JsonResponse:
    principals = service_principal_list(actor=request.auth, namespace_id=namespace_id)
    return respond([service_principal_wire(p) for p in principals])


@router.post(f"{PREFIX}/service-principals", response={201: ServicePrincipalEnvelope})
def create_service_principal(request: ApiRequest, namespace_id: str,
                             payload: ServicePrincipalCreate) -> JsonResponse:
    principal = service_principal_create(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(service_principal_wire(principal), status=201)


@router.get(f"{PREFIX}/service-principals/{{principal_id}}", response={200: ServicePrincipalEnvelope})
def get_service_principal(request: ApiRequest, namespace_id: str, principal_id: str) -> JsonResponse:
    principal = service_principal_get(actor=request.auth, namespace_id=namespace_id, principal_id=principal_id)
    return respond(service_principal_wire(principal))
