"""Secrets API. Values go in (create, patch) and never come out."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, JsonResponse
from ninja import Query, Router

from occ.api.auth import ApiRequest
from occ.api.envelope import no_content, respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.api.wire import secret_ref_wire
from occ.commands.secrets import SecretCreate, SecretValueUpdate
from occ.models import Secret
from occ.selectors.secrets import secret_get, secret_page
from occ.services.secrets import secret_create, secret_delete, secret_update_value
from occ.timestamps import rfc3339

router = Router(tags=["secrets"])


class SecretRefOut(ResponseSchema):
    kind: str
    namespaceId: str
    id: str


class SecretOut(ResponseSchema):
    id: str
    namespaceId: str
    name: str
    ref: SecretRefOut
    createdAt: str
    updatedAt: str


def secret_wire(secret: Secret) -> dict[str, Any]:
    return {
        "id": secret.id,
        "namespaceId": secret.namespace_id,
        "name": secret.name,
        "ref": secret_ref_wire(secret.namespace_id, secret.id),
        "createdAt": rfc3339(secret.created_at),
        "updatedAt": rfc3339(secret.updated_at),
    }


SecretEnvelope = envelope_of(SecretOut, "SecretEnvelope")
SECRETS = "/namespaces/{namespace_id}/secrets"
SECRET = SECRETS + "/{secret_id}"


class SecretPageOut(ResponseSchema):
    secrets: list[SecretOut]
    nextCursor: str | None


@router.get(SECRETS, response={200: envelope_of(SecretPageOut, "SecretPageEnvelope")})
def list_secrets(request: ApiRequest, namespace_id: str,
                 cursor: str = Query("", max_length=200, description="A nextCursor from the page before."),
                 limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The Namespace's Secrets the caller may read (``secret:read`` on each, and
    ``namespace:read``), oldest first, names and references only. Pass ``nextCursor`` as
    ``cursor`` for the next page; it is null on the last."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    page = secret_page(actor=request.auth, namespace_id=namespace_id, after=cursor, page_size=limit)
    return respond({"secrets": [secret_wire(s) for s in page.rows], "nextCursor": page.next_cursor})


@router.post(SECRETS, response={201: SecretEnvelope})
def create_secret(request: ApiRequest, namespace_id: str, payload: SecretCreate) -> JsonResponse:
    secret = secret_create(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(secret_wire(secret), status=201)


@router.get(SECRET, response={200: SecretEnvelope})
def get_secret(request: ApiRequest, namespace_id: str, secret_id: str) -> JsonResponse:
    return respond(secret_wire(secret_get(actor=request.auth, namespace_id=namespace_id, secret_id=secret_id)))


@router.patch(SECRET, response={200: SecretEnvelope})
def update_secret_value(request: ApiRequest, namespace_id: str, secret_id: str,
                        payload: SecretValueUpdate) -> JsonResponse:
    secret = secret_update_value(actor=request.auth, namespace_id=namespace_id, secret_id=secret_id,
                                 command=payload)
    return respond(secret_wire(secret))


@router.delete(SECRET, response={204: None})
def delete_secret(request: ApiRequest, namespace_id: str, secret_id: str) -> HttpResponse:
    secret_delete(actor=request.auth, namespace_id=namespace_id, secret_id=secret_id)
    return no_content()
