from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Query, Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.namespaces import NamespaceCreate
from occ.models import Namespace
from occ.selectors.namespaces import namespace_get, namespace_page
from occ.services.namespaces import namespace_create, namespace_delete
from occ.timestamps import rfc3339

router = Router(tags=["namespaces"])


class NamespaceOut(ResponseSchema):
    id: str
    name: str
    status: str
    existingNamespace: str | None = None
    createdAt: str


def namespace_wire(namespace: Namespace) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": namespace.id,
        "name": namespace.name,
        "status": namespace.status,
        "createdAt": rfc3339(namespace.created_at),
    }
    if namespace.existing_namespace:
        data["existingNamespace"] = namespace.existing_namespace
    return data


NamespaceEnvelope = envelope_of(NamespaceOut, "NamespaceEnvelope")


class NamespacePageOut(ResponseSchema):
    namespaces: list[NamespaceOut]
    nextCursor: str | None


@router.get("/namespaces", response={200: envelope_of(NamespacePageOut, "NamespacePageEnvelope")})
def list_namespaces(request: ApiRequest,
                    cursor: str = Query("", max_length=200, description="A nextCursor from the page before."),
                    limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The live Namespaces the caller may read (``namespace:read`` on each), oldest first. Pass
    ``nextCursor`` as ``cursor`` for the next page; it is null on the last."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    namespaces, next_cursor = namespace_page(actor=request.auth, after=cursor, page_size=limit)
    return respond({"namespaces": [namespace_wire(ns) for ns in namespaces], "nextCursor": next_cursor})


@router.post("/namespaces", response={201: NamespaceEnvelope})
def create_namespace(request: ApiRequest, payload: NamespaceCreate) -> JsonResponse:
    namespace = namespace_create(actor=request.auth, command=payload)
    return respond(namespace_wire(namespace), status=201)


@router.get("/namespaces/{namespace_id}", response={200: NamespaceEnvelope})
def get_namespace(request: ApiRequest, namespace_id: str) -> JsonResponse:
    return respond(namespace_wire(namespace_get(actor=request.auth, namespace_id=namespace_id)))


@router.delete("/namespaces/{namespace_id}", response={202: NamespaceEnvelope})
def delete_namespace(request: ApiRequest, namespace_id: str) -> JsonResponse:
    return respond(namespace_wire(namespace_delete(actor=request.auth, namespace_id=namespace_id)), status=202)
