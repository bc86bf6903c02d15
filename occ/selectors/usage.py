"""Usage reads: cost and tokens by Agent, model and day, for what the caller may read.

A Namespace's usage needs ``namespace:read``; each Agent's rows are shown only with ``agent:read``
on that Agent (decided per Agent id, so an Agent deleted since keeps its history for those who
read the whole Namespace). Sums are computed by the database, grouped as asked.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.db.models import Max, Sum

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in, authorize
from occ.models import UsageDay
from occ.selectors.namespaces import get_live_namespace

GROUPS = ("agent", "model", "day")
_COLUMNS = {"agent": ("agent_id",), "model": ("provider", "model"), "day": ("day",)}
MAX_ROWS = 10_000


@dataclass(frozen=True)
class UsageQuery:
    since: date
    until: date  # inclusive
    agent_id: str = ""
    model: str = ""
    group_by: Sequence[str] = GROUPS


@dataclass(frozen=True)
class UsageRow:
    agent_id: str | None
    agent_name: str | None
    provider: str | None
    model: str | None
    day: date | None
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost: Decimal

    def wire(self) -> dict[str, Any]:
        """As the API and both CSV exports name it."""
        return {"day": self.day.isoformat() if self.day else None, "agentId": self.agent_id,
                "agentName": self.agent_name, "provider": self.provider, "model": self.model,
                "inputTokens": self.input_tokens, "outputTokens": self.output_tokens,
                "cachedTokens": self.cached_tokens, "cost": f"{self.cost:f}"}


@dataclass(frozen=True)
class UsageReport:
    rows: list[UsageRow]
    total: UsageRow
    truncated: bool


def usage_report(*, actor: Actor, namespace_id: str, query: UsageQuery) -> UsageReport:
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    rows = UsageDay.objects.filter(namespace_id=namespace.id, day__gte=query.since, day__lte=query.until)
    if query.agent_id:
        authorize(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=query.agent_id)
        rows = rows.filter(agent_id=query.agent_id)
    else:
        readable = allowed_in(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id)
        agent_ids = set(rows.values_list("agent_id", flat=True).distinct())
        rows = rows.filter(agent_id__in=[agent_id for agent_id in agent_ids if readable(agent_id)])
    if query.model:
        rows = rows.filter(model=query.model)
    columns = [column for group in GROUPS if group in query.group_by for column in _COLUMNS[group]]
    sums = {"input_tokens": Sum("input_tokens"), "output_tokens": Sum("output_tokens"),
            "cache_read": Sum("cache_read_tokens"), "cache_write": Sum("cache_write_tokens"), "cost": Sum("cost")}
    order = [("-day" if c == "day" else c) for c in columns] + ["-cost"]
    grouped = list(rows.values(*columns).annotate(**sums, agent_name=Max("agent_name")).order_by(*order)
                   [:MAX_ROWS + 1]) if columns else []
    total = rows.aggregate(**sums)
    return UsageReport(rows=[_row(item, columns) for item in grouped[:MAX_ROWS]],
                       total=_row({**total, "agent_name": None}, []), truncated=len(grouped) > MAX_ROWS)


def _row(item: dict[str, Any], columns: list[str]) -> UsageRow:
    def number(name: str) -> int:
        return int(item.get(name) or 0)

    return UsageRow(
        agent_id=item.get("agent_id") if "agent_id" in columns else None,
        agent_name=item.get("agent_name") if "agent_id" in columns else None,
        provider=item.get("provider") if "provider" in columns else None,
        model=item.get("model") if "model" in columns else None,
        day=item.get("day") if "day" in columns else None,
        input_tokens=number("input_tokens"), output_tokens=number("output_tokens"),
        cached_tokens=number("cache_read") + number("cache_write"),
        cost=Decimal(item.get("cost") or 0))


CSV_COLUMNS = ("day", "agentId", "agentName", "provider", "model", "inputTokens", "outputTokens", "cachedTokens",
               "cost")


def usage_csv(report: UsageReport) -> str:
    """The report's rows as CSV (the API's export and the console's), with the API's column names."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for row in report.rows:
        wire = row.wire()
        # A cell a spreadsheet would run as a formula is quoted with a leading apostrophe (OWASP CSV injection).
        writer.writerow(["'" + cell if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@", "\t", "\r")
                         else cell for cell in (wire[column] for column in CSV_COLUMNS)])
    return buffer.getvalue()
