"""The Secrets list in keyset pages (issue 31): oldest first, Next walks every Secret once even
across rows made at one moment, a cursor keeps its place when a Secret is created meanwhile,
Secrets the viewer may not read are skipped without short pages, and a cursor that is not ours
shows the first page with a note, never an error."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from occ.models import Namespace, Secret
from tests.console.conftest import ConsoleClient, fragment_root
from tests.console.keyset import REFUSED_NOTE, TAMPERED, link, walk
from tests.factories import SecretFactory, grant, human

PAGE_SIZE = 3


@pytest.fixture(autouse=True)
def small_pages(monkeypatch) -> None:
    monkeypatch.setattr("console.views.secrets.PAGE_SIZE", PAGE_SIZE)


def page(namespace: Namespace) -> str:
    return f"/console/namespaces/{namespace.id}/secrets"


def shown(html: str) -> list[str]:
    return re.findall(r'<span id="secret-name-[^"]+">([^<]+)</span>', html)


def seed(namespace: Namespace, count: int, *, at: datetime | None = None) -> list[str]:
    made = [SecretFactory(namespace=namespace, name=f"secret-{index:02d}") for index in range(count)]
    if at is not None:
        Secret.objects.filter(id__in=[secret.id for secret in made]).update(created_at=at)
        return [secret.name for secret in sorted(made, key=lambda secret: secret.id)]
    return [secret.name for secret in made]


@pytest.mark.parametrize("htmx", [False, True], ids=["plain-links", "htmx"])
def test_next_walks_every_secret_once_oldest_first(console, ready_namespace, htmx):
    names = seed(ready_namespace, 7)

    def get(url: str) -> str:
        html = (console.hx_get if htmx else console.get)(url).content.decode()
        if htmx:
            assert fragment_root(html) == "div#secrets-table"
        return html

    assert walk(get, page(ready_namespace), shown) == [names[:3], names[3:6], names[6:]]
    first = get(page(ready_namespace))
    assert link(first, "first") is None, "the first page has no First"
    second = get(link(first, "next") or "")
    assert link(second, "first") == page(ready_namespace)
    assert 'hx-target="#secrets-table"' in second
    assert REFUSED_NOTE not in second


def test_a_page_boundary_inside_one_moment_loses_no_secret(console, ready_namespace):
    names = seed(ready_namespace, 7, at=datetime(2026, 1, 1, tzinfo=UTC))

    pages = walk(lambda url: console.get(url).content.decode(), page(ready_namespace), shown)

    assert [len(rows) for rows in pages] == [3, 3, 1]
    assert [name for rows in pages for name in rows] == names  # by id within the moment


def test_a_cursor_continues_past_a_secret_created_since(console, ready_namespace):
    names = seed(ready_namespace, 4)
    following = link(console.get(page(ready_namespace)).content.decode(), "next")
    assert following is not None
    SecretFactory(namespace=ready_namespace, name="made-meanwhile")

    rest = walk(lambda url: console.get(url).content.decode(), following, shown)

    assert rest == [[names[3], "made-meanwhile"]]


def test_a_secret_the_viewer_may_not_read_is_skipped_and_pages_stay_full(bootstrap, ready_namespace):
    made = [SecretFactory(namespace=ready_namespace, name=f"secret-{index:02d}") for index in range(9)]
    readable = [secret for index, secret in enumerate(made) if index % 3 != 1]
    person = human("some-secrets-reader")
    grant(person, "read:namespace", namespace=ready_namespace)
    for secret in readable:
        grant(person, "read:secret", namespace=ready_namespace, resource_kind="secret", resource_id=secret.id)
    client = ConsoleClient()
    client.force_login(person.user)

    pages = walk(lambda url: client.get(url).content.decode(), page(ready_namespace), shown)

    assert pages == [[secret.name for secret in readable[:3]], [secret.name for secret in readable[3:]]]


@pytest.mark.parametrize("cursor", [*TAMPERED, "MjAzMC0wMS0wMVQwMDowMDowMCswMDowMHxzZWNfenp6"],
                         ids=["not-base64", "no-id", "no-such-moment", "too-long", "stale-past-the-end"])
def test_a_cursor_that_is_not_ours_shows_the_first_page_with_a_note(console, ready_namespace, cursor):
    names = seed(ready_namespace, 4)

    for get in (console.get, console.hx_get):
        response = get(page(ready_namespace), {"after": cursor})
        assert response.status_code == 200
        html = response.content.decode()
        assert shown(html) == names[:3]
        assert REFUSED_NOTE in html
        assert link(html, "first") is None
        assert link(html, "next") is not None
