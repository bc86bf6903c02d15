"""GET /namespaces/{ns}/configurations: keyset pages of what the caller may read, through the
real HTTP stack (ApiClient drives the Django test client with a real service key)."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from django.utils import timezone

from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS
from occ.models import AuditEvent, Configuration, Namespace, NamespaceStatus
from tests.conftest import ApiClient
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, grant, key_for, service_principal


def caller(*permissions: str, namespace: Namespace | None = None, **scope: str) -> ApiClient:
    principal = service_principal("caller")
    if permissions:
        grant(principal, *permissions, namespace=namespace, **scope)
    return ApiClient(key_for(principal))


@pytest.fixture
def ns(db) -> Namespace:
    return NamespaceFactory(status=NamespaceStatus.READY)


def _configurations(ns: Namespace, count: int) -> list[Configuration]:
    """``count`` Configurations, the first changed most recently; two share a moment (the id breaks the tie)."""
    now = timezone.now()
    made = [ConfigurationFactory(namespace=ns) for _ in range(count)]
    for index, configuration in enumerate(made):
        moment = now - timedelta(minutes=index if index != 2 else 1)
        Configuration.objects.filter(id=configuration.id).update(updated_at=moment)
    return sorted(Configuration.objects.filter(namespace=ns), key=lambda c: (c.updated_at, c.id), reverse=True)


def test_pages_walk_every_configuration_once_newest_first(ns):
    expected = _configurations(ns, 7)
    api = caller(*ADMINISTRATOR_PERMISSIONS)
    seen: list[str] = []
    cursor = ""
    pages = 0
    while True:
        response = api.get(f"/namespaces/{ns.id}/configurations?limit=3" + (f"&cursor={cursor}" if cursor else ""))
        assert response.status == 200, response.body
        pages += 1
        rows = response.data["configurations"]
        seen += [row["id"] for row in rows]
        cursor = response.data["nextCursor"]
        if cursor is None:
            break
        assert len(rows) == 3
    assert seen == [c.id for c in expected]
    assert pages == 3


def test_a_row_names_its_model_and_agents_hiding_the_unreadable(ns):
    configuration = ConfigurationFactory(namespace=ns, values={"agents": {"defaults": {
        "skipBootstrap": True, "model": {"primary": "fake/echo-model"}}}})
    seen = AgentFactory(namespace=ns, configuration=configuration, name="alpha")
    AgentFactory(namespace=ns, configuration=configuration, name="beta")
    api = caller("read:namespace", "read:configuration", namespace=ns)
    response = api.get(f"/namespaces/{ns.id}/configurations")
    assert response.status == 200
    (row,) = response.data["configurations"]
    assert (row["id"], row["model"], row["generation"]) == (configuration.id, "fake/echo-model", 1)
    assert row["agents"] == []
    assert row["hiddenAgents"] == 2
    assert set(row) == {"id", "name", "generation", "model", "agents", "hiddenAgents", "createdAt", "updatedAt"}
    reader = service_principal("reader")
    grant(reader, "read:namespace", "read:configuration", namespace=ns)
    grant(reader, "read:agent", namespace=ns, resource_kind="agent", resource_id=seen.id)
    row = ApiClient(key_for(reader)).get(f"/namespaces/{ns.id}/configurations").data["configurations"][0]
    assert row["agents"] == [{"id": seen.id, "name": "alpha"}]
    assert row["hiddenAgents"] == 1


def test_only_configurations_read_exactly_are_listed_and_pages_stay_full(ns):
    expected = _configurations(ns, 6)
    readable = expected[1::2]
    reader = service_principal("reader")
    grant(reader, "read:namespace", namespace=ns)
    for configuration in readable:
        grant(reader, "read:configuration", namespace=ns, resource_kind="configuration", resource_id=configuration.id)
    api = ApiClient(key_for(reader))
    first = api.get(f"/namespaces/{ns.id}/configurations?limit=2")
    assert [r["id"] for r in first.data["configurations"]] == [c.id for c in readable[:2]]
    second = api.get(f"/namespaces/{ns.id}/configurations?limit=2&cursor={first.data['nextCursor']}")
    assert [r["id"] for r in second.data["configurations"]] == [readable[2].id]
    assert second.data["nextCursor"] is None


def test_without_namespace_read_it_is_refused_and_the_denial_audited(ns):
    ConfigurationFactory(namespace=ns)
    before = AuditEvent.objects.count()
    response = caller("read:configuration", namespace=ns).get(f"/namespaces/{ns.id}/configurations")
    assert response.status == 403
    assert AuditEvent.objects.count() == before + 1


def _cursor(raw: str) -> str:
    return "cursor=" + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize("query", [
    "cursor=not-a-cursor", "limit=0", "limit=101", "cursr=x", "limit=1&limit=2",
    pytest.param(_cursor("2026-13-01T00:00:00+00:00|cfg_x"), id="no-such-date"),
    pytest.param(_cursor("2026-01-01T00:00:00+00:00|cfg\x00x"), id="nul-in-the-id"),
    pytest.param(_cursor("2026-01-01T00:00:00|cfg_x"), id="no-time-zone"),
])
def test_bad_paging_is_a_400(ns, query):
    response = caller(*ADMINISTRATOR_PERMISSIONS).get(f"/namespaces/{ns.id}/configurations?{query}")
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"
