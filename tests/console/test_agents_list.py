"""The Agents list: columns, search (HTMX fragment and plain ``?q=``), empty and error states,
per-Agent read filtering, and a query count that does not grow with the number of Agents."""

from __future__ import annotations

import re
from datetime import UTC

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from occ.errors import DependencyUnavailable
from occ.models import DesiredRuntimeState, ExecutionMode, Namespace
from occ.models.work import revision_reconcile_key
from tests.agents_support import make_revision
from tests.console.conftest import ConsoleClient, current_nav, fragment_root, is_error_toast
from tests.console.test_agent_detail import deploy, make_world
from tests.factories import AgentFactory, NamespaceFactory, grant, human
from tests.fakes.compute import run_work


@pytest.fixture
def world(ready_namespace, console_actor, fake_compute):
    return make_world(ready_namespace, console_actor)


def agents_url(namespace: Namespace) -> str:
    return f"/console/namespaces/{namespace.id}/agents"


def table_rows(html: str) -> list[str]:
    table = re.search(r'<div id="agents-table".*?</table>', html, re.S)
    assert table, "no #agents-table"
    return re.findall(r"<tr>.*?</tr>", table.group(0).split("<tbody>", 1)[1], re.S)


def test_page_lists_agents_with_every_column(console, ready_namespace):
    running = AgentFactory(namespace=ready_namespace, name="Support bot",
                           execution_mode=ExecutionMode.DEDICATED, desired_runtime_state=DesiredRuntimeState.RUNNING)
    revision = make_revision(running, 1)  # no work row: on its way, as far as OCC knows
    running.active_revision = revision
    running.save(update_fields=["active_revision"])
    draft = AgentFactory(namespace=ready_namespace, name="Draft bot")

    response = console.get(agents_url(ready_namespace))

    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r"<h1[^>]*>Agents</h1>", html)
    create_link = (rf'href="/console/namespaces/{ready_namespace.id}/agents/start">'  # the preset chooser
                   r"(<svg [^>]*>.*?</svg>)?Create Agent</a>")
    assert re.search(create_link, html)
    search = re.search(r"<input id=\"agent-search\"[^>]*>", html, re.S).group(0)
    for attribute in ('name="q"', f'hx-get="{agents_url(ready_namespace)}"',
                      'hx-trigger="input changed delay:300ms, search"', 'hx-target="#agents-table"',
                      'hx-replace-url="true"'):  # the address bar follows the search, no stale page cursor
        assert attribute in search
    assert '<label for="agent-search">Search Agents</label>' in html
    rows = table_rows(html)
    assert len(rows) == 2
    draft_row, running_row = rows  # sorted by name
    # The name first, then the short id (the full one in its title and copy button), never the raw id as text.
    assert f'<a href="/console/namespaces/{ready_namespace.id}/agents/{running.id}">Support bot</a>' in running_row
    assert f'<code title="{running.id}">{running.id[:12]}</code>' in running_row
    assert f'data-copy="{running.id}"' in running_row
    assert '<td data-label="Runtime"><span data-runtime-state="starting">' in running_row
    assert '<td data-label="Model"><code>openai/gpt-5</code></td>' in running_row
    assert f'<td data-label="Version"><span class="id-chip"><code title="{revision.id}">' in running_row
    created = revision.created_at.astimezone(UTC)
    assert '<td data-label="Last deploy">v1 <div class="cell-sub">' in running_row
    assert (f'<time datetime="{created:%Y-%m-%dT%H:%M:%S}.{created.microsecond // 1000:03d}Z" '
            f'title="{created:%Y-%m-%d %H:%M:%S} UTC" data-relative>just now</time>') in running_row
    assert f'>Draft bot</a><div class="cell-sub"><span class="id-chip"><code title="{draft.id}">' in draft_row
    assert 'data-runtime-state="none"' in draft_row
    assert '<td data-label="Model"><span class="muted">None</span></td>' in draft_row
    assert '<td data-label="Last deploy"><span class="muted">Never</span></td>' in draft_row
    assert 'data-poll-seconds="5"' in html, "an Agent on its way: the table re-reads itself soon"
    assert current_nav(html) == "Agents"  # the shell's navigation marks the page


def test_htmx_request_returns_only_the_table_fragment(console, ready_namespace):
    AgentFactory(namespace=ready_namespace, name="alpha")

    response = console.hx_get(agents_url(ready_namespace))

    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "div#agents-table"
    assert "<html" not in html
    assert "agent-search" not in html
    assert ">alpha</a>" in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("SUPPORT", {"support-eu", "Support-US"}, id="name-any-case"),
        pytest.param("  eu ", {"support-eu"}, id="trimmed"),
        pytest.param("", {"support-eu", "Support-US", "billing"}, id="empty-shows-all"),
    ],
)
def test_search_filters_by_name_ignoring_case(console, ready_namespace, query, expected):
    for name in ("support-eu", "Support-US", "billing"):
        AgentFactory(namespace=ready_namespace, name=name)

    for response in (console.hx_get(agents_url(ready_namespace), {"q": query}),
                     console.get(agents_url(ready_namespace), {"q": query})):  # without JS too
        assert response.status_code == 200
        shown = set(re.findall(r'/agents/ag[^"]*">([^<]+)</a>', response.content.decode()))
        assert shown == expected


def test_search_matches_part_of_an_id(console, ready_namespace):
    wanted = AgentFactory(namespace=ready_namespace, name="one")
    AgentFactory(namespace=ready_namespace, name="two")

    html = console.hx_get(agents_url(ready_namespace), {"q": wanted.id[-8:].upper()}).content.decode()

    assert len(table_rows(html)) == 1
    assert ">one</a>" in html


def test_full_page_keeps_the_typed_search(console, ready_namespace):
    html = console.get(agents_url(ready_namespace), {"q": 'bot "x"'}).content.decode()
    assert 'value="bot &quot;x&quot;"' in html


def test_empty_namespace_says_no_agents_yet_with_a_way_to_create(console, ready_namespace):
    html = console.get(agents_url(ready_namespace)).content.decode()

    assert "No Agents yet" in html
    assert "No matching Agents" not in html
    assert html.count(f'href="/console/namespaces/{ready_namespace.id}/agents/start"') == 2  # toolbar and hint


def test_search_without_match_says_no_matching_agents(console, ready_namespace):
    AgentFactory(namespace=ready_namespace, name="alpha")

    response = console.hx_get(agents_url(ready_namespace), {"q": "zzz"})

    html = response.content.decode()
    assert fragment_root(html) == "div#agents-table"
    assert "No matching Agents" in html
    assert "No Agents yet" not in html
    assert table_rows(html) == []


def test_names_are_escaped(console, ready_namespace):
    AgentFactory(namespace=ready_namespace, name="<script>alert(1)</script>")

    html = console.get(agents_url(ready_namespace)).content.decode()

    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_failed_read_is_an_error_state_not_an_empty_list(console, ready_namespace, monkeypatch):
    def unavailable(**kwargs):
        raise DependencyUnavailable()

    monkeypatch.setattr("console.views.agents.agent_summary_page", unavailable)

    page = console.get(agents_url(ready_namespace))
    assert page.status_code == 503
    html = page.content.decode()
    assert re.search(r"<h1[^>]*>Agents</h1>", html)
    assert 'role="alert" data-error-code="DEPENDENCY_UNAVAILABLE"' in html
    assert "The Agents could not be loaded" in html
    assert ">Retry</a>" in html
    assert "No Agents yet" not in html

    fragment = console.hx_get(agents_url(ready_namespace), {"q": "a"})
    assert fragment.status_code == 503
    assert is_error_toast(fragment)
    assert "No Agents yet" not in fragment.content.decode()


def test_lists_only_agents_the_person_may_read(bootstrap, ready_namespace):
    visible = AgentFactory(namespace=ready_namespace, name="visible")
    AgentFactory(namespace=ready_namespace, name="unreadable-agent")
    person = human("agent-reader")
    grant(person, "read:namespace", namespace=ready_namespace)
    grant(person, "read:agent", namespace=ready_namespace, resource_kind="agent", resource_id=visible.id)
    client = ConsoleClient()
    client.force_login(person.user)

    html = client.get(agents_url(ready_namespace)).content.decode()

    assert ">visible</a>" in html
    assert "unreadable-agent" not in html
    assert len(table_rows(html)) == 1


def test_another_namespace_is_unavailable_without_saying_whether_it_exists(bootstrap, ready_namespace):
    other = NamespaceFactory(name="other-team")
    AgentFactory(namespace=other, name="secret-project")
    person = human("outsider")
    grant(person, "read:namespace", namespace=ready_namespace)
    grant(person, "read:agent", namespace=ready_namespace)
    client = ConsoleClient()
    client.force_login(person.user)

    existing = client.get(agents_url(other))
    missing = client.get("/console/namespaces/ns_doesnotexist/agents")

    assert existing.status_code == missing.status_code == 404
    assert "Namespace unavailable" in existing.content.decode()
    assert "secret-project" not in existing.content.decode()

    def anonymised(html: str, namespace_id: str) -> str:
        tokens = r'"X-CSRFToken": "[^"]*"|name="csrfmiddlewaretoken" value="[^"]*"'
        html = re.sub(tokens, "", html.replace(namespace_id, "X"))
        return re.sub(r"<code>[^<]*</code>", "", html)  # the request id

    assert anonymised(existing.content.decode(), other.id) == anonymised(missing.content.decode(), "ns_doesnotexist")
    assert "other-team" not in existing.content.decode()


def count_queries(client: ConsoleClient, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_query_count_does_not_grow_with_the_number_of_agents(console, ready_namespace):
    url = agents_url(ready_namespace)
    for index in range(2):
        AgentFactory(namespace=ready_namespace, name=f"agent-{index:02d}")
    console.get(url)  # session and caches settled
    with_two = count_queries(console, url)
    for index in range(2, 30):
        AgentFactory(namespace=ready_namespace, name=f"agent-{index:02d}")

    with_thirty = count_queries(console, url)

    assert len(table_rows(console.get(url).content.decode())) == 30
    assert with_thirty == with_two
    # 11 (the health columns: the newest revisions and pending stops, each one query), plus the 2
    # with which the sliding idle session (SESSION_SAVE_EVERY_REQUEST) moves its expiry.
    assert with_two <= 13


def test_the_health_columns_follow_deployments_and_the_table_keeps_itself_current(console, console_actor, world):
    """Issue 27, item 6: runtime state, model, version and last deploy, as the worker leaves
    them; the table re-reads itself (every 30 s when all is settled, every 5 s while not)."""
    first = deploy(world, console_actor)
    run_work(revision_reconcile_key(first.id))
    html = console.get(agents_url(world.namespace)).content.decode()
    row = table_rows(html)[0]
    assert 'data-runtime-state="running"' in row
    assert '<td data-label="Model"><code>' in row
    assert '<td data-label="Version">v1</td>' in row
    assert 'data-status="succeeded">Succeeded</span>' in row
    table = re.search(r'<div id="agents-table"[^>]*>', html, re.S).group(0)
    assert f'hx-get="{agents_url(world.namespace)}"' in table
    assert 'hx-trigger="every 30s"' in table

    second = deploy(world, console_actor)  # admitted, not yet done: v1 still serves
    fragment = console.hx_get(agents_url(world.namespace)).content.decode()
    assert fragment_root(fragment) == "div#agents-table"
    row = table_rows(fragment)[0]
    assert '<td data-label="Version">v1</td>' in row
    assert '<td data-label="Last deploy">v2 <span class="pill' in row
    run_work(revision_reconcile_key(second.id))
    row = table_rows(console.hx_get(agents_url(world.namespace)).content.decode())[0]
    assert '<td data-label="Version">v2</td>' in row

    stopped = console.hx_post(f"/console/namespaces/{world.namespace.id}/agents/{world.agent.id}/stop")
    assert stopped.status_code == 200
    fragment = console.hx_get(agents_url(world.namespace)).content.decode()
    assert 'data-runtime-state="stopping"' in table_rows(fragment)[0]
    assert 'hx-trigger="every 5s"' in fragment


def test_an_agent_a_budget_paused_reads_paused_not_stopped_in_the_list_and_its_header(console, ready_namespace):
    """Issue 29: "paused (stopped with the reason budget exceeded), shown everywhere its state is"."""
    for name, reason in (("Paused bot", "budget_exceeded"), ("Stopped bot", "")):
        agent = AgentFactory(namespace=ready_namespace, name=name, desired_runtime_state=DesiredRuntimeState.STOPPED,
                             stopped_reason=reason)
        make_revision(agent, 1)  # it ran once: a stopped Agent, not a draft
    page = console.get(agents_url(ready_namespace)).content.decode()
    fragment = console.hx_get(agents_url(ready_namespace)).content.decode()
    for html in (page, fragment):
        paused, stopped = table_rows(html)
        assert "Paused bot" in paused
        assert "Stopped bot" in stopped
        assert re.search(r'<span class="pill pill-danger" data-status="paused">Paused: budget exceeded</span>', paused)
        assert f'href="/console/namespaces/{ready_namespace.id}/usage"' in paused, "the pill leads to the budgets"
        assert ">Stopped<" not in paused
        assert re.search(r'data-status="stopped">Stopped</span>', stopped)
        assert "Paused" not in stopped

    agent = type(agent).objects.get(name="Paused bot")
    header = console.get(f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}").content.decode()
    header = header.split('id="agent-header"', 1)[1].split('class="actions agent-actions"', 1)[0]
    assert 'data-status="paused">Paused: budget exceeded</span>' in header
    assert ">Stopped<" not in header
