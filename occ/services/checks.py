"""Lookups shared by services: the live Namespace, and the check of a Namespace row passed in as held."""

from __future__ import annotations

from django.db import transaction

from occ.errors import NotFound
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


def held_or_locked_namespace(namespace_id: str, held: Namespace | None) -> Namespace:
    """``held``, the live Namespace that the caller's transaction has already locked (a fenced
    worker step holds it ``FOR SHARE``), or else the Namespace locked ``FOR UPDATE`` now."""
    if held is None:
        return get_live_namespace(namespace_id, for_update=True)
    check_held_namespace(held, namespace_id)
    return held


def check_held_namespace(row: Namespace, namespace_id: str) -> None:
    """A row passed in as held: the caller's transaction is open and it is this Namespace."""
    if row.id != namespace_id or not transaction.get_connection().in_atomic_block:
        raise ValueError("a held row belongs to the caller's open transaction and to this Namespace")
