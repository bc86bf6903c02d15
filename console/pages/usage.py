"""What the Usage page shows: cost per day as a server-rendered SVG bar chart (no script), the
cost by Agent and model, and the Namespace's budgets with their banners."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from occ.selectors.budgets import BudgetView
from occ.selectors.usage import UsageRow

CHART_WIDTH, CHART_HEIGHT = 720, 220
PLOT_LEFT, PLOT_TOP, PLOT_BOTTOM = 64, 12, 188  # y of the baseline


@dataclass(frozen=True)
class Bar:
    day: date
    cost: Decimal
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True)
class DayLabel:
    x: float
    label: str


@dataclass(frozen=True)
class CostChart:
    bars: list[Bar]
    ticks: list[Tick]
    days: list[DayLabel]
    total: Decimal
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT
    left: int = PLOT_LEFT
    baseline: int = PLOT_BOTTOM

    @property
    def summary(self) -> str:
        if not self.bars:
            return "No days to show."
        top = max(self.bars, key=lambda bar: bar.cost)
        return (f"Cost per day from {self.bars[0].day} to {self.bars[-1].day}: ${self.total:.2f} in all; "
                f"the most on {top.day}, ${top.cost:.2f}.")


def _nice_ceiling(value: Decimal) -> Decimal:
    """The smallest of 1, 2, 2.5 or 5 times a power of ten at or above ``value`` (an axis top)."""
    if value <= 0:
        return Decimal(1)
    power = Decimal(10) ** (value.adjusted())
    for step in (1, 2, Decimal("2.5"), 5, 10):
        if value <= power * step:
            return power * step
    return power * 10


def cost_chart(rows: list[UsageRow], since: date, until: date) -> CostChart:
    """One bar per day from ``since`` to ``until`` (a day without usage is a bar of zero)."""
    by_day = {row.day: row.cost for row in rows if row.day is not None}
    days = [since + timedelta(days=n) for n in range((until - since).days + 1)]
    top = _nice_ceiling(max(by_day.values(), default=Decimal(0)))
    plot_width, plot_height = CHART_WIDTH - PLOT_LEFT - 8, PLOT_BOTTOM - PLOT_TOP
    slot = plot_width / max(len(days), 1)
    bars = []
    for index, day in enumerate(days):
        cost = by_day.get(day, Decimal(0))
        height = float(cost / top) * plot_height
        bars.append(Bar(day=day, cost=cost, x=round(PLOT_LEFT + index * slot + slot * 0.15, 2),
                        y=round(PLOT_BOTTOM - height, 2), width=round(max(slot * 0.7, 1.0), 2),
                        height=round(height, 2)))
    ticks = [Tick(y=round(PLOT_BOTTOM - plot_height * fraction, 2), label=f"${top * Decimal(fraction):.2f}")
             for fraction in (0, 0.5, 1)]
    every = max(1, len(days) // 6)
    labels = [DayLabel(x=round(PLOT_LEFT + index * slot + slot / 2, 2), label=day.strftime("%b %-d"))
              for index, day in enumerate(days) if index % every == 0]
    return CostChart(bars=bars, ticks=ticks, days=labels, total=sum(by_day.values(), Decimal(0)))


@dataclass(frozen=True)
class Banner:
    level: int  # 50, 80 or 100
    text: str


def budget_banners(views: list[BudgetView]) -> list[Banner]:
    """One banner per budget at 50 % or more of its period, the fullest first."""
    banners = []
    for view in sorted(views, key=lambda v: v.percent, reverse=True):
        if view.level == 0:
            continue
        target = f"Agent {view.agent_name}" if view.agent_name else "This Namespace"
        period = "today" if view.budget.period == "day" else "this month"
        text = (f"{target} has spent ${view.spend:.2f} of its ${view.budget.limit:.2f} budget {period} "
                f"({view.percent} %).")
        if view.level >= 100:
            text += (" Overridden by an administrator until the period ends." if view.overridden else
                     " Its Agents are paused (budget exceeded) until an administrator raises or overrides it.")
        banners.append(Banner(level=view.level, text=text))
    return banners
