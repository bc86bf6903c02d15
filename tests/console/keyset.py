"""What the tests of the console's keyset lists share: the pager's links and a walk through
every page (``console/pages/lists.py``, ``components/keyset_pager.html``)."""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable

REFUSED_NOTE = "That page link was edited or is out of date, so the first page is shown."
TAMPERED = [  # cursors no list ever gave out
    "garbage!",  # not base64
    "Zm9v",  # base64 of "foo": no id
    "MjAyNi0xMy00MFQwMDowMDowMHxpZF8x",  # "2026-13-40T00:00:00|id_1": no such moment
    "x" * 5000,  # longer than any cursor
]


def link(html: str, rel: str) -> str | None:
    """The pager's ``rel`` link (``first``, ``next``), unescaped, or None."""
    found = re.search(rf'<a class="button" rel="{rel}" href="([^"]+)"', html)
    return html_lib.unescape(found.group(1)) if found else None


def walk(get: Callable[[str], str], url: str, shown: Callable[[str], list[str]]) -> list[list[str]]:
    """The rows ``shown`` on each page from ``url``, following Next to the last page."""
    pages: list[list[str]] = []
    following: str | None = url
    while following is not None:
        html = get(following)
        pages.append(shown(html))
        following = link(html, "next")
        assert len(pages) < 20, "the pager does not end"
    return pages
