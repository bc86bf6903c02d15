from __future__ import annotations

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import Namespace
from occ.services.checks import get_live_namespace


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
