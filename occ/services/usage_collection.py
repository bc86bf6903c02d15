"""One collection pass: every running gateway's usage into ``UsageDay`` rows (issue 29).

The pass reads its targets (Agents that should run and serve a revision), then asks each
gateway for today and yesterday (UTC) outside any database transaction, a few gateways at once;
each answer is written in one short transaction of its own. A gateway that is down or slow
costs at most ``OCC_USAGE_GATEWAY_TIMEOUT_SECONDS`` of one thread and is counted as missed; the
pass goes on. Yesterday is asked again so the day's last minutes land after midnight.

Idempotent: the gateway recomputes a day's totals from its transcripts at every call, so each
row holds the day's figure and a re-collection replaces it instead of adding to it. A figure
never goes down (``max`` of what is stored and what is reported): a gateway that restarted
with less history, or a pass that raced an older one, never lowers a finished day.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from occ.drivers.compute import ComputeDriver, get_compute_driver
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE, ComputeError, RevisionRef, SecretReference
from occ.drivers.compute.gateway_rpc import READ
from occ.drivers.compute.gateway_usage import METHOD, ModelDay, UsageShapeError, model_days, usage_params
from occ.models import Agent, AgentStatus, DesiredRuntimeState, Secret, UsageDay
from occ.models.usage import COST_PLACES
from occ.services.budgets import budgets_enforce

logger = logging.getLogger(__name__)
_QUANTUM = Decimal(1).scaleb(-COST_PLACES)
_SUMMED = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost")


@dataclass(frozen=True)
class UsageTarget:
    agent_id: str
    namespace_id: str
    name: str
    revision: RevisionRef
    password: SecretReference | None


@dataclass(frozen=True)
class CollectionReport:
    gateways: int
    collected: int
    missed: int
    rows: int
    seconds: float


def usage_targets() -> list[UsageTarget]:
    """The Agents whose gateway should be serving: active, wanted running, with an active revision."""
    agents = list(Agent.objects.filter(status=AgentStatus.ACTIVE, desired_runtime_state=DesiredRuntimeState.RUNNING,
                                       active_revision__isnull=False)
                  .select_related("active_revision").only("id", "namespace_id", "name", "active_revision")
                  .order_by("id"))
    passwords = {s.owner_agent_id: SecretReference(secret_id=s.id, driver_id=s.driver_id, backend_name=s.backend_name)
                 for s in Secret.objects.filter(purpose=GATEWAY_PASSWORD_PURPOSE,
                                                owner_agent_id__in=[a.id for a in agents])}
    targets = []
    for agent in agents:
        revision = agent.active_revision
        assert revision is not None
        targets.append(UsageTarget(
            agent_id=agent.id, namespace_id=agent.namespace_id, name=agent.name, password=passwords.get(agent.id),
            revision=RevisionRef(id=revision.id, namespace_id=revision.namespace_id, agent_id=agent.id,
                                 number=revision.number, spec=revision.spec)))
    return targets


def gateway_usage(driver: ComputeDriver, target: UsageTarget, days: Iterable[date], *,
                  timeout: float) -> list[ModelDay]:
    """Each day's per-model usage from the target's gateway; ``timeout`` bounds all of it.
    Holds no transaction: it runs before the write and in its own thread."""
    deadline = time.monotonic() + timeout
    found: list[ModelDay] = []
    for day in days:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ComputeError("GATEWAY_RPC_TIMEOUT", retryable=True)
        payload = driver.operator_call(target.revision, gateway_password=target.password, method=METHOD,
                                       params=usage_params(day), scopes=[READ], timeout=left)
        found.extend(model_days(day, payload))
    return found


def usage_record(*, target: UsageTarget, days: Iterable[date], found: list[ModelDay], at: datetime) -> int:
    """Write one gateway's answer in one transaction: each (day, provider, model) row becomes
    the larger of what it held and what the gateway says now. Returns the rows written."""
    days = list(days)
    with transaction.atomic():
        existing = {(row.day, row.provider, row.model): row for row in UsageDay.objects.select_for_update()
                    .filter(agent_id=target.agent_id, day__in=days)}
        changed, created = [], []
        for item in found:
            values = {"input_tokens": item.input_tokens, "output_tokens": item.output_tokens,
                      "cache_read_tokens": item.cache_read_tokens, "cache_write_tokens": item.cache_write_tokens,
                      "cost": item.cost.quantize(_QUANTUM)}
            row = existing.get((item.day, item.provider, item.model))
            if row is None:
                created.append(UsageDay(namespace_id=target.namespace_id, agent_id=target.agent_id,
                                        agent_name=target.name, day=item.day, provider=item.provider,
                                        model=item.model, collected_at=at, **values))
                continue
            for name, value in values.items():
                setattr(row, name, max(getattr(row, name), value))
            row.agent_name, row.collected_at = target.name, at
            changed.append(row)
        UsageDay.objects.bulk_create(created, update_conflicts=True,
                                     unique_fields=["agent_id", "day", "provider", "model"],
                                     update_fields=[*_SUMMED, "agent_name", "collected_at"])
        UsageDay.objects.bulk_update(changed, [*_SUMMED, "agent_name", "collected_at"])
    return len(created) + len(changed)


def collection_days(now: datetime) -> list[date]:
    today = now.astimezone(UTC).date()
    return [today - timedelta(days=1), today]


def usage_collect(*, driver: ComputeDriver | None = None, now: datetime | None = None) -> CollectionReport:
    """One pass over every running gateway (see the module docstring); then the budgets."""
    started = time.monotonic()
    driver = driver or get_compute_driver()
    now = now or timezone.now()
    days = collection_days(now)
    targets = usage_targets()
    timeout = float(settings.OCC_USAGE_GATEWAY_TIMEOUT_SECONDS)
    collected = missed = rows = 0

    def ask(target: UsageTarget) -> list[ModelDay] | None:
        try:
            return gateway_usage(driver, target, days, timeout=timeout)
        except (ComputeError, UsageShapeError) as exc:
            logger.warning("usage collection: the gateway of %s did not answer (%s)", target.agent_id,
                           getattr(exc, "code", "GATEWAY_USAGE_SHAPE"))
            return None
        finally:
            connection.close()  # a driver that read a Secret from the database opened one in this thread

    with ThreadPoolExecutor(max_workers=max(1, int(settings.OCC_USAGE_CONCURRENCY)),
                            thread_name_prefix="usage") as pool:
        for target, found in zip(targets, pool.map(ask, targets), strict=True):
            if found is None:
                missed += 1
                continue
            rows += usage_record(target=target, days=days, found=found, at=now)
            collected += 1
    budgets_enforce(now=now)
    return CollectionReport(gateways=len(targets), collected=collected, missed=missed, rows=rows,
                            seconds=time.monotonic() - started)
