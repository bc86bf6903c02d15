"""Secret metadata reads. They never call the SecretDriver: there is no value to read here."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from occ.commands.common import NAME_MAX_CODE_POINTS
from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, allowed_in, authorize
from occ.models import AuditEvent, Namespace, Secret
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.paging import moment_page

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


PAGE_SIZE = 50


@dataclass(frozen=True)
class SecretPage:
    rows: list[Secret]
    next_cursor: str | None  # the page after this one (newer Secrets); None on the last page


def secret_page(*, actor: Actor, namespace_id: str, after: str = "", page_size: int = PAGE_SIZE) -> SecretPage:
    """One page of :func:`secret_list` (the API's), keyset on ``(created_at, id)`` oldest first;
    rows the actor may not read are skipped in SQL-ordered batches, so a page is full unless it
    is the last."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    rows, next_cursor = moment_page(
        user_secrets().filter(namespace=namespace), field="created_at", after=after,
        readable=allowed_in(actor, Action.READ, Kind.SECRET, namespace_id=namespace.id), page_size=page_size)
    return SecretPage(rows=rows, next_cursor=next_cursor)


def secret_get(*, actor: Actor, namespace_id: str, secret_id: str) -> Secret:
    namespace = get_live_namespace(namespace_id)
    secret = get_user_secret(namespace, secret_id)
    authorize(actor, Action.READ, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
    return secret


MODEL_KEY_SUFFIX = " model credential"


def model_key_secret_name(agent_name: str, *, copy: int = 1) -> str:
    """The name a typed model key is saved as: "<agent name> model credential" ("… (2)" for
    the second of that name), within the name's bound. A retry finds its Secret by the request
    id in its creation's audit event (``model_key_secret_saved``), never by this name."""
    suffix = MODEL_KEY_SUFFIX + (f" ({copy})" if copy > 1 else "")
    return (agent_name.strip() or "Agent")[: NAME_MAX_CODE_POINTS - len(suffix)].rstrip() + suffix


def model_key_secret_saved(*, actor: Actor, namespace_id: str, request_id: str) -> Secret | None:
    """The Secret ``actor`` saved for the provisioning request ``request_id`` in this Namespace
    (its ``openclaw.secrets.create`` names the request), or None. Another actor's Secret is
    never theirs, whatever its name."""
    created = AuditEvent.objects.filter(action=SECRET_CREATE_ACTION, actor_id=actor.id, namespace_id=namespace_id,
                                        details__requestId=request_id).values("resource_id")
    return user_secrets().filter(namespace_id=namespace_id, id__in=created).order_by("created_at").first()


def model_key_secret_find(*, actor: Actor, namespace_id: str, request_id: str) -> Secret | None:
    """``model_key_secret_saved`` when the actor may still read it."""
    secret = model_key_secret_saved(actor=actor, namespace_id=namespace_id, request_id=request_id)
    if secret is None:
        return None
    return secret if allowed(actor, Action.READ, Kind.SECRET, namespace_id=namespace_id,
                             resource_id=secret.id) else None


def model_key_secret_free_name(*, namespace_id: str, agent_name: str) -> str:
    """``model_key_secret_name`` with the first copy number no Secret of the Namespace holds."""
    taken = set(user_secrets().filter(namespace_id=namespace_id,
                                      name__startswith=model_key_secret_name(agent_name)[:-len(MODEL_KEY_SUFFIX)])
                .values_list("name", flat=True))
    copy = 1
    while model_key_secret_name(agent_name, copy=copy) in taken:
        copy += 1
    return model_key_secret_name(agent_name, copy=copy)


def created_by(secret: Secret, actor: Actor) -> bool:
    """Whether ``actor`` created ``secret`` (its audited ``openclaw.secrets.create``)."""
    return AuditEvent.objects.filter(action=SECRET_CREATE_ACTION, resource_id=secret.id, actor_id=actor.id,
                                     namespace_id=secret.namespace_id).exists()
