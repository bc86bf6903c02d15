"""The Usage page: the chart and table from the collected rows, its fragment, the CSV export,
budget banners, and an administrator's budget form and override."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from occ.commands.budgets import BudgetSet
from occ.ids import IdPrefix, new_id
from occ.models import AuditEvent, Budget, UsageDay
from occ.services.budgets import budget_set
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


def test_a_webhook_url_to_a_private_address_is_refused_on_its_field(console, ready_namespace):
    response = console.post(f"/console/namespaces/{ready_namespace.id}/budgets",
                            {"period": "day", "limit": "5", "webhook_url": "http://10.0.0.7/hook"})
    assert response.status_code == 200
    html = response.content.decode()
    field = re.search(r'<input[^>]*name="webhook_url"[^>]*>', html).group(0)
    assert 'aria-invalid="true"' in field
    error = re.search(r'id="budget_webhook_url-error"[^>]*>(.*?)</', html, re.S)
    assert error
    assert "This webhook URL is refused" in error.group(1)
    assert not Budget.objects.exists()


def test_an_agent_a_budget_paused_says_so_on_its_page_and_in_the_api(console, ready_namespace, admin_key):
    agent = AgentFactory(namespace=ready_namespace, name="Paused")
    type(agent).objects.filter(id=agent.id).update(stopped_reason="budget_exceeded")
    html = console.get(f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}").content.decode()
    assert 'id="agent-paused-budget"' in html
    assert "paused by OCC: budget exceeded" in html
    wire = ApiClient(admin_key).get(f"/namespaces/{ready_namespace.id}/agents/{agent.id}").data
    assert wire["stoppedReason"] == "budget_exceeded"


def budgets_url(namespace) -> str:
    return f"/console/namespaces/{namespace.id}/budgets/delete"


def test_an_administrator_removes_a_budget_from_its_card_audited(console, console_actor, ready_namespace):
    agent = AgentFactory(namespace=ready_namespace, name="Pricey")
    spend(agent, "4")
    kept = budget_set(actor=console_actor, namespace_id=ready_namespace.id,
                      command=BudgetSet(period="month", limit=Decimal("100")))
    removed = budget_set(actor=console_actor, namespace_id=ready_namespace.id,
                         command=BudgetSet(agent_id=agent.id, period="day", limit=Decimal("5")))
    page = console.get(f"/console/namespaces/{ready_namespace.id}/usage").content.decode()
    assert page.count(f'action="{budgets_url(ready_namespace)}"') == 2, "a Remove form on each budget's row"
    assert f'<input type="hidden" name="budget" value="{removed.id}">' in page
    assert "Agent Pricey has spent $4.00 of its $5.00 budget today (80 %)." in page

    response = console.hx_post(budgets_url(ready_namespace), {"budget": removed.id})

    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "section#budgets"
    assert f'id="budget-{kept.id}"' in html
    assert f'id="budget-{removed.id}"' not in html
    assert '<div id="budget-banners" hx-swap-oob="true">' in html, "the budget-banners follow out of band"
    assert "Agent Pricey has spent" not in html
    [toast] = json.loads(response["HX-Trigger"])["occ:toast"]["messages"]
    assert toast["text"].startswith("Budget removed.")
    assert list(Budget.objects.values_list("id", flat=True)) == [kept.id]
    event = AuditEvent.objects.get(action="openclaw.budgets.delete")
    assert (event.actor_id, event.outcome, event.resource_id) == (console_actor.id, "succeeded", agent.id)
    assert event.details["budgetId"] == removed.id

    plain = console.post(budgets_url(ready_namespace), {"budget": kept.id})
    assert plain.status_code == 302, "without htmx: back to the page"
    assert not Budget.objects.exists()


def test_removing_a_budget_is_refused_to_a_non_administrator_and_to_a_made_up_id(console, console_actor,
                                                                                ready_namespace):
    budget = budget_set(actor=console_actor, namespace_id=ready_namespace.id,
                        command=BudgetSet(period="month", limit=Decimal("10")))
    person = human("budget-reader")
    grant(person, "read:namespace", namespace=ready_namespace)
    reader = ConsoleClient()
    reader.sign_in("budget-reader", "a-long-test-password")
    page = reader.get(f"/console/namespaces/{ready_namespace.id}/usage").content.decode()
    assert f'id="budget-{budget.id}"' in page
    assert budgets_url(ready_namespace) not in page, "read only"

    refused = reader.hx_post(budgets_url(ready_namespace), {"budget": budget.id})

    assert refused.status_code == 403
    assert Budget.objects.filter(id=budget.id).exists()
    assert not AuditEvent.objects.filter(action="openclaw.budgets.delete").exists()
    denial = AuditEvent.objects.get(outcome="denied")
    assert denial.actor_id == person.id
    for made_up in ("bud_nope", "", "agt_00000000000000000000000000"):
        assert console.hx_post(budgets_url(ready_namespace), {"budget": made_up}).status_code == 400
    assert console.hx_post(budgets_url(ready_namespace), {"budget": new_id(IdPrefix.BUDGET)}).status_code == 404
    assert Budget.objects.filter(id=budget.id).exists()
