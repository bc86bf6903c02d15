"""GET /namespaces/{ns}/agents in keyset pages on ``(created_at, id)``, oldest first, through
the real HTTP stack: the first page's size, a walk to the end, an Agent created between pages,
a cursor OCC did not return, and an actor who may read only some Agents."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from django.utils import timezone

from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS
from occ.models import Agent, Namespace, NamespaceStatus
from tests.conftest import ApiClient, walk_pages
from tests.factories import AgentFactory, NamespaceFactory, grant, key_for, service_principal

pytestmark = pytest.mark.django_db


@pytest.fixture
def ns() -> Namespace:
    return NamespaceFactory(status=NamespaceStatus.READY)


def admin() -> ApiClient:
    principal = service_principal("admin")
    grant(principal, *ADMINISTRATOR_PERMISSIONS)
    return ApiClient(key_for(principal))


def _agents(ns: Namespace, count: int) -> list[Agent]:
    """``count`` Agents, oldest first; three share one moment (the id breaks the tie)."""
    start = timezone.now() - timedelta(days=1)
    made = [AgentFactory(namespace=ns, name=f"agent-{index:02d}") for index in range(count)]
    for index, agent in enumerate(made):
        moment = start + timedelta(minutes=index if index not in (3, 4) else 2)
        Agent.objects.filter(id=agent.id).update(created_at=moment)
    return sorted(Agent.objects.filter(namespace=ns), key=lambda a: (a.created_at, a.id))


def test_the_first_page_holds_the_default_fifty_oldest_and_a_cursor(ns):
    expected = _agents(ns, 52)
    page = admin().get(f"/namespaces/{ns.id}/agents").data
    assert set(page) == {"agents", "nextCursor"}
    assert [row["id"] for row in page["agents"]] == [agent.id for agent in expected[:50]]
    assert page["nextCursor"]


def test_pages_walk_every_agent_once_oldest_first(ns):
    expected = _agents(ns, 8)
    seen, sizes = walk_pages(admin(), f"/namespaces/{ns.id}/agents", "agents", 3)
    assert seen == [agent.id for agent in expected]
    assert sizes == [3, 3, 2]


def test_a_full_last_page_says_so_without_an_empty_page_after(ns):
    expected = _agents(ns, 6)
    seen, sizes = walk_pages(admin(), f"/namespaces/{ns.id}/agents", "agents", 3)
    assert seen == [agent.id for agent in expected]
    assert sizes == [3, 3]


def test_an_agent_created_between_pages_comes_last_and_nothing_repeats(ns):
    expected = _agents(ns, 5)
    api = admin()
    first = api.get(f"/namespaces/{ns.id}/agents?limit=2").data
    late = AgentFactory(namespace=ns, name="late")
    Agent.objects.filter(id=expected[0].id).delete()  # one already seen goes: the next page does not shift
    rest = []
    cursor = first["nextCursor"]
    while cursor:
        page = api.get(f"/namespaces/{ns.id}/agents?limit=2&cursor={cursor}").data
        rest += [row["id"] for row in page["agents"]]
        cursor = page["nextCursor"]
    assert [row["id"] for row in first["agents"]] + rest == [agent.id for agent in expected] + [late.id]


def test_only_agents_read_exactly_are_listed_and_pages_stay_full(ns):
    expected = _agents(ns, 9)
    readable = expected[::3]  # 0, 3, 6: one of the three that share a moment
    reader = service_principal("reader")
    grant(reader, "read:namespace", namespace=ns)
    for agent in readable:
        grant(reader, "read:agent", namespace=ns, resource_kind="agent", resource_id=agent.id)
    seen, sizes = walk_pages(ApiClient(key_for(reader)), f"/namespaces/{ns.id}/agents", "agents", 2)
    assert seen == [agent.id for agent in readable]
    assert sizes == [2, 1]


def test_without_namespace_read_the_list_is_refused(ns):
    _agents(ns, 2)
    principal = service_principal("agents-only")
    grant(principal, "read:agent", namespace=ns)
    assert ApiClient(key_for(principal)).get(f"/namespaces/{ns.id}/agents").status == 403


def _cursor(raw: str) -> str:
    return "cursor=" + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize("query", [
    pytest.param("cursor=not-a-cursor", id="not-base64-keys"),
    pytest.param(_cursor("2026-13-01T00:00:00+00:00|agt_x"), id="no-such-date"),
    pytest.param(_cursor("2026-01-01T00:00:00+00:00|agt\x00x"), id="nul-in-the-id"),
    pytest.param("cursor=" + "A" * 201, id="too-long"),
    "limit=0", "limit=101", "limit=ten", "cursr=x", "limit=1&limit=2",
])
def test_bad_paging_is_a_400(ns, query):
    response = admin().get(f"/namespaces/{ns.id}/agents?{query}")
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"


def test_a_bad_cursor_says_which_parameter(ns):
    response = admin().get(f"/namespaces/{ns.id}/agents?cursor=not-a-cursor")
    assert response.body["error"]["message"] == "cursor is not a cursor this API returned."
