"""The lists issue 31 paged: GET /namespaces, an Agent's revisions and a Namespace's policy
(Roles, access bindings, service principals), in keyset pages on ``(created_at, id)`` oldest
first, through the real HTTP stack: a walk across page boundaries (rows sharing one moment
included), a row created between pages, cursors OCC did not return, and per-row read filtering
where the list has one (the rule's own tests are the Agents list's: test_agent_pages)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.db.models import Model
from django.utils import timezone

from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS
from occ.models import AccessBinding, Agent, Namespace, NamespaceStatus, Principal, Role
from tests.agents_support import make_revision
from tests.conftest import ApiClient, walk_pages
from tests.factories import AgentFactory, NamespaceFactory, grant, key_for, service_principal

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Listed:
    """A paged list of one test: its path, its page key, and how to add one row to it."""

    path: str
    key: str
    add: Callable[[int], Model]


def admin() -> ApiClient:
    principal = service_principal("admin")
    grant(principal, *ADMINISTRATOR_PERMISSIONS)
    return ApiClient(key_for(principal))


def _namespaces(_ns: Namespace) -> Listed:
    return Listed("/namespaces", "namespaces",
                  lambda index: NamespaceFactory(name=f"team-{index:02d}", status=NamespaceStatus.READY))


def _revisions(ns: Namespace) -> Listed:
    agent = AgentFactory(namespace=ns)
    make_revision(AgentFactory(namespace=ns), 1)  # another Agent's: never listed
    return Listed(f"/namespaces/{ns.id}/agents/{agent.id}/revisions", "revisions",
                  lambda index: make_revision(agent, index + 1))


def _roles(ns: Namespace) -> Listed:
    Role.objects.create(namespace=ns, name="hidden system role", permissions=["read:agent"], system=True)
    return Listed(f"/namespaces/{ns.id}/iam/roles", "roles",
                  lambda index: Role.objects.create(namespace=ns, name=f"role-{index:02d}", permissions=["read:agent"]))


def _bindings(ns: Namespace) -> Listed:
    role = Role.objects.create(namespace=ns, name="reader", permissions=["read:agent"])
    return Listed(f"/namespaces/{ns.id}/iam/access-bindings", "accessBindings",
                  lambda index: AccessBinding.objects.create(principal=service_principal(f"sp-{index}", ns),
                                                             role=role, namespace=ns))


def _service_principals(ns: Namespace) -> Listed:
    AgentFactory(namespace=ns)  # its Agent's service principal: never listed
    return Listed(f"/namespaces/{ns.id}/iam/service-principals", "servicePrincipals",
                  lambda index: service_principal(f"sp-{index:02d}", ns))


LISTS = [pytest.param(_namespaces, id="namespaces"), pytest.param(_revisions, id="revisions"),
         pytest.param(_roles, id="roles"), pytest.param(_bindings, id="access-bindings"),
         pytest.param(_service_principals, id="service-principals")]


@pytest.fixture
def ns() -> Namespace:
    return NamespaceFactory(status=NamespaceStatus.READY)


def _share_one_moment(rows: list[Model]) -> None:
    """Rows 2 to 4 made at one moment, so the id breaks the tie across a page boundary (an
    AgentRevision cannot be updated: it keeps the moment it was made at)."""
    model = type(rows[0])
    if model.__name__ == "AgentRevision":
        return
    start = timezone.now() - timedelta(days=1)
    for index, row in enumerate(rows):
        model._default_manager.filter(pk=row.pk).update(created_at=start + timedelta(minutes=2 if 2 <= index <= 4
                                                                                    else index))


def _expected(listed: Listed, rows: list[Model]) -> list[str]:
    """The ids the list holds, oldest first (for Namespaces, every live one: the fixture's too)."""
    found = (Namespace.objects.live() if listed.key == "namespaces"
             else type(rows[0])._default_manager.filter(pk__in=[row.pk for row in rows]))
    return [str(pk) for pk in found.order_by("created_at", "id").values_list("pk", flat=True)]


@pytest.mark.parametrize("make", LISTS)
def test_pages_walk_every_row_once_across_page_boundaries(ns, make):
    listed = make(ns)
    rows = [listed.add(index) for index in range(7)]
    _share_one_moment(rows)
    expected = _expected(listed, rows)
    assert len(expected) >= 7
    seen, sizes = walk_pages(admin(), listed.path, listed.key, 3)
    assert seen == expected
    assert sizes == [3] * (len(expected) // 3) + ([len(expected) % 3] if len(expected) % 3 else [])
    whole = admin().get(listed.path).data
    assert [row["id"] for row in whole[listed.key]] == expected
    assert whole["nextCursor"] is None


@pytest.mark.parametrize("make", LISTS)
def test_the_cursor_continues_where_the_page_ended_and_a_row_made_since_comes_last(ns, make):
    listed = make(ns)
    for index in range(3):
        listed.add(index)
    api = admin()
    first = api.get(f"{listed.path}?limit=2").data
    assert len(first[listed.key]) == 2
    assert first["nextCursor"]
    late = listed.add(9)
    rest = api.get(f"{listed.path}?limit=100&cursor={first['nextCursor']}").data
    ids = [row["id"] for row in first[listed.key] + rest[listed.key]]
    assert len(ids) == len(set(ids))
    assert ids[-1] == str(late.pk)
    assert rest["nextCursor"] is None


def _tampered(cursor: str) -> list[str]:
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    moment, _, row_id = raw.rpartition("|")

    def frame(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    return [frame(f"{moment[:19]}|{row_id}"),  # the time zone cut off
            frame(f"yesterday|{row_id}"), frame(moment), frame(f"{moment}|{row_id}\x00"), "not-a-cursor"]


@pytest.mark.parametrize("make", LISTS)
def test_a_cursor_this_api_did_not_return_is_a_400(ns, make):
    listed = make(ns)
    for index in range(2):
        listed.add(index)
    api = admin()
    cursor = api.get(f"{listed.path}?limit=1").data["nextCursor"]
    assert api.get(f"{listed.path}?limit=1&cursor={cursor}").status == 200
    for bad in _tampered(cursor):
        response = api.get(f"{listed.path}?cursor={bad}")
        assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), bad


@pytest.mark.parametrize("make", LISTS)
@pytest.mark.parametrize("query", ["limit=0", "limit=101", "cursr=x", "limit=1&limit=2"])
def test_bad_paging_is_a_400(ns, make, query):
    listed = make(ns)
    response = admin().get(f"{listed.path}?{query}")
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")


def test_namespaces_read_exactly_are_listed_and_pages_stay_full():
    made = [NamespaceFactory(name=f"team-{index}", status=NamespaceStatus.READY) for index in range(7)]
    reader = service_principal("reader")
    for namespace in made[1::2]:
        grant(reader, "read:namespace", namespace=namespace)
    seen, sizes = walk_pages(ApiClient(key_for(reader)), "/namespaces", "namespaces", 2)
    assert seen == [namespace.id for namespace in made[1::2]]
    assert sizes == [2, 1]


def test_revisions_read_exactly_are_listed_and_pages_stay_full(ns):
    agent = AgentFactory(namespace=ns)
    revisions = [make_revision(agent, number) for number in range(1, 8)]
    reader = service_principal("reader")
    grant(reader, "read:namespace", "read:agent", namespace=ns)
    for revision in revisions[1::2]:
        grant(reader, "read:agent_revision", namespace=ns, resource_kind="agent_revision", resource_id=revision.id)
    seen, sizes = walk_pages(ApiClient(key_for(reader)), f"/namespaces/{ns.id}/agents/{agent.id}/revisions",
                             "revisions", 2)
    assert seen == [revision.id for revision in revisions[1::2]]
    assert sizes == [2, 1]


def test_agents_service_principals_are_not_counted_into_a_page(ns):
    """A Namespace of many Agents (each with its own service principal) and a few of its own:
    the pages hold only its own."""
    for _ in range(5):
        AgentFactory(namespace=ns)
    own = [service_principal(f"own-{index}", ns) for index in range(3)]
    seen, sizes = walk_pages(admin(), f"/namespaces/{ns.id}/iam/service-principals", "servicePrincipals", 2)
    assert seen == [principal.id for principal in own]
    assert sizes == [2, 1]
    assert Principal.objects.filter(namespace=ns, agent__isnull=False).count() == 5
    assert Agent.objects.filter(namespace=ns).count() == 5
