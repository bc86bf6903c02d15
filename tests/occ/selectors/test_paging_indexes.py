"""The keyset pages' index (migrations 0022 and 0023): on PostgreSQL, with a few thousand rows in the listed
Namespace (or Agent) and more in others, the first page and a page past a cursor are read by an
index scan of the list's own ``(…, created_at, id)`` index, with no sort of the Namespace's rows.
(With a hundred rows PostgreSQL rightly sorts them instead: the index is for a big fleet.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Model, QuerySet
from django.utils import timezone

from occ.models import (
    AccessBinding,
    Agent,
    AgentRevision,
    Budget,
    Configuration,
    Namespace,
    NamespaceStatus,
    Principal,
    PrincipalKind,
    Role,
    Secret,
    ServiceKey,
)
from occ.selectors.access import _people as people_of
from occ.selectors.paging import past_keys
from occ.selectors.secrets import user_secrets
from tests.factories import AgentFactory, NamespaceFactory

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db]

ROWS = 3000
SPREAD = 10  # Namespaces (or Agents) the rows are spread over: two thirds in the first, the one listed


def _owner(owners: list, index: int) -> Any:
    return owners[0] if index % 3 else owners[1 + index % (len(owners) - 1)]


@dataclass(frozen=True)
class Case:
    index: str
    seed: Callable[[], QuerySet]  # makes the rows; answers the list's rows before ordering
    field: str = "created_at"
    newest_first: bool = False


def _namespaces(count: int) -> list[Namespace]:
    start = timezone.now() - timedelta(days=1)
    made = Namespace.objects.bulk_create(
        Namespace(name=f"bench-ns-{index:05d}", status=NamespaceStatus.READY) for index in range(count))
    for offset, namespace in enumerate(made):  # distinct moments, as made one after another
        Namespace.objects.filter(id=namespace.id).update(created_at=start + timedelta(seconds=offset))
    return made


def _agents() -> QuerySet:
    owners = _namespaces(SPREAD)
    configurations = {ns.id: Configuration.objects.create(namespace=ns, name="c") for ns in owners}
    Agent.objects.bulk_create(Agent(namespace=_owner(owners, index), name=f"agent-{index}",
                                    configuration=configurations[_owner(owners, index).id]) for index in range(ROWS))
    return Agent.objects.filter(namespace=owners[0])


def _secrets() -> QuerySet:
    owners = _namespaces(SPREAD)
    Secret.objects.bulk_create(Secret(namespace=_owner(owners, index), name=f"secret-{index}", driver_id="database",
                                      backend_name=f"occ-secret-{index}") for index in range(ROWS))
    return user_secrets().filter(namespace=owners[0])


def _configurations() -> QuerySet:
    owners = _namespaces(SPREAD)
    Configuration.objects.bulk_create(Configuration(namespace=_owner(owners, index), name=f"c-{index}")
                                      for index in range(ROWS))
    return Configuration.objects.filter(namespace=owners[0])


def _listed_namespaces() -> QuerySet:
    _namespaces(ROWS)
    return Namespace.objects.live()


def _revisions() -> QuerySet:
    ns = NamespaceFactory(status=NamespaceStatus.READY)
    agents = [AgentFactory(namespace=ns) for _ in range(SPREAD)]
    AgentRevision.objects.bulk_create(
        AgentRevision(namespace=ns, agent=_owner(agents, index), number=index + 1,
                      configuration_id=agents[0].configuration_id, configuration_generation=1, snapshot={},
                      created_by="prn_test") for index in range(ROWS))
    return AgentRevision.objects.filter(namespace_id=ns.id, agent=agents[0])


def _service_principals() -> QuerySet:
    owners = _namespaces(SPREAD)
    Principal.objects.bulk_create(Principal(id=f"sp_{index:08d}", kind=PrincipalKind.SERVICE, name=f"sp-{index}",
                                            namespace=_owner(owners, index)) for index in range(ROWS))
    return Principal.objects.filter(kind=PrincipalKind.SERVICE, namespace=owners[0], agent__isnull=True)


def _bindings() -> QuerySet:
    owners = _namespaces(SPREAD)
    principal = Principal.objects.create(kind=PrincipalKind.SERVICE, name="bound")
    roles = {ns.id: Role.objects.create(namespace=ns, name="r", permissions=["read:agent"]) for ns in owners}
    AccessBinding.objects.bulk_create(
        AccessBinding(principal=principal, role=roles[_owner(owners, index).id], namespace=_owner(owners, index),
                      resource_kind="agent", resource_id=f"agt_{index}") for index in range(ROWS))
    return AccessBinding.objects.filter(namespace=owners[0])


def _budgets() -> QuerySet:
    owners = _namespaces(SPREAD)
    configurations = {ns.id: Configuration.objects.create(namespace=ns, name="c") for ns in owners}
    agents = Agent.objects.bulk_create(
        Agent(namespace=_owner(owners, index), name=f"agent-{index}",
              configuration=configurations[_owner(owners, index).id]) for index in range(ROWS))
    Budget.objects.bulk_create(Budget(namespace_id=agent.namespace_id, agent=agent, period="day", limit=5,
                                      set_by="prn_test") for agent in agents)
    return Budget.objects.filter(namespace=owners[0])


def _service_keys() -> QuerySet:
    owners = Principal.objects.bulk_create(Principal(id=f"sp_{index:08d}", kind=PrincipalKind.SERVICE,
                                                     name=f"sp-{index}") for index in range(SPREAD))
    expires = timezone.now() + timedelta(days=1)
    ServiceKey.objects.bulk_create(ServiceKey(principal=_owner(owners, index), name=f"k-{index}",
                                              digest=f"{index:064d}", expires_at=expires, created_by="prn_test")
                                   for index in range(ROWS))
    return ServiceKey.objects.filter(principal=owners[0])


def _people() -> QuerySet:
    ns = NamespaceFactory(status=NamespaceStatus.READY)
    configuration = Configuration.objects.create(namespace=ns, name="c")
    agents = Agent.objects.bulk_create(Agent(namespace=ns, name=f"agent-{index}", configuration=configuration)
                                       for index in range(ROWS))
    Principal.objects.bulk_create(Principal(id=f"sp_{index:08d}", kind=PrincipalKind.SERVICE, name=f"agent-{index}",
                                            namespace=ns, agent=agent) for index, agent in enumerate(agents))
    users = get_user_model().objects.bulk_create(get_user_model()(username=f"person-{index}")
                                                 for index in range(ROWS))
    Principal.objects.bulk_create(Principal(id=f"prn_{index:08d}", kind=PrincipalKind.HUMAN,
                                            name=f"person-{index}", user=user) for index, user in enumerate(users))
    return people_of("")


CASES = [
    pytest.param(Case("agent_created_order", _agents), id="agents"),
    pytest.param(Case("secret_created_order", _secrets), id="secrets"),
    pytest.param(Case("configuration_updated_order", _configurations, "updated_at", newest_first=True),
                 id="configurations"),
    pytest.param(Case("namespace_created_order", _listed_namespaces), id="namespaces"),
    pytest.param(Case("revision_created_order", _revisions), id="revisions"),
    pytest.param(Case("principal_created_order", _service_principals), id="service-principals"),
    pytest.param(Case("binding_created_order", _bindings), id="access-bindings"),
    pytest.param(Case("budget_created_order", _budgets), id="budgets"),
    pytest.param(Case("service_key_created_order", _service_keys, newest_first=True), id="service-keys"),
    pytest.param(Case("principal_name_order", _people, "name"), id="accounts"),
]


@pytest.mark.parametrize("case", CASES)
def test_a_page_is_an_index_scan_of_the_lists_own_order(case: Case):
    rows = case.seed()
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {rows.model._meta.db_table}")
    direction = "-" if case.newest_first else ""
    ordered = rows.order_by(direction + case.field, direction + "id")
    edge: Model = ordered[10]
    past = past_keys(case.field, getattr(edge, case.field), str(edge.pk), newest_first=case.newest_first)
    for page in (ordered[:51], ordered.filter(past)[:51]):
        plan = page.explain()
        assert f"Index Scan{' Backward' if case.newest_first else ''} using {case.index}" in plan, plan
        assert "Sort" not in plan, plan
