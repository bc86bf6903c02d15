"""Row locks the services share: rows a transaction lends to the services it calls, and
shared (``FOR SHARE``) locks, which Django's ``select_for_update`` cannot take.

Why shared locks: a transaction that only needs a row to stay as it is until it commits (a
Namespace still live, a Secret it binds not deleted) must not exclude another such
transaction. Exclusive locks there made provisionings in one Namespace take turns, and an
exclusive lock on a Secret, taken in id order, could deadlock against another transaction's
deferred foreign-key check of the same Secret at ``COMMIT`` (a ``FOR KEY SHARE`` lock, which a
shared lock does not conflict with). Whatever changes or deletes the row still waits for
every holder, and they for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import connection, connections, models

from occ.models import Agent, Configuration, Namespace

M = TypeVar("M", bound=models.Model)

# Rows the current transaction holds locked, by model and id (see ``holding``).
HeldRow = Namespace | Agent | Configuration
_held: ContextVar[dict[tuple[type, str], HeldRow] | None] = ContextVar("occ_held_rows", default=None)


@contextmanager
def holding(*rows: HeldRow | None) -> Iterator[None]:
    """Inside a transaction that has locked ``rows`` (the Namespace live) or created them:
    the services called in the block take these instances instead of reading the rows again.
    No other transaction can change such a row before this one ends, and the block must not
    change them except through these same instances."""
    held = dict(_held.get() or {})
    held.update({(type(row), row.pk): row for row in rows if row is not None})
    token = _held.set(held)
    try:
        yield
    finally:
        _held.reset(token)


def held_row(model: type[HeldRow], pk: str) -> HeldRow | None:
    """The instance ``holding`` lent for this row, while its transaction is still open."""
    held = _held.get()
    if not held or not connection.in_atomic_block:
        return None
    return held.get((model, pk))


def share_locked(queryset: models.QuerySet[M]) -> list[M]:
    """The rows of ``queryset`` (model instances, its ordering kept), locked ``FOR SHARE``
    until the transaction ends. Call inside a transaction. SQLite has no row locks: its
    writer holds the whole database, so the plain rows are the answer there."""
    if connections[queryset.db].vendor != "postgresql":
        return list(queryset)
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:  # e.g. ``id__in=[]``: nothing to lock
        return []
    return list(queryset.model._default_manager.db_manager(queryset.db).raw(f"{sql} FOR SHARE", params))


def share_locked_live_namespace(namespace_id: str) -> Namespace | None:
    """The live Namespace (None when missing or tombstoned), locked ``FOR SHARE``."""
    return next(iter(share_locked(Namespace.objects.live().filter(id=namespace_id))), None)


def advisory_xact_lock(name: str) -> None:
    """Wait for, then hold until the transaction ends, PostgreSQL's advisory lock named
    ``name``: mutual exclusion among the transactions that take it, and no row locked. Call
    inside a transaction. SQLite's writer already holds the whole database."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [name])
