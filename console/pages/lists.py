"""What the console's paged lists share: a keyset page of rows, its pager, and the search text.

Secrets, Configurations, Namespaces, an Agent's revisions and the Access page's service
principals read one page of their selector's ``*_page`` (a keyset on ``(moment, id)``, or for
the principals ``(name, id)``) with the cursor in ``?after=``; the pager offers First and Next.
A cursor that is not one of ours (edited, truncated) or whose page is empty (a stale link) shows
the first page with a note saying so, never an error.

Members, the Access page's bindings, and the Installation's service principals still page their
rows by number (``?page=``) and search by ``?q=``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator

from console.common import ConsoleRequest
from occ.selectors.paging import decode_cursor

PAGE_SIZE = 25
SEARCH_MAX_CHARS = 200
CURSOR_MAX_CHARS = 2000  # a moment and an id, base64, with room to spare

RowT = TypeVar("RowT")


def paged(items: list[Any], number: str | None) -> Page:
    """One page of a short list ordered by name (offset paging: these lists are small and change
    rarely, so page numbers are worth more than a cursor's stability here)."""
    return Paginator(items, PAGE_SIZE).get_page(number)


def search_text(request: ConsoleRequest, name: str = "q") -> str:
    """What was typed in the search box ``name``, trimmed."""
    return request.GET.get(name, "").strip()[:SEARCH_MAX_CHARS]


def list_url(base: str, **params: str | None) -> str:
    """``base`` with the parameters that have a value."""
    kept = {key: value for key, value in params.items() if value}
    return f"{base}?{urlencode(kept)}" if kept else base


@dataclass(frozen=True)
class KeysetPage(Generic[RowT]):
    """One page of a list and its pager (``components/keyset_pager.html``)."""

    rows: list[RowT]
    first_url: str | None  # back to the first page; None on it
    next_url: str | None  # None on the last page
    cursor_refused: bool  # the link's cursor was not ours or was stale: this is the first page


def keyset_page(request: ConsoleRequest, read: Callable[[str], tuple[list[RowT], str | None]], *, base: str,
                param: str = "after", keep: Mapping[str, str] | None = None,
                decode: Callable[[str], object | None] = decode_cursor) -> KeysetPage[RowT]:
    """The page ``read`` gives for the cursor in ``?<param>=`` (``read("")``: the first page);
    ``keep`` are the other query parameters every pager link carries (a search, another
    table's cursor); ``decode`` tells a cursor of ours (a moment's, or ``decode_text_cursor`` for
    a list by name). Only a GET's query is read: a form's answer shows the first page."""
    keep = dict(keep or {})
    cursor = request.GET.get(param, "")[:CURSOR_MAX_CHARS] if request.method == "GET" else ""
    refused = bool(cursor) and decode(cursor) is None
    rows, next_cursor = read("" if refused else cursor)
    if cursor and not refused and not rows:  # a stale link: nothing is past its cursor any more
        refused = True
        rows, next_cursor = read("")
    on_first = not cursor or refused
    return KeysetPage(
        rows=rows,
        first_url=None if on_first else list_url(base, **keep),
        next_url=list_url(base, **keep, **{param: next_cursor}) if next_cursor else None,
        cursor_refused=refused)
