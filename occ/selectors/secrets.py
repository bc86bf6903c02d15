"""Secret metadata reads. They never call the SecretDriver: there is no value to read here."""

from __future__ import annotations

from django.db.models import QuerySet

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import AuditEvent, Namespace, Secret
from occ.selectors.namespaces import get_live_namespace

SECRET_CREATE_ACTION = "openclaw.secrets.create"


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


def model_key_secret_name(request_id: str) -> str:
    """The name of the Secret a provisioning request's typed model key is saved as: derived
    from the requestId alone, so every attempt of the request (whatever else changed) finds it."""
    return f"Model credential for {request_id}"


def model_key_secret_find(*, actor: Actor, namespace_id: str, request_id: str) -> Secret | None:
    """The Secret an earlier attempt of ``request_id`` saved for ``actor`` in this Namespace, or
    None. A Secret of that name that this actor did not create (another person chose the same
    requestId, or someone named a Secret so) is not theirs: None here, refused when saving."""
    secret = model_key_secret_named(namespace_id=namespace_id, request_id=request_id)
    if secret is None or not created_by(secret, actor):
        return None
    return secret if allowed(actor, Action.READ, Kind.SECRET, namespace_id=namespace_id,
                             resource_id=secret.id) else None


def model_key_secret_named(*, namespace_id: str, request_id: str) -> Secret | None:
    return user_secrets().filter(namespace_id=namespace_id, name=model_key_secret_name(request_id)).first()


def created_by(secret: Secret, actor: Actor) -> bool:
    """Whether ``actor`` created ``secret`` (its audited ``openclaw.secrets.create``)."""
    return AuditEvent.objects.filter(action=SECRET_CREATE_ACTION, resource_id=secret.id, actor_id=actor.id,
                                     namespace_id=secret.namespace_id).exists()
