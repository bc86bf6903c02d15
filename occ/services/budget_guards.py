"""What a budget forbids, for the services that start an Agent (start, deploy): an Agent a
budget paused stays stopped while a budget covering it is spent and not overridden."""

from __future__ import annotations

from datetime import UTC, date, datetime

from django.utils import timezone

from occ.errors import Conflict
from occ.models import Agent
from occ.selectors.budgets import budgets_over


def today_utc(now: datetime | None = None) -> date:
    return (now or timezone.now()).astimezone(UTC).date()


def refuse_over_budget(agent: Agent) -> None:
    """Raise 409 BUDGET_EXCEEDED for an Agent a budget holds back."""
    over = budgets_over(agent, today_utc())
    if over:
        raise Conflict(f"The Agent is paused: its {over[0].period} budget of ${over[0].limit.normalize():f} is spent. "
                       "An administrator can raise the budget or override it for this period.",
                       code="BUDGET_EXCEEDED")
