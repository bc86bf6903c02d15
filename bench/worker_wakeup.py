#!/usr/bin/env python
"""Wake-up latency: deploy committed -> claim started, with the Redis broker, ÷ the sweep interval.

A real ``celery worker`` (prefork, concurrency 2 as in the Procfile) and ``celery beat`` (the
sweep at its default interval) run against PostgreSQL and Redis on loopback with the fake
ComputeDriver. This process deploys one Agent again and again through ``agent_deploy``,
each time after the previous revision's work finished:

- committed: the wall clock in the first on-commit callback of the deploy's transaction
  (before the service's own on-commit nudge is published);
- claim started: the database clock when the claim statement turned the work row from
  ``queued`` to ``claimed``, recorded by a trigger this benchmark installs on its own
  database (``bench_work_transitions``). Same host, same clock.

Target: p50 ÷ OCC_SWEEP_INTERVAL_SECONDS <= 0.05 (the nudge, not the sweep, wakes the worker).

Run: ``make bench-worker`` or ``.venv/bin/python bench/worker_wakeup.py`` (``--help``).
``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/occ_wakeup_bench``) must name a
database containing ``bench``: it is dropped and recreated. ``--redis-url`` names this
benchmark's own Redis database number (flushed before and after).
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
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from bench.verdicts import Verdict, print_verdicts
from bench.worker_support import (
    BenchError,
    ManagedProcess,
    add_agent,
    bench_database_url,
    bench_main,
    configure_django,
    deploy_committed_at,
    first_claim_after,
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
)

DEFAULT_DATABASE = "occ_wakeup_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
TARGET = 0.05
WORKER_CONCURRENCY = 2
WARMUP_DEPLOYS = 3
WORK_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Sample:
    key: str
    committed: float  # epoch seconds
    claimed: float  # epoch seconds
    attempts: int

    @property
    def delay_ms(self) -> float:
        return (self.claimed - self.committed) * 1000


def wakeup_samples(commits: dict[str, float], transitions: list) -> list[Sample]:
    """One sample per committed key: its first claim at or after the commit."""
    samples = []
    for key, committed in commits.items():
        claim = first_claim_after(transitions, key, committed - 0.5)  # a clock step never hides a claim
        if claim is None:
            raise BenchError(f"work {key} was never claimed")
        samples.append(Sample(key, committed, claim.at.timestamp(), claim.attempt))
    return samples


RECEIVED = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): INFO/MainProcess\] "
                      r"Task provisioning\.run_work\[[0-9a-f-]+\] received$", re.MULTILINE)


def received_times(worker_log: str) -> list[float]:
    """Epoch seconds of every ``run_work`` message the worker's main process received
    (celery's own INFO line; the worker logs in UTC, as this machine's clock runs)."""
    return [datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC).timestamp()
            for match in RECEIVED.finditer(worker_log)]


def broker_hop_ms(sample: Sample, received: Sequence[float]) -> float | None:
    """Commit -> the first ``run_work`` received between the commit and the claim (the log
    has millisecond timestamps, so allow one millisecond either side)."""
    inside = [moment for moment in received if sample.committed - 0.001 <= moment <= sample.claimed + 0.001]
    return (inside[0] - sample.committed) * 1000 if inside else None


def deploy_and_wait(world, agent) -> tuple[str, float]:
    from occ.models.work import revision_reconcile_key

    revision, committed = deploy_committed_at(world, agent)
    key = revision_reconcile_key(revision.id)
    row = wait_terminal(key, WORK_TIMEOUT_SECONDS)
    if row["state"] != "succeeded" or row["reason_code"] != "REVISION_ACTIVATED":
        raise BenchError(f"work {key} ended {row['state']} {row['reason_code']} (expected REVISION_ACTIVATED)")
    return key, committed


def report(samples: list[Sample], sweep_seconds: float, received: Sequence[float]) -> list[Verdict]:
    delays = [s.delay_ms for s in samples]
    hops = [hop for hop in (broker_hop_ms(s, received) for s in samples) if hop is not None]
    p50 = percentile(delays, 50)
    slow = sum(1 for d in delays if d >= sweep_seconds * 1000 / 2)
    print(f"\ndeploy committed -> claim started, {len(samples)} deploys (after {WARMUP_DEPLOYS} warm-up deploys)")
    print(f"  {'p50 ms':>8}{'p90 ms':>8}{'min ms':>8}{'max ms':>8}   sweep interval {sweep_seconds:g} s")
    print(f"  {p50:>8.1f}{percentile(delays, 90):>8.1f}{min(delays):>8.1f}{max(delays):>8.1f}")
    print(f"  samples at or above half a sweep interval (woken by the sweep, not the nudge): {slow}")
    print("  every delay (ms): " + " ".join(f"{d:.0f}" for d in delays))
    if hops:
        print(f"  split (p50, from the worker log's ms timestamps, {len(hops)} samples): commit -> message received "
              f"{percentile(hops, 50):.1f} ms; received -> claim started {p50 - percentile(hops, 50):.1f} ms")
    return [Verdict("p50 wake-up / sweep interval", ratio(p50 / 1000, sweep_seconds), TARGET, at_most=True,
                    detail=f"p50 {p50:.1f} ms")]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=30, help="measured deploys (default 30)")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
                        help=f"this benchmark's own Redis database (default {DEFAULT_REDIS_URL})")
    args = parser.parse_args(argv)
    if not 5 <= args.samples <= 200:
        parser.error("samples must be 5-200")
    redis_db_number(args.redis_url)
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    started = time.monotonic()
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    flush_redis_db(args.redis_url)
    print_facts("OCC wake-up: deploy committed -> claim started (Redis broker, real celery worker and beat)",
                machine_facts(database_url))
    processes: list[ManagedProcess] = []
    with tempfile.TemporaryDirectory(prefix="occ-wakeup-bench-") as folder:
        try:
            data = Path(folder)
            env = process_env(database_url, data, CELERY_BROKER_URL=args.redis_url, OCC_COMPUTE_DRIVER="fake",
                              OCC_FAKE_COMPUTE_STATE=str(data / "fake-compute.json"))
            env.pop("OCC_SWEEP_INTERVAL_SECONDS", None)  # the default interval is what is measured
            configure_django(env)
            from django.conf import settings

            sweep_seconds = settings.OCC_SWEEP_INTERVAL_SECONDS
            world = seed_world()
            agent = add_agent(world, "wakeup-agent")
            install_transition_log()
            processes.append(start_beat(env, data))
            processes.append(start_worker(env, data, "bench-wakeup", concurrency=WORKER_CONCURRENCY))
            print(f"  {'broker':<24}{args.redis_url}")
            print(f"  {'worker':<24}celery prefork, concurrency {WORKER_CONCURRENCY}; beat sweep every "
                  f"{sweep_seconds:g} s")
            for _ in range(WARMUP_DEPLOYS):
                deploy_and_wait(world, agent)
            print(f"setup took {time.monotonic() - started:.1f} s; load average {loadavg()}")
            commits: dict[str, float] = {}
            for _ in range(args.samples):
                time.sleep(random.uniform(0.05, 0.3))  # the worker idles on the broker between deploys
                key, committed = deploy_and_wait(world, agent)
                commits[key] = committed
            verdicts = report(wakeup_samples(commits, read_transitions()), sweep_seconds,
                              received_times(processes[-1].log()))
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
