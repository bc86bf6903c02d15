"""The Configurations list in keyset pages (issue 31): most recently changed first, Next walks
every Configuration once (also across rows changed at one moment), the search runs in SQL and
keeps itself in the pager, a search never matches by the name of an Agent the viewer may not
read, and a cursor that is not ours shows the first page with a note, never an error."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from occ.models import Configuration, Namespace
from tests.console.conftest import ConsoleClient, fragment_root
from tests.console.keyset import REFUSED_NOTE, TAMPERED, link, walk
from tests.factories import AgentFactory, ConfigurationFactory, grant, human

PAGE_SIZE = 3
START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch) -> None:
    monkeypatch.setattr("console.views.configurations.PAGE_SIZE", PAGE_SIZE)


def page(namespace: Namespace) -> str:
    return f"/console/namespaces/{namespace.id}/configurations"


def shown(html: str) -> list[str]:
    return re.findall(r'<tr id="configuration-row-([^"]+)">', html)


def seed(namespace: Namespace, count: int, *, one_moment: bool = False, **fields) -> list[str]:
    """``count`` Configurations, the newest change first as the list shows them."""
    made = [ConfigurationFactory(namespace=namespace, **fields) for _ in range(count)]
    for index, configuration in enumerate(made):
        at = START if one_moment else START + timedelta(minutes=index)
        Configuration.objects.filter(id=configuration.id).update(updated_at=at)
    if one_moment:
        return sorted((configuration.id for configuration in made), reverse=True)
    return [configuration.id for configuration in reversed(made)]


@pytest.mark.parametrize("htmx", [False, True], ids=["plain-links", "htmx"])
@pytest.mark.parametrize("one_moment", [False, True], ids=["apart", "one-moment"])
def test_next_walks_every_configuration_once_newest_first(console, ready_namespace, htmx, one_moment):
    ids = seed(ready_namespace, 7, one_moment=one_moment)

    def get(url: str) -> str:
        html = (console.hx_get if htmx else console.get)(url).content.decode()
        if htmx:
            assert fragment_root(html) == "div#configurations-table"
        return html

    assert walk(get, page(ready_namespace), shown) == [ids[:3], ids[3:6], ids[6:]]
    second = get(link(get(page(ready_namespace)), "next") or "")
    assert link(second, "first") == page(ready_namespace)


def test_a_configuration_changed_while_paging_moves_to_the_top_and_is_not_seen_twice(console, ready_namespace):
    ids = seed(ready_namespace, 6)
    following = link(console.get(page(ready_namespace)).content.decode(), "next")
    assert following is not None
    Configuration.objects.filter(id=ids[4]).update(updated_at=START + timedelta(days=1))

    assert walk(lambda url: console.get(url).content.decode(), following, shown) == [[ids[3], ids[5]]]
    assert shown(console.get(page(ready_namespace)).content.decode())[0] == ids[4]


def test_the_search_reaches_past_the_first_page_and_keeps_itself_in_the_pager(console, ready_namespace):
    seed(ready_namespace, 4, values={})
    wanted = seed(ready_namespace, 5, values={"agents": {"defaults": {"model": {"primary": "openai/NEEDLE-5"}}}})

    html = console.get(page(ready_namespace), {"q": "needle"}).content.decode()
    assert shown(html) == wanted[:3]
    following = link(html, "next")
    assert following is not None
    assert "q=needle" in following
    assert shown(console.hx_get(following).content.decode()) == wanted[3:]


@pytest.mark.parametrize(("query", "found"), [
    pytest.param("Support-Desk", True, id="name"),
    pytest.param("anthropic/claude", True, id="model-primary"),
    pytest.param("readable bot", True, id="readable-agent-name"),
    pytest.param("secret project", False, id="hidden-agent-name"),
    pytest.param("nothing-like-it", False, id="no-match"),
])
def test_the_search_matches_name_id_model_and_readable_agents_only(bootstrap, ready_namespace, query, found):
    configuration = ConfigurationFactory(namespace=ready_namespace, name="support-desk",
                                         values={"agents": {"defaults": {"model": {"primary": "anthropic/claude-x"}}}})
    readable = AgentFactory(namespace=ready_namespace, name="Readable bot", configuration=configuration)
    AgentFactory(namespace=ready_namespace, name="Secret project", configuration=configuration)
    person = human("configuration-reader")
    grant(person, "read:namespace", "read:configuration", namespace=ready_namespace)
    grant(person, "read:agent", namespace=ready_namespace, resource_kind="agent", resource_id=readable.id)
    client = ConsoleClient()
    client.force_login(person.user)

    html = client.hx_get(page(ready_namespace), {"q": query}).content.decode()

    assert shown(html) == ([configuration.id] if found else [])
    if not found:
        assert "No matching Configurations" in html
    assert shown(client.hx_get(page(ready_namespace), {"q": configuration.id[-8:]}).content.decode()) == [
        configuration.id]


@pytest.mark.parametrize("cursor", TAMPERED, ids=["not-base64", "no-id", "no-such-moment", "too-long"])
def test_a_cursor_that_is_not_ours_shows_the_first_page_with_a_note(console, ready_namespace, cursor):
    ids = seed(ready_namespace, 4)

    for get in (console.get, console.hx_get):
        response = get(page(ready_namespace), {"after": cursor})
        assert response.status_code == 200
        html = response.content.decode()
        assert shown(html) == ids[:3]
        assert REFUSED_NOTE in html
        assert link(html, "next") is not None
