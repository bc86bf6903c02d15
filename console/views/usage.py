"""The Usage page of a Namespace: cost per day (an SVG chart drawn here, no script), cost and
tokens by Agent and model, a CSV export, and the budgets with their banners; administrators set
and override budgets here. Everything shown is what ``occ.selectors.usage`` lets the viewer read."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.common import ConsoleRequest, console_view, current, render_page, wants_fragment
from console.forms.usage import BudgetDeleteForm, BudgetForm, UsageFilterForm
from console.pages.usage import budget_banners, cost_chart
from occ.errors import Conflict, InvalidRequest
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.selectors.agents import agent_summaries
from occ.selectors.budgets import budget_views
from occ.selectors.secrets import secret_list
from occ.selectors.usage import UsageQuery, usage_csv, usage_report
from occ.services.budgets import budget_delete, budget_override, budget_set

PAGE = "console/usage/page.html"


def _agents(request: ConsoleRequest) -> list[tuple[str, str]]:
    console = current(request)
    return [(a.id, a.name) for a in agent_summaries(actor=console.actor, namespace_id=console.namespace_id)]


def _context(request: ConsoleRequest, *, budget_form: BudgetForm | None = None) -> dict[str, Any]:
    console = current(request)
    today = timezone.now().date()
    agents = _agents(request)
    form = UsageFilterForm(request.GET, agents=agents, today=today)
    context: dict[str, Any] = {"console": console, "nav": "usage", "namespace_id": console.namespace_id,
                               "form": form, "agents": agents}
    if form.is_valid():
        data = form.cleaned_data
        base = {"since": data["since"], "until": data["until"], "agent_id": data.get("agent") or ""}
        by_day = usage_report(actor=console.actor, namespace_id=console.namespace_id,
                              query=UsageQuery(**base, group_by=["day"]))
        by_agent = usage_report(actor=console.actor, namespace_id=console.namespace_id,
                                query=UsageQuery(**base, group_by=["agent", "model"]))
        context.update(chart=cost_chart(by_day.rows, data["since"], data["until"]), rows=by_agent.rows,
                       total=by_agent.total, truncated=by_agent.truncated, export=request.GET.urlencode())
    context.update(_budgets_context(request, agents, budget_form=budget_form))
    return context


def _budgets_context(request: ConsoleRequest, agents: list[tuple[str, str]], *,
                     budget_form: BudgetForm | None = None) -> dict[str, Any]:
    """The budgets card and the banners: each budget with its Remove form, and an
    administrator's budget form."""
    console = current(request)
    views = budget_views(actor=console.actor, namespace_id=console.namespace_id, today=timezone.now().date())
    administers = allowed(console.actor, Action.ADMINISTER, Kind.INSTALLATION)
    if administers and budget_form is None:
        secrets = [(s.id, s.name) for s in secret_list(actor=console.actor, namespace_id=console.namespace_id)]
        budget_form = BudgetForm(agents=agents, secrets=secrets, initial={"period": "month"})
    return {"console": console, "namespace_id": console.namespace_id, "budgets": views,
            "budget_rows": [(view, BudgetDeleteForm(initial={"budget": view.budget.id})) for view in views],
            "banners": budget_banners(views), "administers": administers, "budget_form": budget_form}


@require_GET
@console_view
def usage(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    return render_page(request, PAGE, _context(request), partial="usage-results")


@require_GET
@console_view
def usage_export(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """Every Agent, model and day of the filtered range as CSV (the API's columns)."""
    console = current(request)
    form = UsageFilterForm(request.GET, agents=_agents(request), today=timezone.now().date())
    if not form.is_valid():
        return redirect("console:usage", namespace_id)
    data = form.cleaned_data
    report = usage_report(actor=console.actor, namespace_id=console.namespace_id, query=UsageQuery(
        since=data["since"], until=data["until"], agent_id=data.get("agent") or ""))
    response = HttpResponse(usage_csv(report), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="occ-usage-{data["since"]}-{data["until"]}.csv"'
    return response


@require_http_methods(["POST"])
@console_view
def budget_save(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    console = current(request)
    secrets = [(s.id, s.name) for s in secret_list(actor=console.actor, namespace_id=console.namespace_id)]
    form = BudgetForm(request.POST, agents=_agents(request), secrets=secrets)
    if form.is_valid():
        try:
            budget_set(actor=console.actor, namespace_id=namespace_id, command=form.command())
        except (InvalidRequest, Conflict) as exc:
            form.refuse(exc, type(form.command()))
        else:
            messages.success(request, "Budget saved.")
            return redirect("console:usage", namespace_id)
    return render(request, PAGE, _context(request, budget_form=form))


@require_POST
@console_view
def budget_override_view(request: ConsoleRequest, namespace_id: str, budget_id: str) -> HttpResponse:
    """An administrator's explicit, audited override until the budget's period ends."""
    budget_override(actor=current(request).actor, namespace_id=namespace_id, budget_id=budget_id)
    messages.success(request, "Budget overridden until its period ends; its paused Agents are starting.")
    return redirect("console:usage", namespace_id)


@require_POST
@console_view
def budget_delete_view(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """Remove a budget: the service the API's DELETE uses (administrators; audited with the
    removal). htmx swaps the budgets card and, out of band, the banners."""
    console = current(request)
    form = BudgetDeleteForm(request.POST)
    if not form.is_valid():
        raise InvalidRequest("Pick a budget of the list to remove, then try again.")
    budget_delete(actor=console.actor, namespace_id=namespace_id, budget_id=form.cleaned_data["budget"])
    messages.success(request, "Budget removed. Any Agent only it paused starts again.")
    if not wants_fragment(request):
        return redirect("console:usage", namespace_id)
    return render(request, f"{PAGE}#budgets", {**_budgets_context(request, _agents(request)), "banners_oob": True})


urlpatterns = [
    path("namespaces/<str:namespace_id>/usage", usage, name="usage"),
    path("namespaces/<str:namespace_id>/usage.csv", usage_export, name="usage-export"),
    path("namespaces/<str:namespace_id>/budgets", budget_save, name="budget-save"),
    path("namespaces/<str:namespace_id>/budgets/delete", budget_delete_view, name="budget-delete"),
    path("namespaces/<str:namespace_id>/budgets/<str:budget_id>/override", budget_override_view,
         name="budget-override"),
]
