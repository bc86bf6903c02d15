"""Keyset pages of the rows a caller may read: one loop for every list that pages, and the
cursor that names where a page starts (the edge row's sort key, a moment or a text, and its id)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from django.db.models import Model, Q, QuerySet
from django.utils.dateparse import parse_datetime

from occ.errors import InvalidRequest

RowT = TypeVar("RowT", bound=Model)
ItemT = TypeVar("ItemT")


def _frame(key: str, row_id: str) -> str:
    """The one cursor framing: ``key|id``, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(f"{key}|{row_id}".encode()).decode().rstrip("=")


def _unframe(cursor: str) -> tuple[str, str] | None:
    """A cursor's key and id, or None: not base64, not UTF-8, no key, or an id no row can hold
    (a control character such as NUL would fail in the database). The id is after the last
    ``|`` (ids never hold one; a name key may)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    key, _, row_id = raw.rpartition("|")
    if not key or not row_id or not row_id.isprintable():
        return None
    return key, row_id


def encode_keys(moment: datetime, row_id: str) -> str:
    """A keyset cursor: an edge row's moment and id (the audit log's and the API lists' pages)."""
    return _frame(moment.isoformat(), row_id)


def decode_cursor(cursor: str) -> tuple[datetime, str] | None:
    """The keys a moment cursor names, or None for anything that is not one of ours (also a
    moment without its time zone, or a date that does not exist)."""
    framed = _unframe(cursor)
    try:
        moment = parse_datetime(framed[0]) if framed else None
    except ValueError:
        return None
    if framed is None or moment is None or moment.tzinfo is None:
        return None
    return moment, framed[1]


def encode_text_keys(text: str, row_id: str) -> str:
    """A keyset cursor on a text column: an edge row's sort text (e.g. its lower-cased name) and id."""
    return _frame(text, row_id)


def decode_text_cursor(cursor: str) -> tuple[str, str] | None:
    """The keys a text cursor names, or None for anything that is not one of ours (also a text
    holding NUL, which no text column can)."""
    framed = _unframe(cursor)
    if framed is None or "\x00" in framed[0]:
        return None
    return framed


def cursor_keys(cursor: str) -> tuple[datetime, str] | None:
    """The keys of an API list's ``cursor`` parameter (None: the first page); anything this API
    did not return is refused rather than read as the first page."""
    if not cursor:
        return None
    keys = decode_cursor(cursor)
    if keys is None:
        raise InvalidRequest("cursor is not a cursor this API returned.")
    return keys


def past_keys(field: str, at: datetime | str, row_id: str, *, newest_first: bool = False) -> Q:
    """The rows after ``(at, row_id)`` in ``(field, id)`` order (descending when ``newest_first``).
    The redundant bound on ``field`` alone lets an index on ``(…, field, id)`` start at the edge
    instead of reading every row before it."""
    op = "lt" if newest_first else "gt"
    return Q(**{f"{field}__{op}e": at}) & (Q(**{f"{field}__{op}": at}) | Q(**{field: at, f"id__{op}": row_id}))


def _every_row(_row: Model) -> bool:
    return True


def readable_page(ordered: QuerySet[RowT], *, start: Q | None, past: Callable[[RowT], Q],
                  readable: Callable[[str], bool], page_size: int,
                  keep: Callable[[RowT], bool] = _every_row) -> tuple[list[RowT], bool]:
    """Up to ``page_size`` rows of ``ordered`` from ``start`` (None: the first) that ``readable``
    (by id) and ``keep`` (by the row: a rule on its columns) let through, and whether more
    follow. Rows left out are skipped in SQL-ordered batches of ``page_size + 1`` (``past(row)``
    is the filter for the rows after ``row``), so a page is full unless it is the last."""
    chosen: list[RowT] = []
    position = start
    while len(chosen) <= page_size:
        batch = list((ordered if position is None else ordered.filter(position))[:page_size + 1])
        chosen.extend(row for row in batch if readable(str(row.pk)) and keep(row))
        if len(batch) <= page_size:
            break
        position = past(batch[-1])
    return chosen[:page_size], len(chosen) > page_size


def moment_page(rows: QuerySet[RowT], *, field: str, after: str, readable: Callable[[str], bool],
                page_size: int, newest_first: bool = False,
                keep: Callable[[RowT], bool] = _every_row) -> tuple[list[RowT], str | None]:
    """An API list's page: ``rows`` in ``(field, id)`` order (descending when ``newest_first``)
    from the cursor ``after`` (``cursor_keys``), those ``readable`` (by id) and ``keep`` (by the
    row) let through, and the next page's cursor (None on the last page)."""
    keys = cursor_keys(after)
    order = ("-" if newest_first else "") + field
    chosen, more = readable_page(
        rows.order_by(order, "-id" if newest_first else "id"),
        start=None if keys is None else past_keys(field, *keys, newest_first=newest_first),
        past=lambda row: past_keys(field, row.serializable_value(field), str(row.pk), newest_first=newest_first),
        readable=readable, page_size=page_size, keep=keep)
    edge = chosen[-1] if chosen and more else None
    return chosen, None if edge is None else encode_keys(edge.serializable_value(field), str(edge.pk))


def text_page(rows: QuerySet[RowT], *, field: str, after: str, page_size: int,
              keep: Callable[[RowT], bool] = _every_row) -> tuple[list[RowT], str | None]:
    """``moment_page`` for a list in ``(field, id)`` order on a text column (a name): ``after`` is
    a text cursor this API returned (anything else is refused), every row ``keep`` lets through
    is read."""
    keys = decode_text_cursor(after) if after else None
    if after and keys is None:
        raise InvalidRequest("cursor is not a cursor this API returned.")
    chosen, more = readable_page(
        rows.order_by(field, "id"), start=None if keys is None else past_keys(field, *keys),
        past=lambda row: past_keys(field, row.serializable_value(field), str(row.pk)),
        readable=lambda _row_id: True, page_size=page_size, keep=keep)
    edge = chosen[-1] if chosen and more else None
    return chosen, None if edge is None else encode_text_keys(edge.serializable_value(field), str(edge.pk))


def listed_page(items: Sequence[ItemT], *, key: Callable[[ItemT], str], after: str,
                page_size: int) -> tuple[list[ItemT], str | None]:
    """The same keyset page of a list that is not a table (one a driver answers): ``items`` in
    the order of ``key`` (unique per item), from the text cursor ``after`` (anything this API did
    not return is refused), and the next page's cursor (None on the last page)."""
    keys = decode_text_cursor(after) if after else None
    if after and keys is None:
        raise InvalidRequest("cursor is not a cursor this API returned.")
    ordered = sorted(items, key=key)
    rest = ordered if keys is None else [item for item in ordered if key(item) > keys[0]]
    page = rest[:page_size]
    return page, encode_text_keys(key(page[-1]), key(page[-1])) if len(rest) > page_size else None


def any_readable(rows: QuerySet[RowT], readable: Callable[[str], bool], *, chunk: int = 500) -> bool:
    """Whether ``readable`` lets through any of ``rows``: their ids read in one streamed query,
    stopping at the first readable one."""
    return any(readable(str(pk)) for pk in rows.values_list("pk", flat=True).iterator(chunk_size=chunk))
