from __future__ import annotations

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import Namespace


def get_live_namespace(namespace_id: str, *, for_update: bool = False) -> Namespace:
    """The Namespace, or NotFound when missing or tombstoned (existence is not revealed);
    ``for_update``: locked exclusively until the transaction ends."""
    qs = Namespace.objects.live()
    if for_update:
        qs = qs.select_for_update()
    namespace = qs.filter(id=namespace_id).first()
    if namespace is None:
        raise NotFound("The Namespace does not exist.")
    return namespace


def namespace_list(*, actor: Actor) -> list[Namespace]:
    """Every live Namespace the actor may read (filtered per item, in memory)."""
    return [
        ns for ns in Namespace.objects.live().order_by("created_at", "id")
        if allowed(actor, Action.READ, Kind.NAMESPACE, namespace_id=ns.id)
    ]


def namespace_get(*, actor: Actor, namespace_id: str) -> Namespace:
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    return namespace
