"""Keyset pages of the rows a caller may read: one loop for every list that pages."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db.models import Model, Q, QuerySet

RowT = TypeVar("RowT", bound=Model)


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
