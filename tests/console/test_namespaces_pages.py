"""The Namespaces list in keyset pages (issue 31): oldest first, Next walks every readable
Namespace once (also across rows made at one moment), a cursor keeps its place when a Namespace
is created meanwhile, Namespaces the viewer may not read are skipped without short pages, and a
cursor that is not ours shows the first page with a note, never an error."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from occ.models import Namespace
from tests.console.conftest import ConsoleClient, fragment_root
from tests.console.keyset import REFUSED_NOTE, TAMPERED, link, walk
from tests.factories import NamespaceFactory, grant, human

PAGE_SIZE = 3
PAGE = "/console/namespaces"


@pytest.fixture(autouse=True)
def small_pages(monkeypatch) -> None:
    monkeypatch.setattr("console.views.namespaces.PAGE_SIZE", PAGE_SIZE)


def shown(html: str) -> list[str]:
    return re.findall(r'<tr id="namespace-row-([^"]+)"', html)


def every_namespace() -> list[str]:
    return list(Namespace.objects.live().order_by("created_at", "id").values_list("id", flat=True))


def chunks(ids: list[str]) -> list[list[str]]:
    return [ids[start:start + PAGE_SIZE] for start in range(0, len(ids), PAGE_SIZE)]


@pytest.mark.parametrize("htmx", [False, True], ids=["plain-links", "htmx"])
@pytest.mark.parametrize("one_moment", [False, True], ids=["apart", "one-moment"])
def test_next_walks_every_namespace_once_oldest_first(console, htmx, one_moment):
    made = [NamespaceFactory() for _ in range(7)]
    if one_moment:
        Namespace.objects.filter(id__in=[ns.id for ns in made]).update(created_at=datetime(2030, 1, 1, tzinfo=UTC))
    expected = every_namespace()
    assert len(expected) >= 7

    def get(url: str) -> str:
        html = (console.hx_get if htmx else console.get)(url).content.decode()
        if htmx:
            assert fragment_root(html) == "div#namespaces-table"
        return html

    assert walk(get, PAGE, shown) == chunks(expected)
    second = get(link(get(PAGE), "next") or "")
    assert link(second, "first") == PAGE


def test_a_cursor_continues_past_a_namespace_created_since(console):
    for _ in range(5):
        NamespaceFactory()
    before = every_namespace()
    following = link(console.get(PAGE).content.decode(), "next")
    assert following is not None
    made = NamespaceFactory()

    rest = walk(lambda url: console.get(url).content.decode(), following, shown)

    assert [ns for rows in rest for ns in rows] == [*before[PAGE_SIZE:], made.id]


def test_a_namespace_the_viewer_may_not_read_is_skipped_and_pages_stay_full(bootstrap):
    made = [NamespaceFactory() for _ in range(8)]
    readable = [ns.id for index, ns in enumerate(made) if index % 3 != 1]
    person = human("some-namespaces-reader")
    for ns in made:
        if ns.id in readable:
            grant(person, "read:namespace", namespace=ns)
    client = ConsoleClient()
    client.force_login(person.user)

    assert walk(lambda url: client.get(url).content.decode(), PAGE, shown) == chunks(readable)


@pytest.mark.parametrize("cursor", TAMPERED, ids=["not-base64", "no-id", "no-such-moment", "too-long"])
def test_a_cursor_that_is_not_ours_shows_the_first_page_with_a_note(console, cursor):
    for _ in range(4):
        NamespaceFactory()

    for get in (console.get, console.hx_get):
        response = get(PAGE, {"after": cursor})
        assert response.status_code == 200
        html = response.content.decode()
        assert shown(html) == every_namespace()[:PAGE_SIZE]
        assert REFUSED_NOTE in html
        assert link(html, "next") is not None
