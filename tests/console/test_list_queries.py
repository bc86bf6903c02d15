"""Every console list page makes the same number of SQL queries for a few rows as for a page
full of them: no query per row (docs/performance.md, "Console": the page ÷ JSON figure holds
only while the page does not grow a query per row)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from occ.commands.secrets import SecretCreate
from occ.iam.actor import Actor
from occ.models import AccessBinding, Principal, PrincipalKind, Role
from occ.services.secrets import secret_create
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, SecretFactory, human

FEW, MANY = 2, 15  # MANY stays within one page of the paged lists (20 rows)


def _agents(ns: Any, index: int, actor: Actor) -> None:
    AgentFactory(namespace=ns)


def _secrets(ns: Any, index: int, actor: Actor) -> None:
    SecretFactory(namespace=ns)


def _namespaces(ns: Any, index: int, actor: Actor) -> None:
    NamespaceFactory()


def _configurations(ns: Any, index: int, actor: Actor) -> None:
    AgentFactory(namespace=ns, configuration=ConfigurationFactory(namespace=ns))  # each listed with its Agent


def _access(ns: Any, index: int, actor: Actor) -> None:
    principal = Principal.objects.create(kind=PrincipalKind.SERVICE, name=f"robot-{index}", namespace=ns)
    role = Role.objects.create(namespace=ns, name=f"role-{index}", permissions=["read:agent"])
    AccessBinding.objects.create(principal=principal, role=role, namespace=ns, resource_kind="namespace",
                                 resource_id=ns.id)


def _members(ns: Any, index: int, actor: Actor) -> None:
    human(f"person-{index}")


def _audit(ns: Any, index: int, actor: Actor) -> None:
    """A Secret made through its service: one audit event, with its actor and resource."""
    secret_create(actor=actor, namespace_id=ns.id, command=SecretCreate(name=f"audited-{index}", value="v"))


# (page, its URL, one more row of it, its queries: the shell's (session, person, policy: its
# bindings and its restrictions, Namespaces, the session's save) and the page's own, each read
# once; a read done twice fails).
PAGES: list[tuple[str, Callable[[Any], str], Callable[[Any, int, Actor], None], int]] = [
    # Agents: + the health columns' newest revisions and pending stops (issue 27).
    ("agents", lambda ns: f"/console/namespaces/{ns.id}/agents", _agents, 13),
    ("secrets", lambda ns: f"/console/namespaces/{ns.id}/secrets", _secrets, 11),
    # Namespaces: + its own page, apart from the shell's selector's first Namespaces.
    ("namespaces", lambda ns: "/console/namespaces", _namespaces, 10),
    ("configurations", lambda ns: f"/console/namespaces/{ns.id}/configurations", _configurations, 12),
    # Access: + the Installation-wide bindings that reach the Namespace, and their principals
    # that are not among the form's subjects (the Installation's service principals).
    ("access", lambda ns: f"/console/namespaces/{ns.id}/access", _access, 21),
    # Members: + the Namespaces the add-a-person form offers.
    ("members", lambda ns: "/console/members", _members, 13),
    # Audit: + the resources' names, one query per kind on the page (here Secrets).
    ("audit", lambda ns: "/console/audit", _audit, 13),
]


def page_queries(console: Any, url: str) -> tuple[int, int]:
    """Queries of one steady-state GET, and the rows of its tables."""
    console.get(url)  # the session is touched once; count a steady-state request
    with CaptureQueriesContext(connection) as captured:
        response = console.get(url)
    assert response.status_code == 200, url
    rows = len(re.findall(r"<tr[ >]", response.content.decode()))
    return len(captured.captured_queries), rows


@pytest.mark.parametrize(("url", "grow", "budget"),
                         [pytest.param(url, grow, budget, id=name) for name, url, grow, budget in PAGES])
def test_a_list_page_makes_no_query_per_row(console, console_actor, ready_namespace, url, grow, budget):
    for index in range(FEW):
        grow(ready_namespace, index, console_actor)
    few, few_rows = page_queries(console, url(ready_namespace))
    for index in range(FEW, MANY):
        grow(ready_namespace, index, console_actor)
    many, many_rows = page_queries(console, url(ready_namespace))
    assert many_rows >= few_rows + MANY - FEW, "the page does not list the rows added"
    assert many == few, f"{url(ready_namespace)}: {few} queries with {FEW} rows, {many} with {MANY}"
    assert many <= budget, f"{url(ready_namespace)}: {many} queries, more than its {budget}"
