"""What the console's paged lists share: a page of rows and the search text.

Members, the Access page's service principals and bindings, and the Installation's service
principals page their rows by number (``?page=``) and search by ``?q=``.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator

from console.common import ConsoleRequest

PAGE_SIZE = 25
SEARCH_MAX_CHARS = 200


def paged(items: list[Any], number: str | None) -> Page:
    """One page of a short list ordered by name (offset paging: these lists are small and change
    rarely, so page numbers are worth more than a cursor's stability here)."""
    return Paginator(items, PAGE_SIZE).get_page(number)


def search_text(request: ConsoleRequest, name: str = "q") -> str:
    """What was typed in the search box ``name``, trimmed."""
    return request.GET.get(name, "").strip()[:SEARCH_MAX_CHARS]
