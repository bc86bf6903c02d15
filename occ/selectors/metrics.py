"""What the fleet looks like right now, for ``/metrics``: read from the database at scrape time,
so every web replica answers the same figures whichever worker did the work.

Each figure is one aggregate query with a bounded result: a few jobs by states, two Agent states,
a fixed set of duration buckets. No per-Agent or per-person values; usage and cost are per
Namespace (issue 29), labelled by its name: as many series as live Namespaces, which
administrators create, never one per Agent, model or day.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, DurationField, ExpressionWrapper, F, Min, Q, Sum
from django.utils import timezone

from occ.models import Agent, ControllerWork, Namespace, UsageDay
from occ.models.work import TERMINAL_STATES, WorkJob, WorkState

# Seconds from a deploy's acceptance (its revision work row) to its revision active.
DEPLOY_BUCKETS = (5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


@dataclass(frozen=True)
class FleetFigures:
    work: dict[tuple[str, str], int]  # (job, state) → rows
    oldest_pending_seconds: dict[str, float]  # job → age of its oldest queued or claimed row
    lease_expired: dict[str, int]  # job → rows whose last attempt lost its lease (a worker died or stalled)
    agents: dict[tuple[str, str], int]  # (status, desired runtime state) → Agents
    deploy_buckets: tuple[int, ...]  # succeeded revision work at or under each DEPLOY_BUCKETS bound
    deploys: int  # every succeeded revision work row
    deploy_seconds: float  # their summed duration


def fleet_figures() -> FleetFigures:
    now = timezone.now()
    work = {(row["job"], row["state"]): row["rows"]
            for row in ControllerWork.objects.values("job", "state").annotate(rows=Count("pk")).order_by()}
    pending = (ControllerWork.objects.exclude(state__in=TERMINAL_STATES).values("job")
               .annotate(oldest=Min("created_at")).order_by())
    oldest = {row["job"]: max((now - row["oldest"]).total_seconds(), 0.0) for row in pending}
    lease_expired = {row["job"]: row["rows"] for row in ControllerWork.objects.filter(last_attempt_code="LEASE_EXPIRED")
                     .values("job").annotate(rows=Count("pk")).order_by()}
    agents = {(row["status"], row["desired_runtime_state"]): row["rows"]
              for row in Agent.objects.values("status", "desired_runtime_state").annotate(rows=Count("pk")).order_by()}
    took = ExpressionWrapper(F("completed_at") - F("created_at"), output_field=DurationField())
    deploys = (ControllerWork.objects.filter(job=WorkJob.REVISION, state=WorkState.SUCCEEDED,
                                             completed_at__isnull=False)
               .annotate(took=took)
               .aggregate(total=Count("pk"), seconds=Sum("took"),
                          **{f"le{index}": Count("pk", filter=Q(took__lte=timedelta(seconds=bound)))
                             for index, bound in enumerate(DEPLOY_BUCKETS)}))
    return FleetFigures(work=work, oldest_pending_seconds=oldest, lease_expired=lease_expired, agents=agents,
                        deploy_buckets=tuple(deploys[f"le{index}"] for index in range(len(DEPLOY_BUCKETS))),
                        deploys=deploys["total"],
                        deploy_seconds=deploys["seconds"].total_seconds() if deploys["seconds"] else 0.0)


@dataclass(frozen=True)
class NamespaceUsage:
    namespace: str  # its name
    cost_today: float
    cost_month: float
    input_month: int
    output_month: int
    cached_month: int


def usage_figures() -> list[NamespaceUsage]:
    """Each live Namespace's cost today and this month (UTC) and its tokens this month: one
    aggregate query over the month's usage rows, one for the names."""
    today = timezone.now().date()
    rows = (UsageDay.objects.filter(day__gte=today.replace(day=1), day__lte=today).values("namespace_id")
            .annotate(today=Sum("cost", filter=Q(day=today)), month=Sum("cost"), input=Sum("input_tokens"),
                      output=Sum("output_tokens"), cached=Sum(F("cache_read_tokens") + F("cache_write_tokens")))
            .order_by())
    names = dict(Namespace.objects.live().values_list("id", "name"))
    return sorted((NamespaceUsage(namespace=names[row["namespace_id"]], cost_today=float(row["today"] or 0),
                                  cost_month=float(row["month"] or 0), input_month=row["input"] or 0,
                                  output_month=row["output"] or 0, cached_month=row["cached"] or 0)
                   for row in rows if row["namespace_id"] in names), key=lambda usage: usage.namespace)
