#!/usr/bin/env python
"""Recovery after SIGKILL of a worker mid-job, ÷ (lease + sweep interval), and duplicate effects.

Short settings so a run stays brief: lease 3 s, heartbeat 1 s, sweep every 1 s (beat). The
fake ComputeDriver keeps its world in one JSON file (``OCC_FAKE_COMPUTE_STATE``) that every
process shares, and records every call there.

Each sample deploys a fresh Agent with ``prepare_revision`` scripted to sleep 60 s on its
first call. The one running worker (victim) claims the work and blocks in that call while
its heartbeat thread keeps the lease. A standby worker is then started (and waits on the
broker), and after a random fraction of a heartbeat the victim's whole process group
(celery main process and pool child) is SIGKILLed. Measured, on the database clock
(``bench_work_transitions``, a trigger this benchmark installs on its own database):

    recovery = second claim of the work row - the moment of the kill

and split into: lease left at the kill, sweep lag (lease expiry -> requeue), retry backoff
(requeue -> due), and nudge lag (due -> claim). The standby completes the work.

Duplicate effects: every effect call the fake recorded (prepare, activate, retire,
runtime credentials...) must be made once per target; the victim's prepare call died
before its effect (the sleep comes first), so ``prepare_revision`` may appear twice. Also
exactly one gateway start per Agent and one activation audit event per revision.

Target: median recovery ÷ (lease + sweep) <= 1.3, with zero duplicate effects.

Run: ``make bench-worker`` or ``.venv/bin/python bench/worker_recovery.py`` (``--help``).
``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/occ_recovery_bench``) must
name a database containing ``bench``: it is dropped and recreated.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the project root first
    _root = str(Path(__file__).resolve().parent.parent)
    if _root not in sys.path:
        sys.path.insert(0, _root)

import argparse
import os
import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.verdicts import Verdict, print_verdicts
from bench.worker_support import (
    BenchError,
    ManagedProcess,
    Transition,
    add_agent,
    bench_database_url,
    bench_main,
    configure_django,
    deploy_committed_at,
    duplicate_effects,
    flush_redis_db,
    install_transition_log,
    loadavg,
    machine_facts,
    percentile,
    print_closing,
    print_facts,
    process_env,
    ratio,
    read_transitions,
    recreate_database,
    redis_db_number,
    seed_world,
    start_beat,
    start_worker,
    wait_terminal,
    wait_until,
)

if TYPE_CHECKING:
    from occ.drivers.compute.fake import FakeCompute

DEFAULT_DATABASE = "occ_recovery_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
LEASE_SECONDS = 3.0
HEARTBEAT_SECONDS = 1.0
SWEEP_SECONDS = 1.0
HANG_SECONDS = 60.0
TARGET = 1.3
WORK_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Recovery:
    key: str
    killed_at: float  # epoch seconds
    lease_expired_at: float
    requeued_at: float
    due_at: float
    reclaimed_at: float
    reclaim_attempt: int

    @property
    def seconds(self) -> float:
        return self.reclaimed_at - self.killed_at

    def parts(self) -> tuple[float, float, float, float]:
        """(lease left at the kill, sweep lag, backoff, nudge lag), seconds."""
        return (self.lease_expired_at - self.killed_at, self.requeued_at - self.lease_expired_at,
                max(0.0, self.due_at - self.requeued_at), self.reclaimed_at - max(self.due_at, self.requeued_at))


def recovery_of(key: str, killed_at: float, transitions: Sequence[Transition]) -> Recovery:
    """The requeue after the kill (claimed -> queued, with the expired lease) and the next claim."""
    mine = [t for t in transitions if t.key == key]
    requeue = next((t for t in mine if t.old_state == "claimed" and t.new_state == "queued"
                    and t.at.timestamp() >= killed_at), None)
    if requeue is None or requeue.old_lease_expires_at is None or requeue.available_at is None:
        raise BenchError(f"work {key} was not requeued after the kill: {[(t.old_state, t.new_state) for t in mine]}")
    reclaim = next((t for t in mine if t.is_claim and t.at >= requeue.at), None)
    if reclaim is None:
        raise BenchError(f"work {key} was not claimed again after its requeue")
    return Recovery(key=key, killed_at=killed_at, lease_expired_at=requeue.old_lease_expires_at.timestamp(),
                    requeued_at=requeue.at.timestamp(), due_at=requeue.available_at.timestamp(),
                    reclaimed_at=reclaim.at.timestamp(), reclaim_attempt=reclaim.attempt)


def one_sample(world: Any, index: int, victim: ManagedProcess, env: dict[str, str], data: Path,
               started: list[ManagedProcess]) -> tuple[Recovery, ManagedProcess, str]:
    """Deploy, let the victim hang in prepare, start the standby (added to ``started`` at once,
    so it is always stopped), kill the victim; returns the recovery, the standby (the next
    victim) and the revision id."""
    from occ.drivers.compute.fake import sleep
    from occ.models.work import revision_reconcile_key

    fake = fake_compute()
    agent = add_agent(world, f"recovery-agent-{index}")
    fake.script("prepare_revision", "*", [sleep(HANG_SECONDS)])
    # The previous sample ended on a sweep tick: start this one at a random phase of the sweep.
    time.sleep(random.uniform(0.0, SWEEP_SECONDS))
    revision, _ = deploy_committed_at(world, agent)
    key = revision_reconcile_key(revision.id)
    wait_until(lambda: revision.id in fake.calls_to("prepare_revision"), timeout=WORK_TIMEOUT_SECONDS,
               what=f"the victim to call prepare_revision for {revision.id}")
    standby = start_worker(env, data, f"bench-recovery-{index + 1}")
    started.append(standby)
    time.sleep(random.uniform(0.0, HEARTBEAT_SECONDS))  # the kill lands anywhere in a heartbeat period
    killed_at = time.time()
    victim.kill()
    row = wait_terminal(key, WORK_TIMEOUT_SECONDS)
    if row["state"] != "succeeded" or row["reason_code"] != "REVISION_ACTIVATED":
        raise BenchError(f"work {key} ended {row['state']} {row['reason_code']} (expected REVISION_ACTIVATED)")
    return recovery_of(key, killed_at, read_transitions(key)), standby, revision.id


def fake_compute() -> FakeCompute:
    """The configured ComputeDriver, which this benchmark requires to be the fake one."""
    from occ.drivers.compute import get_compute_driver
    from occ.drivers.compute.fake import FakeCompute

    driver = get_compute_driver()
    if not isinstance(driver, FakeCompute):
        raise BenchError(f"the recovery benchmark needs the fake ComputeDriver, not {type(driver).__name__}")
    return driver


def effect_check(revision_ids: list[str], agent_ids: list[str]) -> tuple[int, list[str]]:
    """(duplicate effect calls, what they were) across the whole run."""
    from occ.models import AuditEvent

    fake = fake_compute()
    calls = [(call.method, call.target) for call in fake.calls]
    allowed = {("prepare_revision", revision_id): 2 for revision_id in revision_ids}
    found = [f"{method}({target}) x{n}" for (method, target), n in duplicate_effects(calls, allowed=allowed).items()]
    world = fake.world()
    for agent_id in agent_ids:
        starts = world["gateways"].get(agent_id, {}).get("starts", 0)
        if starts != 1:
            found.append(f"gateway starts of {agent_id}: {starts}")
    for revision_id in revision_ids:
        prepares = calls.count(("prepare_revision", revision_id))
        if prepares != 2:
            found.append(f"prepare_revision({revision_id}) made {prepares} times (expected the killed one + 1)")
        events = AuditEvent.objects.filter(action="openclaw.agents.revision.activate",
                                           details__revisionId=revision_id).count()
        if events != 1:
            found.append(f"activation audit events of {revision_id}: {events}")
    return len(found), found


def report(recoveries: list[Recovery], duplicates: int, problems: list[str]) -> list[Verdict]:
    budget = LEASE_SECONDS + SWEEP_SECONDS
    print(f"\nrecovery after SIGKILL, {len(recoveries)} kills; lease {LEASE_SECONDS:g} s, heartbeat "
          f"{HEARTBEAT_SECONDS:g} s, sweep {SWEEP_SECONDS:g} s -> lease + sweep = {budget:g} s")
    print(f"  {'kill':<6}{'recovery s':>11}{'ratio':>8}{'lease left':>12}{'sweep lag':>11}{'backoff':>9}"
          f"{'nudge lag':>11}{'attempt':>9}")
    for index, recovery in enumerate(recoveries, 1):
        left, sweep, backoff, nudge = recovery.parts()
        print(f"  {index:<6}{recovery.seconds:>11.2f}{recovery.seconds / budget:>8.2f}{left:>12.2f}{sweep:>11.2f}"
              f"{backoff:>9.2f}{nudge:>11.2f}{recovery.reclaim_attempt:>9}")
    ratios = [r.seconds / budget for r in recoveries]
    print(f"  ratio median {percentile(ratios, 50):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f}")
    print(f"  duplicate effects: {duplicates}" + (": " + "; ".join(problems) if problems else ""))
    return [
        Verdict("median recovery / (lease + sweep)", ratio(percentile([r.seconds for r in recoveries], 50), budget),
                TARGET, at_most=True, detail=f"max {max(ratios):.2f}"),
        Verdict("duplicate effects", float(duplicates), 0.0, at_most=True),
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=6, help="workers killed, one per sample (default 6)")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
                        help=f"this benchmark's own Redis database (default {DEFAULT_REDIS_URL})")
    args = parser.parse_args(argv)
    if not 1 <= args.kills <= 30:
        parser.error("kills must be 1-30")
    redis_db_number(args.redis_url)
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    started = time.monotonic()
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    flush_redis_db(args.redis_url)
    print_facts("OCC recovery after SIGKILL of a worker mid-job (real celery workers and beat, fake compute)",
                machine_facts(database_url))
    processes: list[ManagedProcess] = []
    with tempfile.TemporaryDirectory(prefix="occ-recovery-bench-") as folder:
        try:
            data = Path(folder)
            env = process_env(
                database_url, data, CELERY_BROKER_URL=args.redis_url, OCC_COMPUTE_DRIVER="fake",
                OCC_FAKE_COMPUTE_STATE=str(data / "fake-compute.json"), OCC_WORKER_LEASE_SECONDS=str(LEASE_SECONDS),
                OCC_WORKER_HEARTBEAT_SECONDS=str(HEARTBEAT_SECONDS), OCC_SWEEP_INTERVAL_SECONDS=str(SWEEP_SECONDS))
            configure_django(env)
            world = seed_world()
            install_transition_log()
            processes.append(start_beat(env, data))
            victim = start_worker(env, data, "bench-recovery-0")
            processes.append(victim)
            print(f"setup took {time.monotonic() - started:.1f} s; load average {loadavg()}")
            recoveries, revision_ids = [], []
            for index in range(args.kills):
                recovery, victim, revision_id = one_sample(world, index, victim, env, data, processes)
                recoveries.append(recovery)
                revision_ids.append(revision_id)
            duplicates, problems = effect_check(revision_ids, [agent.id for agent in world.agents])
            verdicts = report(recoveries, duplicates, problems)
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
