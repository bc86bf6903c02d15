"""``/api/auth``: the caller's session, service API keys, and administrator-made accounts."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import update_session_auth_hash
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest, optional_auth
from occ.api.envelope import no_content, respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.accounts import AccountCreate, PasswordChange, PasswordSet
from occ.commands.service_keys import ServiceKeyCreate
from occ.iam.actor import Actor
from occ.selectors.access import (
    AccountView,
    KeyView,
    account_get,
    account_page,
    installation_role_page,
    service_key_page,
)
from occ.services.accounts import (
    account_create,
    account_delete,
    account_password_change,
    account_password_set,
    account_set_active,
)
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


class ServiceKeyListItemOut(ResponseSchema):
    id: str
    name: str
    servicePrincipalId: str
    namespaceId: str | None = Field(description="The key's scope: its principal's Namespace, or null for the "
                                    "Installation's.")
    createdAt: str
    createdBy: str = Field(description="The principal id of whoever issued it.")
    createdByName: str | None = Field(description="Their name, while they exist.")
    expiresAt: str
    state: str = Field(description='"active", or "expired" once expiresAt has passed (OCC refuses it then). A '
                       "revoked key is deleted, so it is not listed.")


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


# PostgreSQL refuses NUL in a text comparison, and no name or id holds a control character.
NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*$"
ID_MAX = 64


def key_wire(key: KeyView, *, principal_id: str, namespace_id: str | None) -> dict[str, Any]:
    return {"id": key.id, "name": key.name, "servicePrincipalId": principal_id, "namespaceId": namespace_id,
            "createdAt": rfc3339(key.created_at), "createdBy": key.created_by, "createdByName": key.created_by_name,
            "expiresAt": rfc3339(key.expires_at), "state": "expired" if key.expired else "active"}


class ServiceKeyPageOut(ResponseSchema):
    serviceKeys: list[ServiceKeyListItemOut]
    nextCursor: str | None


_CURSOR = Query("", max_length=200, description="A nextCursor from the page before.")
_LIMIT = Query(50, ge=1, le=100)
PAGE_QUERY = frozenset({"cursor", "limit"})


@router.get("/api/auth/service-keys",
            response={200: envelope_of(ServiceKeyPageOut, "ServiceKeyPageEnvelope")})
def list_service_keys(
    request: ApiRequest,
    principal_id: str = Query(..., alias="servicePrincipalId", max_length=ID_MAX, pattern=NO_CONTROL_CHARACTERS,
                              description="Whose keys: the service principal's id (sp_…)."),
    namespace_id: str | None = Query(None, alias="namespaceId", max_length=ID_MAX, pattern=NO_CONTROL_CHARACTERS,
                                     description="The principal's Namespace; omit it for an Installation "
                                     "service principal (as when issuing its key)."),
    cursor: str = _CURSOR,
    limit: int = _LIMIT,
) -> JsonResponse:
    """A service principal's API keys, newest first, as its console page lists them: metadata only,
    never the key or its digest (OCC keeps no key; a revoked one is deleted, so not listed). Needs
    ``installation:administer``, as issuing and revoking do; a principal not of the scope is 404.
    Pass ``nextCursor`` as ``cursor`` for the next page; it is null on the last."""
    require_known_query(request, frozenset({"servicePrincipalId", "namespaceId"}) | PAGE_QUERY)
    principal, keys, next_cursor = service_key_page(actor=request.auth, namespace_id=namespace_id,
                                                    principal_id=principal_id, after=cursor, page_size=limit)
    return respond({"serviceKeys": [key_wire(key, principal_id=principal.id, namespace_id=principal.namespace_id)
                                    for key in keys], "nextCursor": next_cursor})


@router.delete("/api/auth/service-keys/{key_id}",
               response={200: envelope_of(ServiceKeyRevoked, "ServiceKeyRevokedEnvelope")})
def revoke_service_key(request: ApiRequest, key_id: str) -> JsonResponse:
    return respond({"id": service_key_revoke(actor=request.auth, key_id=key_id), "revoked": True})


class AccountOut(ResponseSchema):
    id: str
    username: str
    name: str
    principalId: str
    accessBindingIds: list[str]


class AccountState(ResponseSchema):
    principalId: str
    active: bool
    mustChangePassword: bool


@router.post("/api/auth/accounts", response={201: envelope_of(AccountOut, "AccountEnvelope")})
def create_account(request: ApiRequest, payload: AccountCreate) -> JsonResponse:
    """Create a person who signs in with ``username`` and password. ``id`` is the account
    (Django user) id; ``principalId`` is the IAM identity that bindings name."""
    account = account_create(actor=request.auth, command=payload)
    return respond({"id": account.user_id, "username": account.username, "name": account.principal.name,
                    "principalId": account.principal.id,
                    "accessBindingIds": [b.id for b in account.bindings]}, status=201)


class AccountListItemOut(ResponseSchema):
    principalId: str
    username: str
    name: str
    active: bool
    mustChangePassword: bool
    roles: list[str] = Field(description='What they hold, by Role name and where ("Viewer on default").')
    createdAt: str


def account_wire(account: AccountView) -> dict[str, Any]:
    return {"principalId": account.principal_id, "username": account.username, "name": account.name,
            "active": account.active, "mustChangePassword": account.must_change_password, "roles": account.roles,
            "createdAt": rfc3339(account.created_at)}


class AccountPageOut(ResponseSchema):
    accounts: list[AccountListItemOut]
    nextCursor: str | None


@router.get("/api/auth/accounts", response={200: envelope_of(AccountPageOut, "AccountPageEnvelope")})
def list_accounts(request: ApiRequest,
                  q: str = Query("", max_length=200, pattern=NO_CONTROL_CHARACTERS,
                                 description="Only people whose name, username or id contains this, "
                                 "ignoring case."),
                  cursor: str = _CURSOR, limit: int = _LIMIT) -> JsonResponse:
    """The Installation's people (the console's Members list), by name, with what they hold.
    Needs ``installation:administer``. Pass ``nextCursor`` (with the same ``q``) as ``cursor``
    for the next page; it is null on the last."""
    require_known_query(request, frozenset({"q"}) | PAGE_QUERY)
    page = account_page(actor=request.auth, search=q, after=cursor, page_size=limit)
    return respond({"accounts": [account_wire(account) for account in page.rows], "nextCursor": page.next_cursor})


@router.get("/api/auth/accounts/{principal_id}", response={200: envelope_of(AccountListItemOut, "AccountViewEnvelope")})
def get_account(request: ApiRequest, principal_id: str) -> JsonResponse:
    """One person as the Members list shows them. Needs ``installation:administer``."""
    return respond(account_wire(account_get(actor=request.auth, principal_id=principal_id)))


class RoleChoiceOut(ResponseSchema):
    id: str
    name: str


class RoleChoicePageOut(ResponseSchema):
    roles: list[RoleChoiceOut]
    nextCursor: str | None


@router.get("/api/auth/roles", response={200: envelope_of(RoleChoicePageOut, "AccountRolePageEnvelope")})
def list_account_roles(request: ApiRequest, cursor: str = _CURSOR, limit: int = _LIMIT) -> JsonResponse:
    """The Installation Roles a new person can be given (``roleId`` of an account; Add a person's
    choices on the Members page), by name. Needs ``installation:administer``. Pass
    ``nextCursor`` as ``cursor`` for the next page; it is null on the last."""
    require_known_query(request, PAGE_QUERY)
    roles, next_cursor = installation_role_page(actor=request.auth, after=cursor, page_size=limit)
    return respond({"roles": [{"id": role.id, "name": role.name} for role in roles], "nextCursor": next_cursor})


def _state(principal: Any) -> dict[str, Any]:
    return {"principalId": principal.id, "active": principal.user.is_active,
            "mustChangePassword": principal.must_change_password}


@router.post("/api/auth/accounts/{principal_id}/disable",
             response={200: envelope_of(AccountState, "AccountStateEnvelope")})
def disable_account(request: ApiRequest, principal_id: str) -> JsonResponse:
    """Refuse the person's sign-in; their sessions and keys end at once."""
    return respond(_state(account_set_active(actor=request.auth, principal_id=principal_id, active=False)))


@router.post("/api/auth/accounts/{principal_id}/enable",
             response={200: envelope_of(AccountState, "AccountStateEnvelope")})
def enable_account(request: ApiRequest, principal_id: str) -> JsonResponse:
    return respond(_state(account_set_active(actor=request.auth, principal_id=principal_id, active=True)))


@router.delete("/api/auth/accounts/{principal_id}", response={204: None})
def delete_account(request: ApiRequest, principal_id: str) -> HttpResponse:
    """Remove the person with their bindings and keys; the audit log keeps what they did."""
    account_delete(actor=request.auth, principal_id=principal_id)
    return no_content()


@router.post("/api/auth/accounts/{principal_id}/password",
             response={200: envelope_of(AccountState, "AccountStateEnvelope")})
def set_account_password(request: ApiRequest, principal_id: str, payload: PasswordSet) -> JsonResponse:
    """A one-time password: the person must choose their own after signing in with it."""
    return respond(_state(account_password_set(actor=request.auth, principal_id=principal_id, command=payload)))


@router.post("/api/auth/password", response={204: None})
def change_own_password(request: ApiRequest, payload: PasswordChange) -> HttpResponse:
    """The signed-in person's own password; their other sessions end, this one goes on."""
    user = account_password_change(actor=request.auth, command=payload)
    update_session_auth_hash(request, user)
    return no_content()
