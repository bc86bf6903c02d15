#!/usr/bin/env python
"""Provisioning rate: provisioned Agents per second end to end ÷ writing the same rows through the ORM.

Two arms, interleaved round by round (the order alternates):

- end-to-end: two real ``celery worker`` processes (prefork, concurrency 1 each, like
  production's separate worker processes) and ``celery beat``, the Redis broker, PostgreSQL
  and the ``fake`` ComputeDriver. This process admits N provisionings through the service
  ``provision_admit`` (in-process, no HTTP) as fast as it can. The time runs from the start of
  the first admission to the moment the last provisioning became ``succeeded`` (handoff: its
  first revision admitted), taken from that row's ``updated_at`` once one COUNT query, polled
  every 20 ms, sees all N succeeded. The revision work each handoff queues runs on the same
  two workers meanwhile, as it would in production; it is drained, untimed, before the next arm.
- baseline: the rows one provisioning wrote, counted per table from the end-to-end run
  (Configuration, SecretBinding, Agent, Principal, AccessBinding, AgentRevision,
  ControllerWork, AgentProvisioningWork, AuditEvent, ...), copied with fresh ids from one
  provisioned Agent and written through the ORM (``objects.create``, ``bulk_create`` for a
  table with several rows), one transaction per Agent, in a tight loop in this process.
  The copies are built before the clock starts. The run checks that the baseline wrote
  exactly the per-Agent row counts of the end-to-end run.

Target: (end-to-end Agents/s) ÷ (baseline Agents/s) >= 0.5, pooled over the rounds.

``--profile`` runs the three stages of the end-to-end arm (admission, provisioning job split
by step, revision work) one after another in this process, without Celery, and prints their
time, SQL statements and commits per Agent (docs/performance.md, "Provisioning").

``--bound`` measures, after the same warm-up, the CPU (this process and its PostgreSQL
backend) of what every provisioning must run however it is scheduled: the admission and the
services the issue names, alone, and then each Agent's revision work, interleaved with the
baseline. From those it prints the ceiling of the end-to-end ratio on this machine's CPUs
(docs/performance.md, "Provisioning": the Ceiling column).

Run: ``make bench-provisioning`` or ``.venv/bin/python bench/provisioning_rate.py`` (``--help``).
``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/occ_bench_prov``) must name a
database containing ``bench``: it is dropped and recreated. ``--redis-url`` names this
benchmark's own Redis database number (flushed before and after).

One module of ~1,100 lines: a benchmark script that runs on its own (``python bench/...``); its
arms, its process supervision and its report are read together when a figure is questioned.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the project root first
    _root = str(Path(__file__).resolve().parent.parent)
    if _root not in sys.path:
        sys.path.insert(0, _root)

import argparse
import contextlib
import os
import re
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bench.verdicts import Verdict, print_verdicts
from bench.worker_support import (
    BenchError,
    ManagedProcess,
    World,
    bench_database_url,
    bench_main,
    configure_django,
    flush_redis_db,
    loadavg,
    machine_facts,
    print_closing,
    print_facts,
    process_env,
    ratio,
    recreate_database,
    redis_db_number,
    seed_world,
    start_beat,
    start_worker,
    wait_until,
)
from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.configurations import ConfigurationCreate
from occ.commands.provisioning import ProvisionCommand
from occ.commands.secrets import SecretCreate

DEFAULT_DATABASE = "occ_bench_prov"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/10"
TARGET = 0.5
# End to end ÷ the lasting ceiling measured in the same run (issue 13).
CEILING_TARGET = 0.7
WORKERS = 2
WARMUP_AGENTS = 4
POLL_SECONDS = 0.02
ARM_TIMEOUT_SECONDS = 180.0
DRAIN_TIMEOUT_SECONDS = 120.0
VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}
TOOL_ENV = "BENCH_TOOL_TOKEN"
# Every server-generated id: a prefix and a UUIDv4 (occ.ids).
ID_PATTERN = re.compile(r"[a-z]{2,4}_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
E2E, BASELINE = "end-to-end", "baseline"


# --- pure helpers (tests/bench/test_provisioning_bench_helpers.py) ------------------------


def uniform_counts(per_agent: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """The per-table row counts every Agent got; a BenchError when two Agents differ (the
    end-to-end run then did something other than one clean provisioning per Agent)."""
    if not per_agent:
        raise BenchError("no provisioned Agent to count rows of")
    tables = sorted({table for counts in per_agent.values() for table in counts})
    shapes = {agent: tuple(counts.get(table, 0) for table in tables) for agent, counts in per_agent.items()}
    distinct = Counter(shapes.values())
    if len(distinct) > 1:
        described = "; ".join(f"{n} Agents: " + ", ".join(f"{t}={c}" for t, c in zip(tables, shape, strict=True))
                              for shape, n in distinct.most_common())
        raise BenchError(f"Agents got different row counts per table: {described}")
    [shape] = distinct
    return {table: count for table, count in zip(tables, shape, strict=True) if count}


def count_mismatches(expected: Mapping[str, int], actual: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """table -> (expected, actual) for every table whose counts differ (a missing table is 0)."""
    tables = set(expected) | set(actual)
    return {t: (expected.get(t, 0), actual.get(t, 0)) for t in sorted(tables)
            if expected.get(t, 0) != actual.get(t, 0)}


def table_delta(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """Rows added per table between two snapshots of table counts (tables that grew only)."""
    return {t: after[t] - before.get(t, 0) for t in sorted(after) if after[t] != before.get(t, 0)}


def scaled(counts: Mapping[str, int], agents: int) -> dict[str, int]:
    return {table: count * agents for table, count in counts.items()}


def remapper(mapping: Mapping[str, str]) -> Any:
    """A function replacing every old value of ``mapping`` by its new one inside any string,
    list or dict (keys too), leaving other values as they are. Longest values first, so an
    id is never replaced inside a longer one."""
    if not mapping:
        return lambda value: value
    pattern = re.compile("|".join(re.escape(old) for old in sorted(mapping, key=len, reverse=True)))

    def remap(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda match: mapping[match.group(0)], value)
        if isinstance(value, list):
            return [remap(item) for item in value]
        if isinstance(value, dict):
            return {remap(key): remap(item) for key, item in value.items()}
        return value

    return remap


def fresh_id(old: str) -> str:
    """A new id with the same prefix as ``old`` (``agt_<uuid4>`` -> ``agt_<another uuid4>``)."""
    return f"{old.split('_', 1)[0]}_{uuid.uuid4()}"


TASK_SUCCEEDED = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): \w+/(ForkPoolWorker-\d+)\] "
    r"Task provisioning\.(\w+)\[[0-9a-f-]+\] succeeded in ([0-9.eE+-]+)s", re.MULTILINE)
# What the queue logs for a claim it ran (provisioning/queue.py, run_claimed).
CLAIM_COMPLETED = re.compile(r"^\[[^\]]*: \w+/(ForkPoolWorker-\d+)\] worker\.completed ", re.MULTILINE)


@dataclass(frozen=True)
class TaskSpan:
    task: str
    start: float  # epoch seconds
    end: float
    claimed: bool = True  # run_work: False when the task found nothing to claim (a spare nudge)


def task_spans(worker_log: str) -> list[TaskSpan]:
    """Every task a pool child finished, from celery's own INFO line: its end (the log's
    local-time millisecond timestamp) and its duration. A ``run_work`` task whose pool child
    logged no ``worker.completed`` since its previous task claimed nothing."""
    events = sorted([(m.start(), "task", m) for m in TASK_SUCCEEDED.finditer(worker_log)]
                    + [(m.start(), "claim", m) for m in CLAIM_COMPLETED.finditer(worker_log)],
                    key=lambda event: event[0])
    spans, ran_a_claim = [], set()
    for _, kind, match in events:
        child = match.group(1) if kind == "claim" else match.group(2)
        if kind == "claim":
            ran_a_claim.add(child)
            continue
        end = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        task = match.group(3)
        claimed = task != "run_work" or child in ran_a_claim
        spans.append(TaskSpan(task, end - float(match.group(4)), end, claimed=claimed))
        ran_a_claim.discard(child)
    return spans


@dataclass(frozen=True)
class TaskLoad:
    """Tasks inside one time window: how many ended in it, and the seconds of task time in it."""

    run_work: int
    run_work_seconds: float
    other_seconds: float  # the sweep and maintain_compute
    claimed_nothing: int = 0  # of run_work: tasks that found no claimable row (a spare nudge)

    def busy(self, window_seconds: float, workers: int) -> float:
        return (self.run_work_seconds + self.other_seconds) / (window_seconds * workers)


def task_load(spans: Iterable[TaskSpan], start: float, end: float) -> TaskLoad:
    count, empty, run_seconds, other_seconds = 0, 0, 0.0, 0.0
    for span in spans:
        overlap = min(span.end, end) - max(span.start, start)
        if overlap <= 0:
            continue
        if span.task == "run_work":
            run_seconds += overlap
            ended_inside = start <= span.end <= end
            count += ended_inside
            empty += ended_inside and not span.claimed
        else:
            other_seconds += overlap
    return TaskLoad(count, run_seconds, other_seconds, empty)


@dataclass
class ArmRun:
    arm: str
    agents: int
    seconds: float
    window: tuple[float, float] | None = None  # end-to-end: epoch seconds of its start and end
    tasks: TaskLoad | None = None  # end-to-end: what the workers ran in that window

    @property
    def rate(self) -> float:
        return self.agents / self.seconds


@dataclass
class Round:
    number: int
    order: tuple[str, ...]
    runs: dict[str, ArmRun] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return ratio(self.runs[E2E].rate, self.runs[BASELINE].rate)


def pooled_rate(runs: Iterable[ArmRun]) -> float:
    """Agents per second over every run of an arm: all Agents ÷ all seconds."""
    runs = list(runs)
    return sum(r.agents for r in runs) / sum(r.seconds for r in runs)


def pooled_ratio(rounds: Sequence[Round]) -> float:
    return ratio(pooled_rate(r.runs[E2E] for r in rounds), pooled_rate(r.runs[BASELINE] for r in rounds))


def arm_order(round_number: int) -> tuple[str, str]:
    """End-to-end first in odd rounds, the baseline first in even ones."""
    return (E2E, BASELINE) if round_number % 2 else (BASELINE, E2E)


# --- the tables a provisioning writes -----------------------------------------------------


def tracked_models() -> dict[str, Any]:
    """Every model of the ``occ`` app by name (the tables counted before and after each arm)."""
    from django.apps import apps

    return {model.__name__: model for model in apps.get_app_config("occ").get_models()}


def table_counts() -> dict[str, int]:
    return {name: model.objects.count() for name, model in tracked_models().items()}


@dataclass(frozen=True)
class Provisioned:
    work_id: str
    agent_id: str
    configuration_id: str
    handed_off_at: datetime  # the provisioning row's updated_at: the handoff commit


def provisioned(work_ids: Sequence[str]) -> list[Provisioned]:
    from occ.models import AgentProvisioningWork

    rows = AgentProvisioningWork.objects.filter(work_id__in=work_ids, completed_phase="handoff").values_list(
        "work_id", "agent_id", "configuration_id", "updated_at")
    found = [Provisioned(*row) for row in rows]
    if len(found) != len(work_ids):
        raise BenchError(f"{len(work_ids) - len(found)} provisionings did not succeed")
    return found


def rows_per_agent(agents: Sequence[Provisioned]) -> dict[str, dict[str, int]]:
    """Per Agent, the rows each table holds that its provisioning wrote. Audit events count
    up to the handoff commit: later ones belong to the revision work the handoff queued."""
    from occ.models import (
        AccessBinding,
        Agent,
        AgentProvisioningWork,
        AgentRevision,
        AuditEvent,
        Configuration,
        ControllerWork,
        DeployIdempotencyKey,
        Principal,
        Secret,
        SecretBinding,
        WorkEffect,
    )

    agent_ids = [a.agent_id for a in agents]
    by_configuration = {a.configuration_id: a.agent_id for a in agents}
    handed_off = {a.agent_id: a.handed_off_at for a in agents}
    owners: dict[str, list[Any]] = {  # table -> the owning Agent id of each row
        "Configuration": [by_configuration[c] for c in
                          Configuration.objects.filter(id__in=by_configuration).values_list("id", flat=True)],
        "SecretBinding": [by_configuration[c] for c in SecretBinding.objects.filter(
            configuration_id__in=by_configuration).values_list("configuration_id", flat=True)],
        "Agent": list(Agent.objects.filter(id__in=agent_ids).values_list("id", flat=True)),
        "Principal": list(Principal.objects.filter(agent_id__in=agent_ids).values_list("agent_id", flat=True)),
        "AccessBinding": list(AccessBinding.objects.filter(principal__agent_id__in=agent_ids)
                              .values_list("principal__agent_id", flat=True)),
        "AgentRevision": list(AgentRevision.objects.filter(agent_id__in=agent_ids).values_list("agent_id", flat=True)),
        "ControllerWork": list(ControllerWork.objects.filter(agent_id__in=agent_ids)
                               .values_list("agent_id", flat=True)),
        "AgentProvisioningWork": list(AgentProvisioningWork.objects.filter(agent_id__in=agent_ids)
                                      .values_list("agent_id", flat=True)),
        "WorkEffect": list(WorkEffect.objects.filter(work__agent_id__in=agent_ids)
                           .values_list("work__agent_id", flat=True)),
        "DeployIdempotencyKey": list(DeployIdempotencyKey.objects.filter(agent_id__in=agent_ids)
                                     .values_list("agent_id", flat=True)),
        "Secret": list(Secret.objects.filter(owner_agent_id__in=agent_ids).values_list("owner_agent_id", flat=True)),
        "AuditEvent": [],
    }
    events = AuditEvent.objects.filter(resource_id__in=[*agent_ids, *by_configuration]).values_list(
        "resource_id", "occurred_at")
    for resource_id, occurred_at in events:
        agent_id = by_configuration.get(str(resource_id), str(resource_id))
        if occurred_at <= handed_off[agent_id]:
            owners["AuditEvent"].append(agent_id)
    per_agent: dict[str, dict[str, int]] = {agent_id: {} for agent_id in agent_ids}
    for table, agent_list in owners.items():
        for agent_id, count in Counter(agent_list).items():
            per_agent[agent_id][table] = count
    return per_agent


def audit_actions_after_handoff(agents: Sequence[Provisioned]) -> Counter[str]:
    """The audit events of these Agents written after their handoff (the revision work's)."""
    from occ.models import AuditEvent

    handed_off = {a.agent_id: a.handed_off_at for a in agents}
    return Counter(action for resource_id, action, at in AuditEvent.objects.filter(
        resource_id__in=list(handed_off)).values_list("resource_id", "action", "occurred_at")
        if at > handed_off[str(resource_id)])


# --- the end-to-end arm --------------------------------------------------------------------


@dataclass
class Bench:
    world: World
    tool_secret_id: str
    counts: dict[str, int] = field(default_factory=dict)  # rows per provisioned Agent, per table
    template: Provisioned | None = None
    sequence: int = 0
    fake_calls: Counter[str] = field(default_factory=Counter)  # the last end-to-end arm's
    later_audits: Counter[str] = field(default_factory=Counter)  # per action, in the warm-up

    def next_name(self, arm: str) -> str:
        self.sequence += 1
        return f"{arm}-{self.sequence:04d}-{uuid.uuid4().hex[:6]}"


def provision_request(bench: Bench, name: str) -> dict[str, Any]:
    ns = bench.world.namespace_id

    def ref(secret_id: str) -> dict[str, str]:
        return {"kind": "secret", "namespaceId": ns, "id": secret_id}

    return {
        "requestId": f"req_{uuid.uuid4().hex}",
        "name": name,
        "configuration": {"kind": "agent", "values": VALUES,
                          "secretBindings": {TOOL_ENV: {"source": ref(bench.tool_secret_id),
                                                        "delivery": {"type": "env"}}}},
        "executionMode": "embedded",
        "harnessAuth": {"method": "api_key", "source": ref(bench.world.harness_secret_id)},
    }


def provisioning_progress(work_ids: Sequence[str]) -> tuple[int, int]:
    """(succeeded, failed) among ``work_ids``: one COUNT query."""
    from django.db.models import Count, Q

    from occ.models import AgentProvisioningWork

    counts = AgentProvisioningWork.objects.filter(work_id__in=work_ids).aggregate(
        done=Count("work_id", filter=Q(completed_phase="handoff")),
        failed=Count("work_id", filter=Q(cancelled_at__isnull=False) | Q(work__state="failed_permanent")))
    return counts["done"], counts["failed"]


def run_end_to_end(bench: Bench, agents: int) -> ArmRun:
    """Admit ``agents`` provisionings back to back; wait for every one to hand off. Then,
    untimed, drain the revision work and check the rows every table got."""
    from django.db.models import Max

    from occ.models import AgentProvisioningWork
    from occ.services.provisioning import provision_admit

    requests = [provision_request(bench, bench.next_name("e2e")) for _ in range(agents)]
    before = table_counts()
    work_ids: list[str] = []
    started = time.time()
    for request in requests:
        row, created = provision_admit(actor=bench.world.actor, namespace_id=bench.world.namespace_id,
                                       command=ProvisionCommand.model_validate(request))
        if not created:
            raise BenchError("an admission replayed an earlier request")
        work_ids.append(row.work_id)
    admitted = time.time()

    def all_handed_off() -> bool:
        done, failed = provisioning_progress(work_ids)
        if failed:
            raise BenchError(f"{failed} provisionings failed")
        return done == len(work_ids)

    wait_until(all_handed_off, timeout=ARM_TIMEOUT_SECONDS, interval=POLL_SECONDS,
               what=f"{agents} provisionings to succeed")
    last = AgentProvisioningWork.objects.filter(work_id__in=work_ids).aggregate(at=Max("updated_at"))["at"]
    finished = last.timestamp()
    if finished <= admitted - 1.0:
        raise BenchError("the last handoff is dated before the admissions ended: the clocks disagree")
    drain_revision_work([row.agent_id for row in AgentProvisioningWork.objects.filter(work_id__in=work_ids)])
    bench.fake_calls = fake_driver_calls()
    check_rows(bench, provisioned(work_ids), table_delta(before, table_counts()))
    return ArmRun(E2E, agents, finished - started, window=(started, finished))


def fake_driver_calls() -> Counter[str]:
    """The fake ComputeDriver's calls since the last arm, by method; then its world is reset.

    The fake keeps its world and every call in one JSON file that each call reads and
    rewrites under a lock, so its cost grows with the calls recorded (about 1 ms per call
    when empty, 3 ms after 1,000 calls). A drained arm leaves nothing any later arm uses
    (new Agents each time; the Namespace was never created through the fake), so resetting
    keeps that cost the same in every round."""
    from occ.drivers.compute import get_compute_driver
    from occ.drivers.compute.fake import FakeCompute

    driver = get_compute_driver()
    if not isinstance(driver, FakeCompute):
        raise BenchError("the benchmark needs OCC_COMPUTE_DRIVER=fake")
    calls = Counter(call.method for call in driver.calls)
    driver.reset()
    return calls


def drain_revision_work(agent_ids: Sequence[str]) -> None:
    """Untimed: wait until the revision work the handoffs queued has finished, so the next
    arm does not compete with it. Every one must activate its revision."""
    from occ.models import ControllerWork

    def drained() -> bool:
        return not ControllerWork.objects.filter(agent_id__in=agent_ids, state__in=["queued", "claimed"]).exists()

    wait_until(drained, timeout=DRAIN_TIMEOUT_SECONDS, interval=0.1, what="the revision work to finish")
    failed = ControllerWork.objects.filter(agent_id__in=agent_ids).exclude(state="succeeded").values_list(
        "idempotency_key", "reason_code")
    if failed:
        raise BenchError(f"work did not succeed: {list(failed)[:5]}")


# --- the baseline arm -----------------------------------------------------------------------


# The order of the copies within one Agent's transaction (foreign keys are checked at commit).
BASELINE_ORDER = ("Configuration", "SecretBinding", "Agent", "Principal", "AccessBinding", "AgentRevision",
                  "ControllerWork", "AgentProvisioningWork", "WorkEffect", "DeployIdempotencyKey", "Secret",
                  "AuditEvent")


def template_rows(template: Provisioned, counts: Mapping[str, int]) -> dict[str, list[Any]]:
    """The rows the template Agent's provisioning wrote, table by table (as counted)."""
    from occ.models import AuditEvent

    models = tracked_models()
    filters: dict[str, dict[str, Any]] = {
        "Configuration": {"id": template.configuration_id},
        "SecretBinding": {"configuration_id": template.configuration_id},
        "Agent": {"id": template.agent_id},
        "Principal": {"agent_id": template.agent_id},
        "AccessBinding": {"principal__agent_id": template.agent_id},
        "AgentRevision": {"agent_id": template.agent_id},
        "ControllerWork": {"agent_id": template.agent_id},
        "AgentProvisioningWork": {"agent_id": template.agent_id},
        "WorkEffect": {"work__agent_id": template.agent_id},
        "DeployIdempotencyKey": {"agent_id": template.agent_id},
        "Secret": {"owner_agent_id": template.agent_id},
    }
    rows: dict[str, list[Any]] = {}
    for table in counts:
        if table == "AuditEvent":
            found = list(AuditEvent.objects.filter(
                resource_id__in=[template.agent_id, template.configuration_id],
                occurred_at__lte=template.handed_off_at).order_by("occurred_at"))
        elif table in filters:
            found = list(models[table].objects.filter(**filters[table]))
        else:
            raise BenchError(f"the baseline does not know how to copy {table} rows")
        if len(found) != counts[table]:
            raise BenchError(f"template Agent has {len(found)} {table} rows, expected {counts[table]}")
        rows[table] = found
    return rows


def _field_values(instance: Any) -> dict[str, Any]:
    from django.db import models as django_models

    values = {}
    for model_field in type(instance)._meta.concrete_fields:
        if isinstance(model_field, django_models.AutoField):
            continue  # the database numbers the copy
        values[model_field.attname] = getattr(instance, model_field.attname)
    return values


def copy_plan(rows: Mapping[str, list[Any]], agents: int, name_prefix: str) -> list[list[tuple[Any, list[dict]]]]:
    """Per Agent: (model, field values of each row) in BASELINE_ORDER, every id the template's
    rows own (their own primary keys, the Agent's name, the request id) replaced by a fresh one
    wherever it appears, JSON included. Built before the clock starts."""
    owned: set[str] = set()
    agent_name = request_id = None
    for table, instances in rows.items():
        for instance in instances:
            pk = instance.pk
            if isinstance(pk, str) and ID_PATTERN.fullmatch(pk):
                owned.add(pk)
            if table == "Agent":
                agent_name = instance.name
            if table == "AgentProvisioningWork":
                request_id = instance.request_id
    plans = []
    for index in range(agents):
        mapping = {old: fresh_id(old) for old in owned}
        if agent_name:
            mapping[agent_name] = f"{name_prefix}-{index:04d}-{uuid.uuid4().hex[:6]}"
        if request_id:
            mapping[request_id] = f"req_{uuid.uuid4().hex}"
        remap = remapper(mapping)
        plan = []
        for table in BASELINE_ORDER:
            if table in rows:
                model = type(rows[table][0])
                plan.append((model, [{k: remap(v) for k, v in _field_values(row).items()} for row in rows[table]]))
        plans.append(plan)
    return plans


def write_copies(plans: Sequence[list[tuple[Any, list[dict]]]]) -> float:
    """The baseline's timed loop: one transaction per Agent. Returns its seconds."""
    from django.db import transaction

    started = time.perf_counter()
    for plan in plans:
        with transaction.atomic():
            for model, values in plan:
                if len(values) == 1:
                    model.objects.create(**values[0])
                else:
                    model.objects.bulk_create([model(**v) for v in values])
    return time.perf_counter() - started


def run_baseline(bench: Bench, agents: int, *, account: bool = False) -> ArmRun:
    """Write ``agents`` copies of the template's rows; ``account`` (the warm-up) also prints the
    statements and commits per Agent, which the timed rounds do not pay for counting."""
    assert bench.template is not None
    plans = copy_plan(template_rows(bench.template, bench.counts), agents, bench.next_name("base"))
    before = table_counts()
    if account:
        with Accounting() as accounting:
            seconds = write_copies(plans)
        print(f"  baseline: {accounting.statements / agents:g} statements and {accounting.commits / agents:g} "
              "commit per Agent")
    else:
        seconds = write_copies(plans)
    mismatches = count_mismatches(scaled(bench.counts, agents), table_delta(before, table_counts()))
    if mismatches:
        raise BenchError(f"the baseline wrote other row counts than the end-to-end run (table: expected, "
                         f"written): {mismatches}")
    return ArmRun(BASELINE, agents, seconds)


# --- the run ------------------------------------------------------------------------------


def seed(bench_world: World) -> Bench:
    from occ.services.secrets import secret_create

    tool = secret_create(actor=bench_world.actor, namespace_id=bench_world.namespace_id,
                         command=SecretCreate(name="bench-tool-token", value="xoxb-bench-" + uuid.uuid4().hex))
    return Bench(world=bench_world, tool_secret_id=tool.id)


def unexplained_rows(delta: Mapping[str, int], counts: Mapping[str, int], agents: int,
                     later_audit_events: int) -> dict[str, tuple[int, int]]:
    """table -> (expected, added) for rows an end-to-end arm added beyond ``agents`` times the
    per-Agent counts and the audit events written after the handoffs (the revision work's).
    The Namespace's secret-access Role, created by the first grant ever, is expected once."""
    expected = scaled(counts, agents)
    expected["AuditEvent"] = expected.get("AuditEvent", 0) + later_audit_events
    mismatches = count_mismatches(expected, delta)
    if mismatches.get("Role") == (0, 1):
        del mismatches["Role"]
    return mismatches


def check_rows(bench: Bench, done: Sequence[Provisioned], delta: Mapping[str, int]) -> None:
    """The first end-to-end arm sets the rows per Agent and per table; every later one must
    write the same. Any row in a table outside that count (and the revision work's audit
    events) stops the run: the baseline would not copy it."""
    counts = uniform_counts(rows_per_agent(done))
    if not bench.counts:
        bench.counts, bench.template = counts, done[-1]
        bench.later_audits = audit_actions_after_handoff(done)
    elif mismatches := count_mismatches(bench.counts, counts):
        raise BenchError(f"these provisionings wrote other row counts than the warm-up's: {mismatches}")
    later = sum(audit_actions_after_handoff(done).values())
    if unexplained := unexplained_rows(delta, counts, len(done), later):
        raise BenchError(f"the end-to-end arm wrote rows the per-Agent counts do not explain (table: expected, "
                         f"added): {unexplained}")


def warm_up(bench: Bench, agents: int) -> None:
    """Warm the workers (imports, connections, the Namespace's secret-access Role) and count,
    from that end-to-end run, the rows each provisioning wrote per table."""
    run_end_to_end(bench, agents)
    print("\nrows per provisioned Agent (counted in the warm-up's end-to-end run, checked in every round):")
    print("  " + ", ".join(f"{table} {count}" for table, count in bench.counts.items())
          + f"  = {sum(bench.counts.values())} rows")
    print("  fake ComputeDriver calls per Agent (provisioning and revision work): " + ", ".join(
        f"{method} {count / agents:g}" for method, count in sorted(bench.fake_calls.items())))
    print("  audit events after the handoff (the revision work's, not copied): "
          + ", ".join(f"{action} {count / agents:g}" for action, count in sorted(bench.later_audits.items())))


def worker_load(run: ArmRun, workers: Sequence[ManagedProcess]) -> TaskLoad:
    assert run.window is not None
    spans = [span for worker in workers for span in task_spans(worker.log())]
    return task_load(spans, *run.window)


def report(rounds: Sequence[Round], load_start: str) -> list[Verdict]:
    print(f"\n{'round':<7}{'order':<26}{'e2e Agents':>11}{'e2e s':>8}{'e2e /s':>9}"
          f"{'base Agents':>13}{'base s':>8}{'base /s':>10}{'ratio':>8}")
    for r in rounds:
        e2e, base = r.runs[E2E], r.runs[BASELINE]
        print(f"{r.number:<7}{' then '.join(r.order):<26}{e2e.agents:>11}{e2e.seconds:>8.2f}{e2e.rate:>9.1f}"
              f"{base.agents:>13}{base.seconds:>8.2f}{base.rate:>10.1f}{r.ratio:>8.3f}")
    e2e_rate = pooled_rate(r.runs[E2E] for r in rounds)
    base_rate = pooled_rate(r.runs[BASELINE] for r in rounds)
    per_round = [r.ratio for r in rounds]
    print(f"{'pooled':<33}{'':>11}{'':>8}{e2e_rate:>9.1f}{'':>13}{'':>8}{base_rate:>10.1f}"
          f"{pooled_ratio(rounds):>8.3f}")
    print(f"per-round ratios: {' '.join(f'{x:.3f}' for x in per_round)} (min {min(per_round):.3f}, "
          f"max {max(per_round):.3f}); load average at start {load_start}, now {loadavg()}")
    print("\ninside each end-to-end arm (from celery's task lines in the two worker logs)")
    print(f"{'round':<7}{'run_work tasks/Agent':>22}{'claimed nothing':>17}{'task ms/Agent':>15}"
          f"{'workers busy':>14}")
    for r in rounds:
        e2e = r.runs[E2E]
        if e2e.tasks is not None:
            print(f"{r.number:<7}{e2e.tasks.run_work / e2e.agents:>22.2f}{e2e.tasks.claimed_nothing:>17}"
                  f"{e2e.tasks.run_work_seconds / e2e.agents * 1000:>15.1f}"
                  f"{e2e.tasks.busy(e2e.seconds, WORKERS):>14.0%}")
    return [Verdict("provisioned/s ÷ ORM rows/s (pooled)", pooled_ratio(rounds), TARGET, at_most=False,
                    detail=f"{e2e_rate:.1f} vs {base_rate:.1f} Agents/s")]


# --- where the time goes (``--profile``) --------------------------------------------------------


@dataclass
class StageCost:
    """One stage run in-process for every Agent of a batch: wall time, SQL statements and
    write transactions (commits of atomic blocks plus writes run in autocommit)."""

    name: str
    agents: int
    seconds: float = 0.0
    statements: int = 0
    commits: int = 0

    def line(self) -> str:
        return (f"  {self.name:<32}{self.seconds / self.agents * 1000:>9.2f}{self.statements / self.agents:>9.1f}"
                f"{self.commits / self.agents:>9.2f}")


class Accounting:
    """Counts this process's statements and write transactions while active."""

    WRITES = ("INSERT", "UPDATE", "DELETE")

    def __init__(self) -> None:
        from django.db import DEFAULT_DB_ALIAS, connections

        self.connection = connections[DEFAULT_DB_ALIAS]  # the wrapper itself, not the proxy
        self.statements = 0
        self.commits = 0

    def __enter__(self) -> Accounting:
        connection = self.connection
        original = connection.commit

        def counted_commit() -> None:
            self.commits += 1
            original()

        def counted_execute(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            self.statements += 1
            if not connection.in_atomic_block and sql.lstrip()[:6].upper() in self.WRITES:
                self.commits += 1
            return execute(sql, params, many, context)

        self._previous = connection.__dict__.get("commit")  # an enclosing Accounting's
        connection.commit = counted_commit  # type: ignore[method-assign]
        self._wrapper = connection.execute_wrapper(counted_execute)
        self._wrapper.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._wrapper.__exit__(None, None, None)
        if self._previous is None:
            del self.connection.commit
        else:
            self.connection.commit = self._previous  # type: ignore[method-assign]


def timed_steps(costs: dict[str, StageCost], agents: int, accounting: Accounting) -> list[tuple[Any, str, Any]]:
    """Wrap the provisioning job's steps and the queue's claim and completion (module
    attributes of this process only) so each adds its time, statements and commits to
    ``costs``. Returns what to restore."""
    from provisioning import queue
    from provisioning.jobs import provision

    wrapped = [(queue, "claim", "claim (queue)"), (provision, "configure", "configure (fenced step)"),
               (provision, "begin_transport", "transport: begun (fenced step)"),
               (provision, "send_transport", "transport: lease renewal + driver"),
               (provision, "receipt_transport", "transport: receipt (fenced step)"),
               (provision, "hand_off", "handoff (fenced step, deploy)"),
               (queue, "apply_outcome", "completion (queue)")]
    restore = []
    for module, attribute, label in wrapped:
        original = getattr(module, attribute)
        cost = costs.setdefault(label, StageCost(label, agents))

        def timed(*args: Any, _original: Any = original, _cost: StageCost = cost, **kwargs: Any) -> Any:
            statements, commits, started = accounting.statements, accounting.commits, time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                _cost.seconds += time.perf_counter() - started
                _cost.statements += accounting.statements - statements
                _cost.commits += accounting.commits - commits

        setattr(module, attribute, timed)
        restore.append((module, attribute, original))
    return restore


def run_stage(name: str, agents: int, items: Sequence[Any], call: Any) -> tuple[StageCost, list[Any]]:
    cost = StageCost(name, agents)
    with Accounting() as accounting:
        started = time.perf_counter()
        results = [call(item) for item in items]
        cost.seconds = time.perf_counter() - started
    cost.statements, cost.commits = accounting.statements, accounting.commits
    return cost, results


def profile(bench: Bench, agents: int) -> None:
    """The same work as the end-to-end arm, one stage at a time in this process, with no Celery
    worker: admission, the provisioning job (split by step) and the revision work its handoff
    queues. A first batch warms up; the second is printed."""
    from occ.models import AgentProvisioningWork
    from occ.models.work import revision_reconcile_key
    from occ.services.provisioning import provision_admit
    from provisioning import queue

    for _batch in ("warm-up", "measured"):
        requests = [provision_request(bench, bench.next_name("prof")) for _ in range(agents)]
        admission, rows = run_stage("admission (provision_admit)", agents, requests, lambda r: provision_admit(
            actor=bench.world.actor, namespace_id=bench.world.namespace_id,
            command=ProvisionCommand.model_validate(r))[0])
        keys = [row.work_id for row in rows]
        steps: dict[str, StageCost] = {}
        with Accounting() as accounting:
            restore = timed_steps(steps, agents, accounting)
            try:
                job, outcomes = run_stage("provisioning job (run_work)", agents, keys, queue.run_work)
            finally:
                for module, attribute, original in restore:
                    setattr(module, attribute, original)
        if any(getattr(o, "reason_code", None) != "PROVISIONING_SUCCEEDED" for o in outcomes):
            raise BenchError(f"a provisioning did not succeed in-process: {outcomes[:3]}")
        revisions = [revision_reconcile_key(str(rev)) for rev in AgentProvisioningWork.objects.filter(
            work_id__in=keys).values_list("revision_id", flat=True)]
        revision, outcomes = run_stage("revision work (run_work)", agents, revisions, queue.run_work)
        if any(getattr(o, "reason_code", None) != "REVISION_ACTIVATED" for o in outcomes):
            raise BenchError(f"a revision did not activate in-process: {outcomes[:3]}")
        fake_driver_calls()  # the same small fake world in both batches
    print(f"\nin-process profile, {agents} Agents after a warm-up batch (no Celery; per Agent)")
    print(f"  {'stage':<32}{'ms':>9}{'stmts':>9}{'commits':>9}")
    for cost in (admission, job, *steps.values(), revision):
        print(cost.line() if cost in (admission, job, revision) else "  " + cost.line())
    total = admission.seconds + job.seconds + revision.seconds
    print(f"  {'all three stages':<32}{total / agents * 1000:>9.2f}"
          f"{(admission.statements + job.statements + revision.statements) / agents:>9.1f}"
          f"{(admission.commits + job.commits + revision.commits) / agents:>9.2f}")


# --- the services alone (``--bound``) -------------------------------------------------------------


def proc_cpu_seconds(stat: str, ticks_per_second: int) -> float:
    """User + system CPU seconds from a ``/proc/<pid>/stat`` line: fields 14 and 15, counted
    after the ``)`` that closes the command name (which may hold spaces and parentheses)."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks_per_second


def ratio_ceiling(cpus: int, baseline_ms: float, services_cpu_ms: float) -> float:
    """The highest end-to-end ratio possible when every provisioned Agent costs at least
    ``services_cpu_ms`` of CPU on ``cpus`` CPUs and the baseline writes one in ``baseline_ms``."""
    return cpus * baseline_ms / services_cpu_ms


class CpuClock:
    """CPU seconds of this process and of its PostgreSQL backend (``/proc``: same machine)."""

    def __init__(self) -> None:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.backend_stat = Path(f"/proc/{cursor.fetchone()[0]}/stat")
        self.tick = os.sysconf("SC_CLK_TCK")

    def seconds(self) -> tuple[float, float]:
        """(this process, its backend): CPU seconds so far."""
        return time.process_time(), proc_cpu_seconds(self.backend_stat.read_text(), self.tick)

    def since(self, start: tuple[float, float]) -> tuple[float, float]:
        now = self.seconds()
        return now[0] - start[0], now[1] - start[1]


@dataclass
class CpuRun:
    arm: str
    agents: int
    seconds: float
    python_seconds: float  # this process
    backend_seconds: float  # its PostgreSQL backend

    @property
    def cpu_seconds(self) -> float:
        return self.python_seconds + self.backend_seconds

    @property
    def wall_ms(self) -> float:
        return self.seconds / self.agents * 1000

    @property
    def cpu_ms(self) -> float:
        return self.cpu_seconds / self.agents * 1000


def services_alone(bench: Bench, request: Mapping[str, Any]) -> str:
    """What a provisioning must run however it is scheduled: its admission, and the services
    the issue names (Configuration and Agent create, the grant service, the deploy service),
    here in one transaction with no queue, fence, lease, effect record or Celery task. As in
    the job's steps, the Namespace is read once and passed to the services with the rows they
    create. The Agent gets fresh ids (the admitted work keeps its own, unused),
    so the plain deploy admits its first revision. Returns that revision's id."""
    from django.db import transaction

    from occ.services.agent_secret_access import agent_secret_access_grant
    from occ.services.agents import agent_create
    from occ.services.configurations import configuration_create
    from occ.services.deploy import agent_deploy
    from occ.services.locks import share_locked_live_namespace
    from occ.services.provisioning import provision_admit

    actor, ns = bench.world.actor, bench.world.namespace_id
    provision_admit(actor=actor, namespace_id=ns, command=ProvisionCommand.model_validate(request))
    inline = request["configuration"]
    with transaction.atomic():
        namespace = share_locked_live_namespace(ns)
        configuration = configuration_create(actor=actor, namespace_id=ns,
                                             command=ConfigurationCreate.model_validate(inline), namespace=namespace)
        agent = agent_create(actor=actor, namespace_id=ns,
                             command=AgentCreate(name=request["name"], configuration_id=configuration.id,
                                                 execution_mode=request["executionMode"],
                                                 harness_auth=request["harnessAuth"]),
                             namespace=namespace, configuration=configuration)
        agent_secret_access_grant(actor=actor, namespace_id=ns, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=sorted({bench.tool_secret_id,
                                                                               bench.world.harness_secret_id})),
                                  namespace=namespace, agent=agent)
        return agent_deploy(actor=actor, namespace_id=ns, agent_id=agent.id).id


SERVICES, REVISION_WORK = "services", "revision work"


def run_services(bench: Bench, agents: int, *, account: bool = False) -> dict[str, CpuRun]:
    """The services alone for ``agents`` Agents, then the revision work each deploy queued,
    run in this process (``queue.run_work``, no Celery), each timed on its own. ``account``
    (the warm-up) also prints the statements and commits per Agent."""
    from occ.models.work import revision_reconcile_key
    from provisioning import queue

    requests = [provision_request(bench, bench.next_name("svc")) for _ in range(agents)]
    before = table_counts()
    clock = CpuClock()
    runs: dict[str, CpuRun] = {}
    with contextlib.ExitStack() as stack:
        accounting = stack.enter_context(Accounting()) if account else None
        cpu, started = clock.seconds(), time.perf_counter()
        revisions = [services_alone(bench, request) for request in requests]
        runs[SERVICES] = CpuRun(SERVICES, agents, time.perf_counter() - started, *clock.since(cpu))
        statements = accounting.statements if accounting else 0
        # The services alone record no effects (no transport step): every other table as a provisioning.
        expected = {table: count for table, count in bench.counts.items() if table != "WorkEffect"}
        mismatches = count_mismatches(scaled(expected, agents), table_delta(before, table_counts()))
        cpu, started = clock.seconds(), time.perf_counter()
        outcomes = [queue.run_work(revision_reconcile_key(revision)) for revision in revisions]
        runs[REVISION_WORK] = CpuRun(REVISION_WORK, agents, time.perf_counter() - started, *clock.since(cpu))
    if accounting is not None:
        print(f"  services alone: {statements / agents:g} statements per Agent; its revision work: "
              f"{(accounting.statements - statements) / agents:g}")
    if mismatches:
        raise BenchError(f"the services wrote other row counts than a provisioning (table: expected, written): "
                         f"{mismatches}")
    if any(getattr(o, "reason_code", None) != "REVISION_ACTIVATED" for o in outcomes):
        raise BenchError(f"a revision did not activate in-process: {outcomes[:3]}")
    fake_driver_calls()
    return runs


def pooled_cpu(runs: Sequence[CpuRun]) -> CpuRun:
    return CpuRun(runs[0].arm, sum(r.agents for r in runs), sum(r.seconds for r in runs),
                  sum(r.python_seconds for r in runs), sum(r.backend_seconds for r in runs))


def bound(bench: Bench, rounds: int, agents: int) -> tuple[list[Verdict], float]:
    """The highest end-to-end ratio any schedule of these services could reach on this
    machine: every provisioned Agent costs at least the services' CPU (and, for a rate that
    lasts, its revision work's too), on ``os.cpu_count()`` CPUs, while the baseline writes an
    Agent in its wall time."""
    runs: dict[str, list[CpuRun]] = {SERVICES: [], REVISION_WORK: []}
    baseline: list[ArmRun] = []
    for number in range(1, rounds + 1):
        for arm in ((SERVICES, BASELINE) if number % 2 else (BASELINE, SERVICES)):
            if arm == SERVICES:
                for name, run in run_services(bench, agents).items():
                    runs[name].append(run)
            else:
                baseline.append(run_baseline(bench, agents))
    pooled = {arm: pooled_cpu(arm_runs) for arm, arm_runs in runs.items()}
    base_ms = 1000 / pooled_rate(baseline)
    print(f"\nin this process, one Agent after another ({rounds} rounds of {agents}, the services and the baseline "
          "interleaved)")
    print(f"  {'':<16}{'wall ms/Agent':>15}{'CPU ms/Agent':>14}{'Python':>10}{'PostgreSQL':>12}"
          "   (CPU: this process + its backend)")
    for arm, run in pooled.items():
        print(f"  {arm:<16}{run.wall_ms:>15.2f}{run.cpu_ms:>14.2f}"
              f"{run.python_seconds / run.agents * 1000:>10.2f}{run.backend_seconds / run.agents * 1000:>12.2f}")
    print(f"  {BASELINE:<16}{base_ms:>15.2f}")
    cpus = os.cpu_count() or 1
    services_ms = pooled[SERVICES].cpu_ms
    lasting_ms = services_ms + pooled[REVISION_WORK].cpu_ms
    alone, lasting = ratio_ceiling(cpus, base_ms, services_ms), ratio_ceiling(cpus, base_ms, lasting_ms)
    print(f"  ceiling, services alone:            {cpus} CPUs x {base_ms:.2f} ms / {services_ms:.2f} ms = {alone:.3f}")
    print(f"  ceiling, with their revision work:  {cpus} CPUs x {base_ms:.2f} ms / {lasting_ms:.2f} ms = {lasting:.3f}")
    print("  (no queue, fence, lease, effect record, transport step or Celery task counted in either)")
    return [
        Verdict("ceiling of provisioned/s ÷ ORM rows/s, services alone", alone, TARGET, at_most=False,
                detail=f"{cpus} CPUs; {services_ms:.1f} CPU ms vs baseline {base_ms:.1f} ms per Agent"),
        Verdict("the same, with each Agent's revision work", lasting, TARGET, at_most=False,
                detail=f"{cpus} CPUs; {lasting_ms:.1f} CPU ms vs baseline {base_ms:.1f} ms per Agent"),
    ], lasting


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--agents", type=int, default=30, help="Agents per arm and round (default 30)")
    parser.add_argument("--profile", action="store_true",
                        help="instead of the rounds: each stage in-process, no workers (time, statements, commits)")
    parser.add_argument("--bound", action="store_true",
                        help="after the rounds: the services alone vs the baseline, the ratio's ceiling, and "
                             "end to end ÷ that ceiling")
    parser.add_argument("--keep-logs", metavar="DIR",
                        help="write the worker and beat logs (and the fake's state) to DIR and keep them")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
                        help=f"this benchmark's own Redis database (default {DEFAULT_REDIS_URL})")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= 20:
        parser.error("rounds must be 1-20")
    if not 5 <= args.agents <= 500:
        parser.error("agents must be 5-500")
    redis_db_number(args.redis_url)
    return args


def measured_rounds(bench: Bench, args: argparse.Namespace, workers: Sequence[ManagedProcess]) -> list[Round]:
    rounds = []
    for number in range(1, args.rounds + 1):
        current = Round(number, arm_order(number))
        for arm in current.order:
            if arm == E2E:
                current.runs[E2E] = run_end_to_end(bench, args.agents)
                current.runs[E2E].tasks = worker_load(current.runs[E2E], workers)
            else:
                current.runs[BASELINE] = run_baseline(bench, args.agents)
        rounds.append(current)
    return rounds


def run(args: argparse.Namespace) -> list[Verdict]:
    started = time.monotonic()
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    flush_redis_db(args.redis_url)
    load_start = loadavg()
    print_facts("OCC provisioning rate: end-to-end (Redis broker, 2 real celery workers, beat, fake compute) "
                "÷ the same rows through the ORM", machine_facts(database_url))
    processes: list[ManagedProcess] = []
    with tempfile.TemporaryDirectory(prefix="occ-prov-bench-") as folder:
        try:
            data = Path(args.keep_logs or folder)
            data.mkdir(parents=True, exist_ok=True)
            env = process_env(database_url, data, CELERY_BROKER_URL=args.redis_url, OCC_COMPUTE_DRIVER="fake",
                              OCC_FAKE_COMPUTE_STATE=str(data / "fake-compute.json"))
            configure_django(env)
            from django.conf import settings

            bench = seed(seed_world())
            if args.profile:
                profile(bench, args.agents)
                return []
            processes.append(start_beat(env, data))
            workers = [start_worker(env, data, f"bench-prov-{number}", concurrency=1)
                       for number in range(1, WORKERS + 1)]
            processes.extend(workers)
            print(f"  {'broker':<24}{args.redis_url}")
            print(f"  {'workers':<24}{WORKERS} celery prefork processes, concurrency 1 each; beat sweep every "
                  f"{settings.OCC_SWEEP_INTERVAL_SECONDS:g} s; admission in-process (provision_admit)")
            warm_up(bench, WARMUP_AGENTS)
            run_baseline(bench, WARMUP_AGENTS, account=True)  # warms this process's ORM paths too
            print(f"setup and warm-up took {time.monotonic() - started:.1f} s; load average {loadavg()}")
            if args.bound:
                # The end-to-end rounds, then the lasting ceiling in the same run with nothing else
                # competing for the CPUs, and the one ratio between them.
                rounds = measured_rounds(bench, args, workers)
                verdicts = report(rounds, load_start)
                for process in reversed(processes):
                    process.stop()
                run_services(bench, WARMUP_AGENTS, account=True)  # warms the services' paths in this process
                ceiling_verdicts, lasting = bound(bench, args.rounds, args.agents)
                of_ceiling = pooled_ratio(rounds) / lasting
                print(f"\nend to end ÷ the lasting ceiling, same run: {pooled_ratio(rounds):.3f} / {lasting:.3f} = "
                      f"{of_ceiling:.3f}")
                verdicts += [
                    *ceiling_verdicts,
                    Verdict("end to end ÷ its lasting ceiling (same run)", of_ceiling, CEILING_TARGET, at_most=False,
                            detail="provisioned/s ÷ ORM rows/s, over the same ratio for the services and revision "
                                   "work alone")]
            else:
                verdicts = report(measured_rounds(bench, args, workers), load_start)
        finally:  # every process this run started, by its group id, before its folder goes
            for process in reversed(processes):
                process.stop()
            flush_redis_db(args.redis_url)
    print_verdicts(verdicts)
    print_closing(started)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
