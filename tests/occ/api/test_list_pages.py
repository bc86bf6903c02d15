"""The lists issue 31 paged: GET /namespaces, an Agent's revisions, a Namespace's policy
(Roles, access bindings, service principals) and budgets, an Agent's shares, in keyset pages on
``(created_at, id)`` oldest first; a service principal's keys newest first; the accounts, the
Installation Roles and whom an Agent can be shared with on ``(name, id)``; through the real HTTP
stack: a walk across page boundaries (rows sharing one moment
included), a row created between pages, cursors OCC did not return, and per-row read filtering
where the list has one (the rule's own tests are the Agents list's: test_agent_pages)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db.models import Model, Q, QuerySet
from django.utils import timezone

from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS
from occ.models import (
    AccessBinding,
    Agent,
    Budget,
    Namespace,
    NamespaceStatus,
    Principal,
    PrincipalKind,
    Role,
    ServiceKey,
)
from tests.agents_support import make_revision
from tests.conftest import ApiClient, walk_pages
from tests.factories import AgentFactory, NamespaceFactory, grant, human, key_for, service_principal

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Listed:
    """A paged list of one test: its path, its page key, and how to add one row to it."""

    path: str
    key: str
    add: Callable[[int], Model]
    id_key: str = "id"
    order: str = "created_at"  # or "name": a text cursor
    newest_first: bool = False
    # Everything the list holds (default: the rows ``add`` made), for lists that also show rows
    # the test did not add (the administrator's own binding, the Installation's built-in Roles).
    holds: Callable[[list[Model]], QuerySet] | None = None


def admin() -> ApiClient:
    """The administrator of this test: one principal, so lists that show who has access show it once."""
    principal = Principal.objects.filter(name="admin", kind=PrincipalKind.SERVICE, namespace__isnull=True).first()
    if principal is None:
        principal = service_principal("admin")
        grant(principal, *ADMINISTRATOR_PERMISSIONS)
    return ApiClient(key_for(principal))


def paged(path: str, query: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}{query}"


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


def _budgets(ns: Namespace) -> Listed:
    Budget.objects.create(namespace=NamespaceFactory(), period="month", limit=Decimal(5), set_by="x")  # elsewhere
    return Listed(f"/namespaces/{ns.id}/budgets", "budgets",
                  lambda index: Budget.objects.create(namespace=ns, agent=AgentFactory(namespace=ns), period="day",
                                                      limit=Decimal(index + 1), set_by="x"))


def _service_keys(_ns: Namespace) -> Listed:
    principal = service_principal("keyed")
    key_for(service_principal("someone else"))  # another principal's: never listed

    def add(index: int) -> ServiceKey:
        key_for(principal)
        return ServiceKey.objects.filter(principal=principal).latest("created_at", "id")

    return Listed(f"/api/auth/service-keys?servicePrincipalId={principal.id}", "serviceKeys", add,
                  newest_first=True)


def _accounts(_ns: Namespace) -> Listed:
    return Listed("/api/auth/accounts", "accounts", lambda index: human(f"person-{index:02d}"), id_key="principalId",
                  order="name", holds=lambda _rows: Principal.objects.filter(kind=PrincipalKind.HUMAN))


def _installation_roles(ns: Namespace) -> Listed:
    Role.objects.create(namespace=ns, name="a namespace's", permissions=["read:agent"])  # never listed
    return Listed("/api/auth/roles", "roles",
                  lambda index: Role.objects.create(name=f"zz-role-{index:02d}", permissions=["read:agent"]),
                  order="name", holds=lambda _rows: Role.objects.filter(namespace__isnull=True))


def _shares(ns: Namespace) -> Listed:
    agent = AgentFactory(namespace=ns)
    no_agent_permission = Role.objects.create(namespace=ns, name="secrets only", permissions=["read:secret"])
    AccessBinding.objects.create(principal=service_principal("not sharing", ns), role=no_agent_permission,
                                 namespace=ns)  # reaches the Agent with nothing on Agents: never listed
    AccessBinding.objects.create(principal=service_principal("elsewhere", ns), role=no_agent_permission,
                                 namespace=ns, resource_kind="agent", resource_id=AgentFactory(namespace=ns).id)
    user = Role.objects.create(namespace=ns, name="chatter", permissions=["read:agent", "invoke:agent"])
    return Listed(f"/namespaces/{ns.id}/agents/{agent.id}/shares", "shares",
                  lambda index: AccessBinding.objects.create(principal=service_principal(f"sp-{index}", ns), role=user,
                                                             namespace=ns, resource_kind="agent",
                                                             resource_id=agent.id),
                  id_key="bindingId",
                  holds=lambda rows: AccessBinding.objects.filter(Q(pk__in=[row.pk for row in rows])
                                                                  | Q(principal__name="admin", namespace__isnull=True)))


def _share_subjects(ns: Namespace) -> Listed:
    agent = AgentFactory(namespace=ns)
    service_principal("other team's", NamespaceFactory())  # never listed
    gone = human("gone")
    gone.user.is_active = False
    gone.user.save(update_fields=["is_active"])  # never listed
    people = Q(kind=PrincipalKind.HUMAN, user__is_active=True)
    services = Q(kind=PrincipalKind.SERVICE, agent__isnull=True) & (Q(namespace__isnull=True) | Q(namespace=ns))
    return Listed(f"/namespaces/{ns.id}/agents/{agent.id}/shares/subjects", "subjects",
                  lambda index: service_principal(f"sp-{index:02d}", ns), order="name",
                  holds=lambda _rows: Principal.objects.filter(people | services))


LISTS = [pytest.param(_namespaces, id="namespaces"), pytest.param(_revisions, id="revisions"),
         pytest.param(_roles, id="roles"), pytest.param(_bindings, id="access-bindings"),
         pytest.param(_service_principals, id="service-principals"), pytest.param(_budgets, id="budgets"),
         pytest.param(_service_keys, id="service-keys"), pytest.param(_accounts, id="accounts"),
         pytest.param(_installation_roles, id="installation-roles"), pytest.param(_shares, id="shares"),
         pytest.param(_share_subjects, id="share-subjects")]


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
    """The ids the list holds in its order (for Namespaces, every live one: the fixture's too)."""
    found = (Namespace.objects.live() if listed.key == "namespaces" else listed.holds(rows) if listed.holds
             else type(rows[0])._default_manager.filter(pk__in=[row.pk for row in rows]))
    direction = "-" if listed.newest_first else ""
    return [str(pk) for pk in found.order_by(direction + listed.order, direction + "id").values_list("pk", flat=True)]


@pytest.mark.parametrize("make", LISTS)
def test_pages_walk_every_row_once_across_page_boundaries(ns, make):
    api = admin()  # before the rows: the lists of who has access show the administrator too
    listed = make(ns)
    rows = [listed.add(index) for index in range(7)]
    _share_one_moment(rows)
    expected = _expected(listed, rows)
    assert len(expected) >= 7
    seen, sizes = walk_pages(api, listed.path, listed.key, 3, id_key=listed.id_key)
    assert seen == expected
    assert sizes == [3] * (len(expected) // 3) + ([len(expected) % 3] if len(expected) % 3 else [])
    whole = api.get(listed.path).data
    assert [row[listed.id_key] for row in whole[listed.key]] == expected
    assert whole["nextCursor"] is None


@pytest.mark.parametrize("make", LISTS)
def test_the_cursor_continues_where_the_page_ended_and_a_row_made_since_comes_last(ns, make):
    api = admin()
    listed = make(ns)
    for index in range(3):
        listed.add(index)
    first = api.get(paged(listed.path, "limit=2")).data
    assert len(first[listed.key]) == 2
    assert first["nextCursor"]
    late = listed.add(9)
    rest = api.get(paged(listed.path, f"limit=100&cursor={first['nextCursor']}")).data
    ids = [row[listed.id_key] for row in first[listed.key] + rest[listed.key]]
    assert len(ids) == len(set(ids))
    if listed.newest_first:  # newer than the page it was made after: the next walk's first row
        assert str(late.pk) not in ids
        assert api.get(listed.path).data[listed.key][0][listed.id_key] == str(late.pk)
    else:
        assert ids[-1] == str(late.pk)
    assert rest["nextCursor"] is None


def _tampered(cursor: str, *, text: bool) -> list[str]:
    """Cursors this API did not return (on a text key any text is a key, so only broken frames)."""
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    moment, _, row_id = raw.rpartition("|")

    def frame(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    broken = [frame(moment), frame(f"{moment}|{row_id}\x00"), "not-a-cursor"]
    return [*broken, frame(f"{moment}\x00|{row_id}")] if text else [
        frame(f"{moment[:19]}|{row_id}"), frame(f"yesterday|{row_id}"), *broken]  # the time zone cut off; no moment


@pytest.mark.parametrize("make", LISTS)
def test_a_cursor_this_api_did_not_return_is_a_400(ns, make):
    api = admin()
    listed = make(ns)
    for index in range(2):
        listed.add(index)
    cursor = api.get(paged(listed.path, "limit=1")).data["nextCursor"]
    assert api.get(paged(listed.path, f"limit=1&cursor={cursor}")).status == 200
    for bad in _tampered(cursor, text=listed.order != "created_at"):
        response = api.get(paged(listed.path, f"cursor={bad}"))
        assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), bad


@pytest.mark.parametrize("make", LISTS)
@pytest.mark.parametrize("query", ["limit=0", "limit=101", "cursr=x", "limit=1&limit=2"])
def test_bad_paging_is_a_400(ns, make, query):
    listed = make(ns)
    response = admin().get(paged(listed.path, query))
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


def test_budgets_of_agents_read_exactly_are_listed_and_pages_stay_full(ns):
    """An Agent's budget is listed to whoever may read the Agent; the Namespace's own to whoever
    may read the Namespace; pages skip the rest and stay full."""
    agents = [AgentFactory(namespace=ns) for _ in range(6)]
    budgets = [Budget.objects.create(namespace=ns, agent=agent, period="day", limit=Decimal(5), set_by="x")
               for agent in agents]
    own = Budget.objects.create(namespace=ns, period="month", limit=Decimal(50), set_by="x")
    reader = service_principal("reader")
    grant(reader, "read:namespace", namespace=ns)
    for agent in agents[1::2]:
        grant(reader, "read:agent", namespace=ns, resource_kind="agent", resource_id=agent.id)
    seen, sizes = walk_pages(ApiClient(key_for(reader)), f"/namespaces/{ns.id}/budgets", "budgets", 2)
    assert seen == [budget.id for budget in budgets[1::2]] + [own.id]
    assert sizes == [2, 2]
