"""Who a signed-in person (a Django session) is to IAM: their Actor, and whether they are an
operator. Every face that accepts a session (the console, the API, the admin) asks here."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from occ.errors import Denial, Forbidden
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import Principal, PrincipalKind

_OPERATOR_CACHE_ATTR = "_occ_is_operator"


def session_actor(request: HttpRequest, *, source: Source) -> Actor | None:
    """The signed-in person's Actor, or None for an anonymous request; Forbidden when IAM
    does not know them."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    principal = Principal.objects.filter(user=user).first()
    if principal is None:
        # Authenticated but not provisioned in IAM: an unknown identity is denied (and audited
        # by whoever turns the Forbidden into a 403).
        raise Forbidden("Your account has no OCC identity. Ask an administrator to provision it.",
                        denial=Denial(actor_id=None, action="authenticate", resource_kind="principal",
                                      reason="unknown_identity", extra={"userId": str(user.pk)}))
    return Actor(principal=principal, source=source)


def is_operator(user: Any, *, actor: Actor | None = None) -> bool:
    """Whether ``user`` is an active person whose Principal may administer the Installation.
    ``actor``: this user's session Actor when the caller has read it already (a user's only
    Principal is human): its Principal and loaded policy are used instead of reading both again."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if actor is None or actor.principal.user_id != user.pk or actor.principal.kind != PrincipalKind.HUMAN:
        principal = Principal.objects.filter(user=user, kind=PrincipalKind.HUMAN).first()
        if principal is None:
            return False
        actor = Actor(principal=principal, source=Source.ADMIN)
    if actor.principal.must_change_password:  # until they choose their own password
        return False
    return allowed(actor, Action.ADMINISTER, Kind.INSTALLATION)


def request_is_operator(request: HttpRequest, *, actor: Actor | None = None) -> bool:
    """``is_operator`` for the request's user, decided once per request (the admin asks often);
    ``actor`` as for ``is_operator``."""
    user = getattr(request, "user", None)
    # Keyed by user: signing in replaces request.user part-way through a request.
    user_key = getattr(user, "pk", None)
    cached = getattr(request, _OPERATOR_CACHE_ATTR, None)
    if cached is None or cached[0] != user_key:
        cached = (user_key, is_operator(user, actor=actor))
        setattr(request, _OPERATOR_CACHE_ATTR, cached)
    return cached[1]
