from __future__ import annotations

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import Namespace
from occ.selectors.paging import moment_page

PAGE_SIZE = 50


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


def namespace_page(*, actor: Actor, after: str = "", page_size: int = PAGE_SIZE) -> tuple[list[Namespace], str | None]:
    """One page of ``namespace_list`` (the API's), keyset on ``(created_at, id)`` oldest first,
    and the next page's cursor (None on the last page)."""
    return moment_page(Namespace.objects.live(), field="created_at", after=after, page_size=page_size,
                       readable=lambda namespace_id: allowed(actor, Action.READ, Kind.NAMESPACE,
                                                             namespace_id=namespace_id))


def namespace_get(*, actor: Actor, namespace_id: str) -> Namespace:
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    return namespace
