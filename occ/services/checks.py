"""Checks shared by services: the live Namespace locked for a write, or a Namespace row passed in as held."""

from __future__ import annotations

from django.db import transaction

from occ.models import Namespace
from occ.selectors.namespaces import get_live_namespace


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
