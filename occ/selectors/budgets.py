"""Budget reads: spend in a budget's current period, and whether an Agent is over a budget."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.db.models import Q, Sum

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in, authorize
from occ.models import Agent, Budget, BudgetPeriod, UsageDay
from occ.selectors.paging import moment_page

PAGE_SIZE = 50


def period_start(period: str, today: date) -> date:
    return today.replace(day=1) if period == BudgetPeriod.MONTH else today


def budget_spend(budget: Budget, today: date) -> Decimal:
    """What the budget's target spent from the start of its current period through ``today``."""
    rows = UsageDay.objects.filter(day__gte=period_start(budget.period, today), day__lte=today)
    rows = rows.filter(agent_id=budget.agent_id) if budget.agent_id else rows.filter(namespace_id=budget.namespace_id)
    return rows.aggregate(total=Sum("cost"))["total"] or Decimal(0)


def budget_percent(spend: Decimal, limit: Decimal) -> int:
    return int(spend * 100 / limit) if limit > 0 else 0


def budget_overridden(budget: Budget, today: date) -> bool:
    return budget.override_period == period_start(budget.period, today)


def budgets_over(agent: Agent, today: date) -> list[Budget]:
    """The budgets covering ``agent`` (its own and its Namespace's) that are at or past 100 % in
    their current period and not overridden for it."""
    covering = Budget.objects.filter(Q(agent_id=agent.id) | Q(namespace_id=agent.namespace_id, agent__isnull=True))
    return [b for b in covering if not budget_overridden(b, today) and budget_spend(b, today) >= b.limit]


@dataclass(frozen=True)
class BudgetView:
    budget: Budget
    agent_name: str | None
    spend: Decimal
    percent: int
    period_start: date
    overridden: bool

    @property
    def level(self) -> int:
        """The highest threshold reached: 0, 50, 80 or 100."""
        return next((t for t in (100, 80, 50) if self.percent >= t), 0)


def budget_views(*, actor: Actor, namespace_id: str, today: date) -> list[BudgetView]:
    """The Namespace's budgets the actor may see: the Namespace's own with ``namespace:read``,
    an Agent's with ``agent:read`` on it."""
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace_id)
    readable = allowed_in(actor, Action.READ, Kind.AGENT, namespace_id=namespace_id)
    budgets = Budget.objects.filter(namespace_id=namespace_id).select_related("agent").order_by("agent_id", "period")
    return [budget_view(budget, today) for budget in budgets if not budget.agent_id or readable(budget.agent_id)]


def budget_view(budget: Budget, today: date) -> BudgetView:
    spend = budget_spend(budget, today)
    return BudgetView(budget=budget, agent_name=budget.agent.name if budget.agent else None, spend=spend,
                      percent=budget_percent(spend, budget.limit), period_start=period_start(budget.period, today),
                      overridden=budget_overridden(budget, today))


def budget_page(*, actor: Actor, namespace_id: str, today: date, after: str = "",
                page_size: int = PAGE_SIZE) -> tuple[list[BudgetView], str | None]:
    """One page of ``budget_views``, oldest first, keyset on ``(created_at, id)``, and the next
    page's cursor (None on the last page)."""
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace_id)
    readable = allowed_in(actor, Action.READ, Kind.AGENT, namespace_id=namespace_id)
    budgets, next_cursor = moment_page(
        Budget.objects.filter(namespace_id=namespace_id).select_related("agent"), field="created_at", after=after,
        readable=lambda _budget_id: True, keep=lambda budget: not budget.agent_id or readable(budget.agent_id),
        page_size=page_size)
    return [budget_view(budget, today) for budget in budgets], next_cursor
