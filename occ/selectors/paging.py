"""Keyset pages of the rows a caller may read: one loop for every list that pages, and the
cursor that names where a page starts (the edge row's moment and id)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from django.db.models import Model, Q, QuerySet
from django.utils.dateparse import parse_datetime

from occ.errors import InvalidRequest

RowT = TypeVar("RowT", bound=Model)


def encode_keys(moment: datetime, row_id: str) -> str:
    """A keyset cursor: an edge row's moment and id (the audit log's and the API lists' pages)."""
    raw = f"{moment.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str] | None:
    """The keys a cursor names, or None for anything that is not one of ours: not base64, no
    moment with its time zone, a date that does not exist, an id no row can hold (a control
    character such as NUL would fail in the database)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, _, row_id = raw.partition("|")
        moment = parse_datetime(at) if at else None
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if moment is None or moment.tzinfo is None or not row_id or not row_id.isprintable():
        return None
    return moment, row_id


def cursor_keys(cursor: str) -> tuple[datetime, str] | None:
    """The keys of an API list's ``cursor`` parameter (None: the first page); anything this API
    did not return is refused rather than read as the first page."""
    if not cursor:
        return None
    keys = decode_cursor(cursor)
    if keys is None:
        raise InvalidRequest("cursor is not a cursor this API returned.")
    return keys


def past_keys(field: str, at: datetime, row_id: str, *, newest_first: bool = False) -> Q:
    """The rows after ``(at, row_id)`` in ``(field, id)`` order (descending when ``newest_first``)."""
    op = "lt" if newest_first else "gt"
    return Q(**{f"{field}__{op}": at}) | Q(**{field: at, f"id__{op}": row_id})


def readable_page(ordered: QuerySet[RowT], *, start: Q | None, past: Callable[[RowT], Q],
                  readable: Callable[[str], bool], page_size: int) -> tuple[list[RowT], bool]:
    """Up to ``page_size`` rows of ``ordered`` from ``start`` (None: the first) that ``readable``
    lets through, and whether more follow. Rows the caller may not read are skipped in
    SQL-ordered batches of ``page_size + 1`` (``past(row)`` is the filter for the rows after
    ``row``), so a page is full unless it is the last."""
    chosen: list[RowT] = []
    position = start
    while len(chosen) <= page_size:
        batch = list((ordered if position is None else ordered.filter(position))[:page_size + 1])
        chosen.extend(row for row in batch if readable(str(row.pk)))
        if len(batch) <= page_size:
            break
        position = past(batch[-1])
    return chosen[:page_size], len(chosen) > page_size
