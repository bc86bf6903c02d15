"""The Usage page: the chart and table from the collected rows, its fragment, the CSV export,
budget banners, and an administrator's budget form and override."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from occ.models import AuditEvent, Budget, UsageDay
from tests.conftest import ApiClient
from tests.console.conftest import ConsoleClient, current_nav, fragment_root
from tests.factories import AgentFactory, grant, human


def spend(agent, cost: str, *, days_ago: int = 0, model: str = "gpt-5") -> None:
    UsageDay.objects.create(namespace_id=agent.namespace_id, agent_id=agent.id, agent_name=agent.name,
                            day=timezone.now().date() - timedelta(days=days_ago), provider="openai", model=model,
                            input_tokens=1000, output_tokens=200, cache_read_tokens=50, cost=Decimal(cost),
                            collected_at=timezone.now())


def test_the_page_its_fragment_and_the_csv(console, ready_namespace):
    agent = AgentFactory(namespace=ready_namespace, name="Spender")
    spend(agent, "1.25")
    spend(agent, "0.5", model="gpt-5-mini")
    path = f"/console/namespaces/{ready_namespace.id}/usage"
    page = console.get(path)
    assert page.status_code == 200
    html = page.content.decode()
    assert current_nav(html) == "Usage"
    assert "$1.75" in html
    assert html.count('<rect class="bar"') == timezone.now().date().day, "one bar per day of the month so far"
    assert "Spender" in html
    assert "gpt-5-mini" in html
    fragment = console.hx_get(path, {"agent": agent.id})
    assert fragment_root(fragment.content.decode()) == "div#usage-results"
    exported = console.get(f"{path}.csv")
    assert exported["Content-Type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(exported.content.decode())))
    assert sorted(line[4] for line in lines[1:]) == ["gpt-5", "gpt-5-mini"]


def test_a_person_without_the_agent_sees_neither_its_rows_nor_its_export(ready_namespace):
    agent = AgentFactory(namespace=ready_namespace, name="Hidden")
    spend(agent, "3")
    person = human("usage-reader")
    grant(person, "read:namespace", namespace=ready_namespace)
    client = ConsoleClient()
    client.sign_in("usage-reader", "a-long-test-password")
    html = client.get(f"/console/namespaces/{ready_namespace.id}/usage").content.decode()
    assert "Hidden" not in html
    assert "No usage in these days" in html
    assert 'id="budget-form"' not in html, "only administrators set budgets"
    assert len(client.get(f"/console/namespaces/{ready_namespace.id}/usage.csv").content.decode().splitlines()) == 1


def test_an_administrator_sets_a_budget_sees_its_banner_and_overrides_it(console, ready_namespace):
    agent = AgentFactory(namespace=ready_namespace, name="Pricey")
    spend(agent, "4")
    path = f"/console/namespaces/{ready_namespace.id}/usage"
    saved = console.post(f"/console/namespaces/{ready_namespace.id}/budgets",
                         {"agent": agent.id, "period": "day", "limit": "5"})
    assert saved.status_code == 302
    html = console.get(path).content.decode()
    assert "Agent Pricey has spent $4.00 of its $5.00 budget today (80 %)." in html
    budget = Budget.objects.get()
    Budget.objects.filter(id=budget.id).update(limit=Decimal(2))
    html = console.get(path).content.decode()
    assert "paused (budget exceeded)" in html
    assert f"/budgets/{budget.id}/override" in html
    assert console.post(f"/console/namespaces/{ready_namespace.id}/budgets/{budget.id}/override").status_code == 302
    assert AuditEvent.objects.filter(action="openclaw.budgets.override").count() == 1
    assert "Overridden by an administrator" in console.get(path).content.decode()


def test_a_refused_budget_shows_the_form_again_with_the_error(console, ready_namespace):
    response = console.post(f"/console/namespaces/{ready_namespace.id}/budgets", {"period": "day", "limit": "-1"})
    assert response.status_code == 200
    assert 'aria-invalid="true"' in response.content.decode()
    assert not Budget.objects.exists()


def test_an_agent_a_budget_paused_says_so_on_its_page_and_in_the_api(console, ready_namespace, admin_key):
    agent = AgentFactory(namespace=ready_namespace, name="Paused")
    type(agent).objects.filter(id=agent.id).update(stopped_reason="budget_exceeded")
    html = console.get(f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}").content.decode()
    assert 'id="agent-paused-budget"' in html
    assert "paused by OCC: budget exceeded" in html
    wire = ApiClient(admin_key).get(f"/namespaces/{ready_namespace.id}/agents/{agent.id}").data
    assert wire["stoppedReason"] == "budget_exceeded"
