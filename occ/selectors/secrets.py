"""Secret metadata reads. They never call the SecretDriver: there is no value to read here."""

from __future__ import annotations

from django.db.models import QuerySet

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import Namespace, Secret
from occ.services.checks import get_live_namespace


def user_secrets() -> QuerySet[Secret]:
    """Secrets people manage. Driver-owned runtime credentials (with an owner Agent) are not
    part of the Secrets API: never listed, and 404 by id."""
    return Secret.objects.filter(owner_agent__isnull=True)


def get_user_secret(namespace: Namespace, secret_id: str, *, for_update: bool = False) -> Secret:
    """The Secret under its exact Namespace, or NotFound (a Secret of another Namespace too)."""
    qs = user_secrets().filter(namespace=namespace, id=secret_id)
    if for_update:
        qs = qs.select_for_update()
    secret = qs.first()
    if secret is None:
        raise NotFound("The Secret does not exist.")
    return secret


def secret_list(*, actor: Actor, namespace_id: str) -> list[Secret]:
    """The Namespace's Secrets the actor may read exactly (filtered in memory, no per-item query)."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    return [
        secret for secret in user_secrets().filter(namespace=namespace).order_by("created_at", "id")
        if allowed(actor, Action.READ, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
    ]


def secret_get(*, actor: Actor, namespace_id: str, secret_id: str) -> Secret:
    namespace = get_live_namespace(namespace_id)
    secret = get_user_secret(namespace, secret_id)
    authorize(actor, Action.READ, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
    return secret
