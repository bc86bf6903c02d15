"""Row locks the services share: shared (``FOR SHARE``) locks, which Django's
``select_for_update`` cannot take, and advisory locks. (A transaction that holds rows locked
passes them to the services it calls as arguments.)

Why shared locks: a transaction that only needs a row to stay as it is until it commits (a
Namespace still live, a Secret it binds not deleted) must not exclude another such
transaction. Exclusive locks there made provisionings in one Namespace take turns, and an
exclusive lock on a Secret, taken in id order, could deadlock against another transaction's
deferred foreign-key check of the same Secret at ``COMMIT`` (a ``FOR KEY SHARE`` lock, which a
shared lock does not conflict with). Whatever changes or deletes the row still waits for
every holder, and they for it.
"""

from __future__ import annotations

from typing import TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import connection, connections, models

from occ.models import Namespace

M = TypeVar("M", bound=models.Model)

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
