"""Usage and budgets: cost and tokens by Agent, model and day (JSON or CSV), and a Namespace's
budgets (administrators set, remove and override them)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any, Literal

from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import no_content, respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.budgets import BudgetSet
from occ.errors import InvalidRequest
from occ.selectors.budgets import BudgetView, budget_page, budget_views
from occ.selectors.usage import GROUPS, UsageQuery, UsageRow, usage_csv, usage_report
from occ.services.budgets import budget_delete, budget_override, budget_set

router = Router(tags=["usage"])

CSV = "text/csv; charset=utf-8"
MAX_DAYS = 400
QUERY_NAMES = frozenset({"since", "until", "agent", "model", "groupBy", "format"})


class UsageRowOut(ResponseSchema):
    day: str | None
    agentId: str | None
    agentName: str | None
    provider: str | None
    model: str | None
    inputTokens: int
    outputTokens: int
    cachedTokens: int = Field(description="Tokens read from and written to the model's prompt cache.")
    cost: str = Field(description="USD, as the runtime computes it from the Configuration's model prices.")


class UsageOut(ResponseSchema):
    since: str
    until: str
    groupBy: list[str]
    rows: list[UsageRowOut]
    total: UsageRowOut
    truncated: bool


class BudgetOut(ResponseSchema):
    id: str
    agentId: str | None
    agentName: str | None
    period: str
    limit: str
    spend: str
    percent: int
    periodStart: str
    overridden: bool
    webhookUrl: str | None
    webhookSecretId: str | None


def usage_row_wire(row: UsageRow) -> dict[str, Any]:
    return row.wire()


def budget_wire(view: BudgetView) -> dict[str, Any]:
    budget = view.budget
    return {"id": budget.id, "agentId": budget.agent_id, "agentName": view.agent_name, "period": budget.period,
            "limit": f"{budget.limit:f}", "spend": f"{view.spend:f}", "percent": view.percent,
            "periodStart": view.period_start.isoformat(), "overridden": view.overridden,
            "webhookUrl": budget.webhook_url or None, "webhookSecretId": budget.webhook_secret_id}


def usage_query(since: date | None, until: date | None, agent: str, model: str, group_by: str) -> UsageQuery:
    until = until or timezone.now().date()
    since = since or until.replace(day=1)
    if since > until:
        raise InvalidRequest("since must not be later than until.")
    if until - since > timedelta(days=MAX_DAYS):
        raise InvalidRequest(f"Ask for at most {MAX_DAYS} days at a time.")
    groups = [g.strip() for g in group_by.split(",") if g.strip()]
    if not groups or any(g not in GROUPS for g in groups):
        raise InvalidRequest("groupBy is a comma-separated list of agent, model and day.")
    return UsageQuery(since=since, until=until, agent_id=agent.strip(), model=model.strip(), group_by=groups)


_SINCE = Query(None, description="First UTC day (default: the first of this month).")
_UNTIL = Query(None, description="Last UTC day, inclusive (default: today).")
_TEXT = {"max_length": 200, "pattern": r"^[^\x00-\x1f\x7f]*$"}


@router.get("/namespaces/{namespace_id}/usage", response={200: envelope_of(UsageOut, "UsageEnvelope")},
            openapi_extra={"responses": {200: {"description": "The usage, or its CSV", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/UsageEnvelope"}},
                "text/csv": {"schema": {"type": "string"}}}}}})
def get_usage(
    request: ApiRequest, namespace_id: str,
    since: date | None = _SINCE,
    until: date | None = _UNTIL,
    agent: str = Query("", description="One Agent's id (needs agent:read on it).", **_TEXT),
    model: str = Query("", description="One model's name.", **_TEXT),
    groupBy: str = Query("agent,model,day", description="Any of agent, model, day, comma-separated.", **_TEXT),
    format: Literal["json", "csv"] = Query("json"),
) -> HttpResponse | JsonResponse:
    """Cost and tokens of the Namespace's Agents the caller may read (``namespace:read`` and
    ``agent:read`` on each), summed by the groups asked, newest day first."""
    require_known_query(request, QUERY_NAMES)
    query = usage_query(since, until, agent, model, groupBy)
    report = usage_report(actor=request.auth, namespace_id=namespace_id, query=query)
    if format == "csv":
        response = HttpResponse(usage_csv(report), content_type=CSV)
        response["Content-Disposition"] = f'attachment; filename="occ-usage-{query.since}-{query.until}.csv"'
        return response
    return respond({"since": query.since.isoformat(), "until": query.until.isoformat(),
                    "groupBy": [g for g in GROUPS if g in query.group_by],
                    "rows": [usage_row_wire(row) for row in report.rows], "total": usage_row_wire(report.total),
                    "truncated": report.truncated})


class BudgetPageOut(ResponseSchema):
    budgets: list[BudgetOut]
    nextCursor: str | None


@router.get("/namespaces/{namespace_id}/budgets", response={200: envelope_of(BudgetPageOut, "BudgetPageEnvelope")})
def list_budgets(request: ApiRequest, namespace_id: str,
                 cursor: str = Query("", max_length=200, description="A nextCursor from the page before."),
                 limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The Namespace's budgets the caller may read, with this period's spend, oldest first. Pass
    ``nextCursor`` as ``cursor`` for the next page; it is null on the last."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    views, next_cursor = budget_page(actor=request.auth, namespace_id=namespace_id, today=timezone.now().date(),
                                     after=cursor, page_size=limit)
    return respond({"budgets": [budget_wire(view) for view in views], "nextCursor": next_cursor})


def _one(request: ApiRequest, namespace_id: str, budget_id: str) -> dict[str, Any]:
    views = budget_views(actor=request.auth, namespace_id=namespace_id, today=timezone.now().date())
    return next(budget_wire(view) for view in views if view.budget.id == budget_id)


@router.put("/namespaces/{namespace_id}/budgets", response={200: envelope_of(BudgetOut, "BudgetEnvelope")})
def put_budget(request: ApiRequest, namespace_id: str, payload: BudgetSet) -> JsonResponse:
    """Set the budget of the Namespace (no agentId) or of one Agent for a period (administrators).
    Raising it starts the Agents it paused once no budget holds them back."""
    budget = budget_set(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(_one(request, namespace_id, budget.id))


@router.post("/namespaces/{namespace_id}/budgets/{budget_id}/override",
             response={200: envelope_of(BudgetOut, "BudgetEnvelope")})
def override_budget(request: ApiRequest, namespace_id: str, budget_id: str) -> JsonResponse:
    """Let the budget's Agents run past 100 % until its period ends, and start those it paused
    (administrators; audited)."""
    budget = budget_override(actor=request.auth, namespace_id=namespace_id, budget_id=budget_id)
    return respond(_one(request, namespace_id, budget.id))


@router.delete("/namespaces/{namespace_id}/budgets/{budget_id}", response={204: None})
def delete_budget(request: ApiRequest, namespace_id: str, budget_id: str) -> HttpResponse:
    budget_delete(actor=request.auth, namespace_id=namespace_id, budget_id=budget_id)
    return no_content()
