"""API authentication: an ``x-api-key`` service key, else a Django session.

A present key is authoritative: if it is invalid, the cookie is never consulted. An
``Authorization`` header is refused. Session-authenticated writes pass Django's CSRF check;
key-authenticated requests do not need it (no ambient credential).
"""

from __future__ import annotations

from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware
from ninja.security import APIKeyHeader

from occ.errors import Denial, Forbidden, Unauthenticated
from occ.iam.actor import Actor, Source
from occ.iam.keys import actor_for_token
from occ.iam.policy import authorize_namespace_reach
from occ.iam.sessions import session_actor
from occ.services.audit import audit_denial

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


def _csrf_ok(request: HttpRequest) -> bool:
    check = CsrfViewMiddleware(lambda r: None)  # type: ignore[arg-type,return-value]
    return check.process_view(request, None, (), {}) is None  # type: ignore[arg-type]


def resolve_actor(request: HttpRequest) -> Actor | None:
    """The caller, or None for an anonymous request. Raises Unauthenticated for bad credentials."""
    if "HTTP_AUTHORIZATION" in request.META:
        raise Unauthenticated("Authorization headers are not supported; send x-api-key.")
    if "HTTP_X_API_KEY" in request.META:
        actor = actor_for_token(request.META["HTTP_X_API_KEY"])
        if actor is None:
            raise Unauthenticated("The API key is not valid, has expired or was revoked.")
        return actor
    actor = session_actor(request, source=Source.API)
    if actor is not None and request.method not in SAFE_METHODS and not _csrf_ok(request):
        # request.auth is not set yet, so the denial is recorded here with its actor.
        audit_denial(Denial(actor_id=actor.id, action="write", resource_kind="api", reason="csrf_check_failed"),
                     actor=actor)
        raise Forbidden("The CSRF check failed. Reload the page and try again.")
    return actor


PASSWORD_CHANGE_PATH = "/api/auth/password"


def api_auth(request: HttpRequest) -> Actor:
    """Ninja auth callback for protected routes. A route under ``/namespaces/{namespace_id}``
    first asks whether the caller can reach that Namespace at all, before its view looks
    anything up (``authorize_namespace_reach``): authorization before existence. A person
    signed in with a one-time password may only choose their own."""
    actor = resolve_actor(request)
    if actor is None:
        raise Unauthenticated()
    if actor.principal.must_change_password and request.path != PASSWORD_CHANGE_PATH:
        audit_denial(Denial(actor_id=actor.id, action="access", resource_kind="api",
                            reason="password_change_required"), actor=actor)
        raise Forbidden(f"Choose your own password first (POST {PASSWORD_CHANGE_PATH}); "
                        "an administrator set a one-time password for this account.")
    match = request.resolver_match
    namespace_id = match.kwargs.get("namespace_id") if match is not None else None
    if isinstance(namespace_id, str):
        try:
            authorize_namespace_reach(actor, namespace_id)
        except Forbidden as refused:
            # request.auth is not set yet, so the denial is recorded here with its actor.
            if refused.denial is not None:
                audit_denial(refused.denial, actor=actor)
            raise Forbidden(refused.message) from None
    return actor


class ApiKeyAuth(APIKeyHeader):
    """``api_auth`` as ninja's ``x-api-key`` header scheme, so the OpenAPI document declares it
    (``components.securitySchemes`` and each protected operation's ``security``) and Swagger UI
    at ``/api/docs`` offers Authorize. A request without the header still reaches ``api_auth``,
    which falls back to the session."""

    param_name = "x-api-key"

    def authenticate(self, request: HttpRequest, key: str | None) -> Actor:
        return api_auth(request)


def optional_auth(request: HttpRequest) -> Actor | bool:
    """For routes that answer anonymous callers too; ``request.auth`` is the Actor or True."""
    try:
        return resolve_actor(request) or True
    except Forbidden:
        return True


class ApiRequest(HttpRequest):
    """The request a protected view receives: ``auth`` is the authenticated Actor."""

    auth: Actor
