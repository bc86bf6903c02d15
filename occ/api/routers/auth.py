"""``/api/auth``: the caller's session, service API keys, and administrator-made accounts."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest, optional_auth
from occ.api.envelope import respond
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.accounts import AccountCreate
from occ.commands.service_keys import ServiceKeyCreate
from occ.iam.actor import Actor
from occ.services.accounts import account_create
from occ.services.service_keys import service_key_create, service_key_revoke
from occ.timestamps import rfc3339

router = Router(tags=["auth"])


class SessionOut(ResponseSchema):
    authenticated: bool
    id: str
    name: str
    username: str | None
    via: str


def session_wire(actor: Actor) -> dict[str, Any]:
    user = actor.principal.user if actor.principal.user_id else None
    return {
        "authenticated": True,
        "id": actor.id,
        "name": actor.principal.name,
        "username": user.username if user is not None else None,
        "via": "service_key" if actor.key_id else "session",
    }


@router.get("/api/auth/session", auth=optional_auth,
            response={200: envelope_of(SessionOut | None, "SessionEnvelope")})
def get_session(request: HttpRequest) -> JsonResponse:
    """Who the caller is; ``data: null`` when nobody (with an OCC identity) is signed in."""
    auth = getattr(request, "auth", None)
    actor = auth if isinstance(auth, Actor) else None
    return respond(session_wire(actor) if actor is not None else None)


class ServiceKeyOut(ResponseSchema):
    id: str
    key: str
    name: str
    servicePrincipalId: str
    namespaceId: str | None = None
    expiresAt: str


class ServiceKeyRevoked(ResponseSchema):
    id: str
    revoked: bool


@router.post("/api/auth/service-keys", response={201: envelope_of(ServiceKeyOut, "ServiceKeyEnvelope")})
def create_service_key(request: ApiRequest, payload: ServiceKeyCreate) -> JsonResponse:
    issued = service_key_create(actor=request.auth, command=payload)
    record = issued.record
    data: dict[str, Any] = {"id": record.id, "key": issued.token, "name": record.name,
                            "servicePrincipalId": record.principal_id}
    if record.namespace_id is not None:
        data["namespaceId"] = record.namespace_id
    data["expiresAt"] = rfc3339(record.expires_at)
    return respond(data, status=201)


@router.delete("/api/auth/service-keys/{key_id}",
               response={200: envelope_of(ServiceKeyRevoked, "ServiceKeyRevokedEnvelope")})
def revoke_service_key(request: ApiRequest, key_id: str) -> JsonResponse:
    return respond({"id": service_key_revoke(actor=request.auth, key_id=key_id), "revoked": True})


class AccountOut(ResponseSchema):
    id: str
    username: str
    name: str
    principalId: str


@router.post("/api/auth/accounts", response={201: envelope_of(AccountOut, "AccountEnvelope")})
def create_account(request: ApiRequest, payload: AccountCreate) -> JsonResponse:
    """Create a person who signs in with ``username`` and password. ``id`` is the account
    (Django user) id; ``principalId`` is the IAM identity that bindings name."""
    account = account_create(actor=request.auth, command=payload)
    return respond({"id": account.user_id, "username": account.username, "name": account.principal.name,
                    "principalId": account.principal.id}, status=201)
