"""The Agents list in keyset pages (issue 31, "Proof at scale"): full pages by name, Next and
Previous walk every Agent once, the search reaches past the first page, unreadable Agents are
skipped without short pages, a cursor that is not ours shows the first page, and a page costs
the same queries however many Agents the Namespace holds."""

from __future__ import annotations

import base64
import html as html_lib
import random
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from occ.models import Agent, Namespace
from occ.selectors.paging import encode_text_keys
from tests.console.conftest import ConsoleClient, fragment_root
from tests.console.test_agents_list import agents_url, table_rows
from tests.factories import ConfigurationFactory, grant, human


def seed(namespace: Namespace, names: list[str]) -> dict[str, Agent]:
    """Agents named ``names`` (one shared Configuration, one INSERT), created in shuffled order
    so that creation order says nothing about name order."""
    configuration = ConfigurationFactory(namespace=namespace)
    shuffled = random.Random(31).sample(names, len(names))
    made = Agent.objects.bulk_create([Agent(namespace=namespace, name=name, configuration=configuration)
                                      for name in shuffled])
    return {agent.name: agent for agent in made}


def shown(html: str) -> list[str]:
    """The names on the page, in order."""
    return [html_lib.unescape(name) for row in table_rows(html)
            for name in re.findall(r'/agents/ag[^"]*">([^<]+)</a>', row)]


def link(html: str, rel: str) -> str | None:
    found = re.search(rf'<a class="button" rel="{rel}" href="([^"]+)"', html)
    return html_lib.unescape(found.group(1)) if found else None


def by_name(names: list[str]) -> list[str]:
    return sorted(names, key=lambda name: name.lower())


@pytest.fixture
def small_pages(monkeypatch) -> int:
    monkeypatch.setattr("console.views.agents.PAGE_SIZE", 4)
    return 4


def test_the_first_page_is_full_and_sorted_by_name_ignoring_case(console, ready_namespace):
    from console.views.agents import PAGE_SIZE
    names = [f"{'Agent' if index % 3 else 'agent'}-{index:03d}" for index in range(PAGE_SIZE + 3)]
    seed(ready_namespace, names)

    html = console.get(agents_url(ready_namespace)).content.decode()

    assert shown(html) == by_name(names)[:PAGE_SIZE]
    assert link(html, "next") is not None
    assert link(html, "prev") is None, "the first page has no Previous"
    pager = re.search(r'<a class="button" rel="next" ([^>]*)>Next</a>', html)
    assert pager is not None
    href = re.search(r'href="([^"]+)"', pager.group(1))
    assert href is not None
    for attribute in (f'hx-get="{href.group(1)}"', 'hx-target="#agents-table"', 'hx-push-url="true"'):
        assert attribute in pager.group(1), "Next works with htmx and without JavaScript"
    assert "No Agents yet" not in html


@pytest.mark.parametrize("htmx", [False, True], ids=["plain-links", "htmx"])
def test_next_walks_every_agent_once_and_previous_walks_back(console, ready_namespace, small_pages, htmx):
    names = [f"agent-{index:02d}" for index in range(11)] + ["Zed", "alpha", "Beta"]
    seed(ready_namespace, names)
    get = console.hx_get if htmx else console.get

    pages: list[list[str]] = []
    url: str | None = agents_url(ready_namespace)
    while url is not None:
        html = get(url).content.decode()
        if htmx:
            assert fragment_root(html) == "div#agents-table"
        pages.append(shown(html))
        url = link(html, "next")
        assert len(pages) < 10, "the pager does not end"

    assert [name for page in pages for name in page] == by_name(names)  # none twice, none left out
    assert [len(page) for page in pages] == [4, 4, 4, 2]
    backwards = [shown(html)]
    while (previous := link(html, "prev")) is not None:
        html = get(previous).content.decode()
        backwards.append(shown(html))
    assert backwards[::-1] == pages


def test_the_search_reaches_past_the_first_page_and_keeps_itself_in_the_pager(console, ready_namespace,
                                                                              small_pages):
    names = [f"agent-{index:02d}" for index in range(12)] + ["needle-one", "x-NEEDLE-two", "zz-needle"]
    agents = seed(ready_namespace, names)
    wanted = agents["agent-09"]  # the third page, unsearched

    html = console.hx_get(agents_url(ready_namespace), {"q": wanted.id[-10:].upper()}).content.decode()
    assert shown(html) == ["agent-09"]

    html = console.hx_get(agents_url(ready_namespace), {"q": "NEEDLE"}).content.decode()
    assert shown(html) == ["needle-one", "x-NEEDLE-two", "zz-needle"]
    assert link(html, "next") is None

    html = console.get(agents_url(ready_namespace), {"q": "agent-"}).content.decode()
    assert shown(html) == [f"agent-{index:02d}" for index in range(4)]
    following = link(html, "next")
    assert following is not None
    assert "q=agent-" in following
    assert shown(console.get(following).content.decode()) == [f"agent-{index:02d}" for index in range(4, 8)]


def test_an_unreadable_agent_never_appears_and_pages_stay_full(bootstrap, ready_namespace, small_pages):
    names = [f"agent-{index:02d}" for index in range(15)]
    agents = seed(ready_namespace, names)
    readable = [name for index, name in enumerate(names) if index % 3 != 1]  # every third one hidden
    person = human("some-agents-reader")
    grant(person, "read:namespace", namespace=ready_namespace)
    for name in readable:
        grant(person, "read:agent", namespace=ready_namespace, resource_kind="agent", resource_id=agents[name].id)
    client = ConsoleClient()
    client.force_login(person.user)

    pages: list[list[str]] = []
    url: str | None = agents_url(ready_namespace)
    while url is not None:
        html = client.get(url).content.decode()
        pages.append(shown(html))
        url = link(html, "next")

    assert [name for page in pages for name in page] == readable
    assert [len(page) for page in pages] == [4, 4, 2]

    html = client.get(agents_url(ready_namespace), {"q": "agent-04"}).content.decode()  # hidden: index 4
    assert shown(html) == []
    assert "No matching Agents" in html, "Agents exist that the person may read"


@pytest.mark.parametrize(("param", "cursor"), [
    pytest.param("after", "garbage!", id="not-base64"),
    pytest.param("after", "Zm9v", id="no-id"),
    pytest.param("after", encode_text_keys("x\x00y", "ag_1"), id="nul"),
    pytest.param("before", base64.urlsafe_b64encode(b"\xff\xfe|ag_1").decode(), id="not-utf8"),
    pytest.param("before", "x" * 5000, id="too-long"),
    pytest.param("after", encode_text_keys("zzzz", "ag_zzzz"), id="stale-past-the-end"),
    pytest.param("before", encode_text_keys("a", "ag_0"), id="stale-before-the-start"),
])
def test_a_cursor_that_is_not_ours_or_is_stale_shows_the_first_page(console, ready_namespace, small_pages,
                                                                     param, cursor):
    names = [f"agent-{index:02d}" for index in range(6)]
    seed(ready_namespace, names)

    for get in (console.get, console.hx_get):
        response = get(agents_url(ready_namespace), {param: cursor})
        assert response.status_code == 200
        html = response.content.decode()
        assert shown(html) == names[:4]
        assert link(html, "prev") is None
        assert link(html, "next") is not None


def test_the_poll_rereads_the_same_page_with_its_search(console, ready_namespace, small_pages):
    seed(ready_namespace, [f"agent-{index:02d}" for index in range(10)])

    first = console.get(agents_url(ready_namespace), {"q": "agent"}).content.decode()
    following = link(first, "next")
    assert following is not None
    fragment = console.hx_get(following).content.decode()
    poll = re.search(r'<div id="agents-table"[^>]*hx-get="([^"]+)"', fragment)
    assert poll is not None
    assert html_lib.unescape(poll.group(1)) == following
    assert shown(console.hx_get(html_lib.unescape(poll.group(1))).content.decode()) == shown(fragment)


def page_queries(client: ConsoleClient, url: str) -> int:
    client.get(url)  # the session settled
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_a_page_costs_the_same_queries_at_two_sizes(console, ready_namespace):
    from console.views.agents import PAGE_SIZE
    seed(ready_namespace, [f"agent-{index:03d}" for index in range(PAGE_SIZE + 10)])
    url = agents_url(ready_namespace)
    small_first = page_queries(console, url)
    small_next = page_queries(console, link(console.get(url).content.decode(), "next") or "")

    seed(ready_namespace, [f"more-{index:03d}" for index in range(3 * PAGE_SIZE)])
    large_first = page_queries(console, url)
    second = link(console.get(url).content.decode(), "next") or ""
    assert len(shown(console.get(second).content.decode())) == PAGE_SIZE
    large_next = page_queries(console, second)

    assert large_first == small_first
    assert large_next == small_next
    assert small_first <= 13  # as tests/console/test_list_queries.py budgets the page
