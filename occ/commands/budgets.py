"""Budget commands."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from pydantic import Field

from occ.commands.base import Command


class BudgetSet(Command):
    """A Namespace's budget (``agent_id`` None) or one Agent's, per UTC ``day`` or ``month``, in USD.
    Setting it again for the same target and period replaces the limit and the webhook."""

    agent_id: str | None = None
    period: Annotated[str, Field(pattern=r"^(day|month)$")]
    limit: Annotated[Decimal, Field(strict=False, gt=0, max_digits=20, decimal_places=8,
                                    description="USD, a string or a number.")]
    webhook_url: Annotated[str, Field(max_length=2000, pattern=r"^https?://[^\s]+$")] | None = None
    webhook_secret_id: str | None = None
