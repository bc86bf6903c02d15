"""GET …/usage and the budgets routes: exact-resource authorization, grouping, CSV."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal

import pytest
from django.utils import timezone

from occ.models import AuditEvent, Budget, UsageDay
from tests.agents_support import caller
from tests.conftest import ApiClient
from tests.factories import AgentFactory, NamespaceFactory, grant

DAY1, DAY2 = date(2026, 12, 1), date(2026, 12, 2)


def usage(agent, day: date, model: str, tokens_in: int, cost: str, *, name: str | None = None) -> UsageDay:
    return UsageDay.objects.create(namespace_id=agent.namespace_id, agent_id=agent.id, agent_name=name or agent.name,
                                   day=day, provider="openai", model=model, input_tokens=tokens_in, output_tokens=1,
                                   cache_read_tokens=2, cost=Decimal(cost), collected_at=timezone.now())


@pytest.fixture
def world(db):
    namespace = NamespaceFactory()
    shared, private = AgentFactory(namespace=namespace, name="shared"), AgentFactory(namespace=namespace, name="=evil")
    usage(shared, DAY1, "gpt-5", 100, "0.50")
    usage(shared, DAY2, "gpt-5", 10, "0.25")
    usage(shared, DAY2, "gpt-5-mini", 1, "0.01")
    usage(private, DAY2, "gpt-5", 1000, "2.00")
    usage(AgentFactory(namespace=NamespaceFactory()), DAY2, "gpt-5", 99, "9.00")  # another Namespace
    gone = UsageDay.objects.create(namespace_id=namespace.id, agent_id="agt_deleted", agent_name="deleted-one",
                                   day=DAY1, provider="openai", model="gpt-5", input_tokens=5, cost=Decimal("1"),
                                   collected_at=timezone.now())
    return {"ns": namespace, "shared": shared, "private": private, "gone": gone}


def path(world, query: str = "") -> str:
    return f"/namespaces/{world['ns'].id}/usage?since=2026-12-01&until=2026-12-31{query}"


def test_a_namespace_reader_sees_every_agent_including_deleted_ones_grouped_as_asked(world):
    _, reader = caller("read:namespace", "read:agent", namespace=world["ns"])
    by_agent = reader.get(path(world, "&groupBy=agent"))
    assert by_agent.status == 200, by_agent.body
    costs = {row["agentName"]: row["cost"] for row in by_agent.data["rows"]}
    assert costs == {"=evil": "2.00000000", "shared": "0.76000000", "deleted-one": "1.00000000"}
    assert by_agent.data["total"]["cost"] == "3.76000000"
    by_day = reader.get(path(world, "&groupBy=day")).data["rows"]
    assert [(row["day"], row["inputTokens"], row["cachedTokens"]) for row in by_day] == [
        ("2026-12-02", 1011, 6), ("2026-12-01", 105, 2)]
    one_model = reader.get(path(world, "&groupBy=model&model=gpt-5-mini")).data["rows"]
    assert [(row["model"], row["cost"]) for row in one_model] == [("gpt-5-mini", "0.01000000")]


def test_an_agent_share_shows_only_that_agents_rows(world):
    principal, shared_only = caller("read:namespace", namespace=world["ns"])
    grant(principal, "read:agent", namespace=world["ns"], resource_kind="agent", resource_id=world["shared"].id)
    rows = shared_only.get(path(world, "&groupBy=agent")).data["rows"]
    assert [row["agentName"] for row in rows] == ["shared"]
    refused = shared_only.get(path(world, f"&agent={world['private'].id}"))
    assert refused.status == 403
    assert AuditEvent.objects.filter(kind="authorization_denial").count() == 1


def test_no_namespace_read_no_usage(world):
    _, outsider = caller("read:namespace", "read:agent", namespace=NamespaceFactory())
    assert outsider.get(path(world)).status == 403
    assert ApiClient().get(path(world), key=False).status == 401


def test_the_csv_export_has_one_line_per_agent_model_and_day_and_defuses_formulas(world):
    _, reader = caller("read:namespace", "read:agent", namespace=world["ns"])
    response = reader.client.get(path(world, "&format=csv"), headers={"x-api-key": reader.key})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(response.content.decode())))
    assert lines[0] == ["day", "agentId", "agentName", "provider", "model", "inputTokens", "outputTokens",
                        "cachedTokens", "cost"]
    assert len(lines) == 1 + 5
    assert ["2026-12-02", world["private"].id, "'=evil", "openai", "gpt-5", "1000", "1", "2", "2.00000000"] in lines


@pytest.mark.parametrize(("query", "message"), [
    pytest.param("&groupBy=person", "groupBy", id="unknown-group"),
    pytest.param("&until=2026-11-01", "since", id="backwards"),
    pytest.param("&colour=red", "colour", id="unknown-query"),
])
def test_bad_queries_are_refused(world, query, message):
    _, reader = caller("read:namespace", "read:agent", namespace=world["ns"])
    response = reader.get(path(world, query))
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"


def test_only_an_administrator_sets_a_budget_and_every_change_is_audited(world, admin_key):
    admin = ApiClient(admin_key)
    ns = world["ns"].id
    _, reader = caller("read:namespace", "read:agent", namespace=world["ns"])
    refused = reader.request("PUT", f"/namespaces/{ns}/budgets", {"period": "month", "limit": "5"})
    assert refused.status == 403
    assert not Budget.objects.exists()
    created = admin.request("PUT", f"/namespaces/{ns}/budgets",
                            {"period": "day", "limit": "10.5", "agentId": world["shared"].id})
    assert created.status == 200, created.body
    assert (created.data["limit"], created.data["agentName"]) == ("10.50000000", "shared")
    assert AuditEvent.objects.filter(action="openclaw.budgets.set").count() == 1
    listed = reader.get(f"/namespaces/{ns}/budgets").data
    assert [b["id"] for b in listed["budgets"]] == [created.data["id"]]
    assert admin.post(f"/namespaces/{ns}/budgets/{created.data['id']}/override").data["overridden"] is True
    assert admin.delete(f"/namespaces/{ns}/budgets/{created.data['id']}").status == 204
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="openclaw.budgets.").order_by(
        "occurred_at")] == ["openclaw.budgets.set", "openclaw.budgets.override", "openclaw.budgets.delete"]


def test_a_webhook_url_to_a_private_address_is_a_400_at_its_place(world, admin_key):
    refused = ApiClient(admin_key).request("PUT", f"/namespaces/{world['ns'].id}/budgets", {
        "period": "month", "limit": "5", "webhookUrl": "http://169.254.169.254/latest/meta-data/"})
    assert refused.status == 400
    assert refused.error_code == "INVALID_REQUEST"
    assert [d["path"] for d in refused.body["error"]["details"]] == ["/webhookUrl"]
    assert "private, loopback, link-local or reserved" in refused.body["error"]["message"]
    assert not Budget.objects.exists()
