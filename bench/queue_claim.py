#!/usr/bin/env python
"""The queue's own claim + complete path against pgbench and procrastinate, side by side.

Arms, each draining the same number of no-op jobs per round, at concurrency 1 and 4:

    ours           provisioning.queue.run_work() in C worker processes: the claim (the row
                   locked FOR UPDATE SKIP LOCKED, then updated), the heartbeat registration, a
                   no-op job (Complete), the fenced completion. No Celery, no driver, no audit.
    pgbench        the physical ceiling: reliability-perf.md §3.1 claim.sql adapted to the
                   controller_work table (claim with SKIP LOCKED + fenced completion; two
                   commits per job), ``pgbench -c C -j min(C,2)``.
    procrastinate  procrastinate 3.x (PsycopgConnector, async no-op task,
                   ``run_worker_async(concurrency=C, wait=False, listen_notify=False)``).

Targets (pooled rates, per concurrency): ours / pgbench >= 0.6; ours / procrastinate >= 2 (issue 13: the
single readable claim keeps at least twice procrastinate's rate; the kept cursor it replaced reached 3).
The report also prints pgbench / procrastinate: with two fsync'd commits per job, ours cannot
pass that ceiling.
Arms alternate within each round and the order rotates every round; every round starts from
a truncated, vacuumed table so no arm inherits another's dead rows.

``--profile`` adds where one worker process's time goes: ms per job of the full path and of
claim + apply_outcome without the heartbeat thread, then a cProfile listing of the queue's
frames.

Run: ``make bench-worker`` or ``.venv/bin/python bench/queue_claim.py`` (``--help``).
``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/occ_queue_bench``) must name
a database containing ``bench``: it is dropped and recreated.

One module of ~560 lines: a benchmark script that runs on its own; its arms are compared
side by side and read together.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script (or a spawned child of one): the project root first
    _root = str(Path(__file__).resolve().parent.parent)
    if _root not in sys.path:
        sys.path.insert(0, _root)

import argparse
import asyncio
import contextlib
import cProfile
import io
import logging
import multiprocessing
import os
import pstats
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from bench.verdicts import Verdict, print_verdicts
from bench.worker_support import (
    BenchError,
    bench_database_url,
    bench_main,
    configure_django,
    libpq_url,
    loadavg,
    machine_facts,
    migrate,
    parse_pgbench,
    percentile,
    pgbench_path,
    print_closing,
    print_facts,
    process_env,
    ratio,
    recreate_database,
)

DEFAULT_DATABASE = "occ_queue_bench"
CONCURRENCIES = (1, 4)
TARGET_VS_PGBENCH = 0.6
TARGET_VS_PROCRASTINATE = 2.0
NOOP_CODE = "BENCH_NOOP"
BENCH_LEASE_SECONDS = 15
ROUND_TIMEOUT_SECONDS = 120.0
ARMS = ("ours", "pgbench", "procrastinate")
# The profile lists the queue's own frames, the ORM and driver calls beneath them, and threads.
PROFILE_FILTER = r"provisioning|django/db|psycopg/(connection|cursor)|threading"


# --- rows ---------------------------------------------------------------------------------


def work_table() -> str:
    from occ.models import ControllerWork

    return ControllerWork._meta.db_table


def reset_work(jobs: int, namespace_id: str, round_number: int) -> None:
    """An empty, vacuumed work table, then ``jobs`` due no-op rows, each its own resource."""
    from django.db import connection

    table = connection.ops.quote_name(work_table())
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {table} CASCADE")
        cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute(f"""
            INSERT INTO {table} (idempotency_key, job, namespace_id, agent_id, actor_id, agent_target, state,
                                 available_at, attempt_count, max_attempts, created_at, updated_at)
            SELECT 'agent:agt_bench' || lpad(i::text, 6, '0') || ':stopped:' || %(round)s, 'agent_stop', %(ns)s,
                   'agt_bench' || lpad(i::text, 6, '0'), 'prn_bench', 'stopped', 'queued',
                   now() - interval '10 s' + i * interval '1 microsecond', 0, 5, now(), now()
              FROM generate_series(1, %(jobs)s) AS i""", {"round": round_number, "ns": namespace_id, "jobs": jobs})
        cursor.execute(f"ANALYZE {table}")


def remaining_work() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT state, count(*) FROM {connection.ops.quote_name(work_table())} GROUP BY state")
        return dict(cursor.fetchall())


def check_drained(arm: str, jobs: int) -> None:
    states = remaining_work()
    if states.get("succeeded", 0) != jobs or len(states) != 1:
        raise BenchError(f"{arm}: expected {jobs} succeeded rows, found {states}.")


# --- ours: worker processes ---------------------------------------------------------------


def _noop_job(claim: Any) -> Any:
    from provisioning.outcomes import Complete

    return Complete(NOOP_CODE)


def _drain() -> int:
    """run_work() until nothing is queued: the no-op job through the real queue path."""
    from occ.models import ControllerWork, WorkState
    from provisioning import queue

    done = 0
    deadline = time.monotonic() + ROUND_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if queue.run_work() is not None:
            done += 1
        elif not ControllerWork.objects.filter(state=WorkState.QUEUED).exists():
            return done
    raise BenchError(f"a worker process did not drain the queue within {ROUND_TIMEOUT_SECONDS:g} s")


def _claim_and_apply() -> int:
    """The queue's claim and fenced completion without run_claimed (no heartbeat thread)."""
    from provisioning import queue
    from provisioning.outcomes import Complete

    done = 0
    while (claim := queue.claim()) is not None:
        queue.apply_outcome(claim, Complete(NOOP_CODE))
        done += 1
    return done


BREAKDOWN: dict[str, Callable[[], int]] = {
    "run_work (full path)": _drain,
    "claim + apply_outcome (no heartbeat)": _claim_and_apply,
}


def _breakdown(namespace_id: str, jobs: int, rounds: int) -> str:
    """ms per job of each variant, interleaved over ``rounds`` rounds of ``jobs`` rows."""
    times: dict[str, list[float]] = {name: [] for name in BREAKDOWN}
    for round_number in range(rounds):
        for name in rotated(list(BREAKDOWN), round_number):
            reset_work(jobs, namespace_id, 700 + round_number)
            started = time.perf_counter()
            done = BREAKDOWN[name]()
            elapsed = time.perf_counter() - started
            if done != jobs:
                raise BenchError(f"{name}: {done} of {jobs} jobs")
            times[name].append(elapsed / jobs * 1000)
    return "".join(f"  {name:<46}{percentile(values, 50):>7.2f} ms/job  [{min(values):.2f}-{max(values):.2f}]\n"
                   for name, values in times.items())


def ours_process(conn: Connection, env: dict[str, str]) -> None:
    """One worker process: set up once, then one drain per ``go`` (or ``profile``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when this ends
    configure_django(env)
    from django.db import connection

    from provisioning import queue

    queue.resolve_job = lambda work: _noop_job  # the no-op job in place of job_for
    connection.ensure_connection()
    conn.send("ready")
    while True:
        command = conn.recv()
        if command == "stop":
            break
        try:
            if isinstance(command, tuple) and command[0] == "breakdown":
                conn.send(("ok", 0, 0.0, 0.0, _breakdown(*command[1:])))
                continue
            if command == "profile":
                profiler = cProfile.Profile()
                started = time.perf_counter()
                done = profiler.runcall(_drain)
                ended = time.perf_counter()
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(PROFILE_FILTER, 28)
                conn.send(("ok", done, started, ended, text.getvalue()))
                continue
            started = time.perf_counter()
            done = _drain()
            conn.send(("ok", done, started, time.perf_counter(), ""))
        except Exception as exc:  # reported to the parent, which stops the run
            conn.send(("error", f"{type(exc).__name__}: {exc}", 0.0, 0.0, ""))
    connection.close()


class OursPool:
    """``size`` worker processes (spawned: no inherited connections), reused across rounds."""

    def __init__(self, size: int, env: dict[str, str]) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipes: list[Connection] = []
        self.processes = []
        for _ in range(size):
            parent, child = context.Pipe()
            process = context.Process(target=ours_process, args=(child, env), daemon=True)
            process.start()
            self.pipes.append(parent)
            self.processes.append(process)
        for pipe in self.pipes:
            if not pipe.poll(60):
                raise BenchError("a worker process did not start within 60 s")
            pipe.recv()

    def run(self, concurrency: int, command: str | tuple[Any, ...] = "go") -> tuple[int, float, str]:
        """(jobs done, seconds from the first start to the last end, profile text)."""
        used = self.pipes[:concurrency]
        for pipe in used:
            pipe.send(command)
        results = []
        for pipe in used:
            if not pipe.poll(ROUND_TIMEOUT_SECONDS + 30):
                raise BenchError("a worker process did not answer")
            results.append(pipe.recv())
        errors = [r[1] for r in results if r[0] == "error"]
        if errors:
            raise BenchError(f"ours: {errors[0]}")
        done = sum(r[1] for r in results)
        elapsed = max(r[3] for r in results) - min(r[2] for r in results)
        return done, elapsed, "".join(r[4] for r in results)

    def close(self) -> None:
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                pipe.send("stop")
        for process in self.processes:
            process.join(timeout=10)
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGKILL)  # our own child, by PID
                process.join(timeout=5)


def prepared_statements_note() -> str:
    """Whether this run's connections prepare statements (``OCC_DATABASE_PREPARED_STATEMENTS``)."""
    from django.db import connection

    options = connection.settings_dict["OPTIONS"]
    if options.get("server_side_binding") is True and options.get("prepare_threshold") is not None:
        return f"on (server-side binding, prepare_threshold {options['prepare_threshold']})"
    return "off (client-side binding)"


def statements_per_job(sample: int = 20) -> float:
    """SQL statements one no-op job costs on the queue path, counted in this process."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from provisioning import queue

    original = queue.resolve_job
    queue.resolve_job = lambda work: _noop_job
    try:
        with CaptureQueriesContext(connection) as captured:
            for _ in range(sample):
                if queue.run_work() is None:
                    raise BenchError("no row to count statements on")
    finally:
        queue.resolve_job = original
    return len(captured.captured_queries) / sample


# --- pgbench ------------------------------------------------------------------------------


COMPLETE_SQL = """UPDATE {table} SET state = 'succeeded', claim_token = NULL, lease_expires_at = NULL,
       completed_at = statement_timestamp(), updated_at = statement_timestamp(),
       last_attempt_at = statement_timestamp(), reason_code = '{code}', last_attempt_code = '{code}'
 WHERE idempotency_key = ':key' AND claim_token = ':token' AND state = 'claimed'
   AND lease_expires_at > statement_timestamp();
"""

CEILING_CLAIM_SQL = """UPDATE {table} SET state = 'claimed', claim_token = md5(random()::text),
       attempt_count = attempt_count + 1, updated_at = statement_timestamp(),
       lease_expires_at = statement_timestamp() + interval '{lease} s'
 WHERE idempotency_key = (SELECT idempotency_key FROM {table}
                           WHERE state = 'queued' AND available_at <= statement_timestamp()
                           ORDER BY available_at LIMIT 1 FOR UPDATE SKIP LOCKED)
 RETURNING idempotency_key AS key, claim_token AS token
"""


def one_line(statement: str) -> str:
    """pgbench reads one SQL command per line (a meta-command ends the line)."""
    return " ".join(statement.split())


def pgbench_scripts(folder: Path) -> dict[str, Path]:
    """The ceiling's claim + complete script."""
    from django.db import connection

    table = connection.ops.quote_name(work_table())
    complete = one_line(COMPLETE_SQL.format(table=table, code=NOOP_CODE))
    ceiling = one_line(CEILING_CLAIM_SQL.format(table=table, lease=BENCH_LEASE_SECONDS))
    scripts = {"pgbench": folder / "claim_ceiling.sql"}
    scripts["pgbench"].write_text(f"{ceiling} \\gset\n{complete}\n")
    return scripts


def run_pgbench(binary: str, script: Path, database_url: str, concurrency: int, jobs: int) -> float:
    if jobs % concurrency:
        raise BenchError("jobs per round must be a multiple of every concurrency")
    command = [binary, "-n", "-M", "simple", "-f", str(script), "-c", str(concurrency), "-j", str(min(concurrency, 2)),
               "-t", str(jobs // concurrency), libpq_url(database_url)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=ROUND_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"pgbench did not finish within {ROUND_TIMEOUT_SECONDS:g} s") from exc
    return parse_pgbench(result.stdout + result.stderr)


# --- procrastinate ------------------------------------------------------------------------


class Procrastinate:
    """procrastinate's App on the same server and database, with one async no-op task."""

    def __init__(self, database_url: str, pool_size: int) -> None:
        import procrastinate

        # It warns that an App built in a script's main module cannot be found by its CLI: not used here.
        logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)
        self.loop = asyncio.new_event_loop()
        self.app = procrastinate.App(connector=procrastinate.PsycopgConnector(
            conninfo=libpq_url(database_url), min_size=pool_size, max_size=pool_size))

        @self.app.task(name="bench_noop", queue="bench")
        async def noop() -> None:
            return None

        self.task = noop
        self.loop.run_until_complete(self.app.open_async())
        self.loop.run_until_complete(self.app.schema_manager.apply_schema_async())

    def _execute(self, statement: str) -> None:
        async def run() -> None:
            await self.app.connector.execute_query_async(statement)

        self.loop.run_until_complete(run())

    def reset(self, jobs: int) -> None:
        self._execute("TRUNCATE procrastinate_events, procrastinate_jobs, procrastinate_periodic_defers CASCADE")
        self.loop.run_until_complete(self.task.batch_defer_async(*({} for _ in range(jobs))))
        self._execute("ANALYZE procrastinate_jobs")

    def drain(self, concurrency: int) -> float:
        started = time.perf_counter()
        self.loop.run_until_complete(asyncio.wait_for(self.app.run_worker_async(
            queues=["bench"], concurrency=concurrency, wait=False, listen_notify=False,
            install_signal_handlers=False), timeout=ROUND_TIMEOUT_SECONDS))
        return time.perf_counter() - started

    def succeeded(self) -> int:
        async def count() -> int:
            row = await self.app.connector.execute_query_one_async(
                "SELECT count(*) AS n FROM procrastinate_jobs WHERE status = 'succeeded'")
            return int(row["n"])

        return self.loop.run_until_complete(count())

    def close(self) -> None:
        self.loop.run_until_complete(self.app.close_async())
        self.loop.close()


# --- rounds -------------------------------------------------------------------------------


@dataclass
class ArmRates:
    jobs: int = 0
    seconds: float = 0.0
    rounds: list[float] = field(default_factory=list)  # jobs/s per round

    def add(self, jobs: int, seconds: float) -> None:
        self.jobs += jobs
        self.seconds += seconds
        self.rounds.append(jobs / seconds)

    @property
    def pooled(self) -> float:
        return self.jobs / self.seconds


def rotated(items: Sequence[str], shift: int) -> list[str]:
    shift %= len(items)
    return list(items[shift:]) + list(items[:shift])


@dataclass
class Context:
    database_url: str
    namespace_id: str
    pool: OursPool
    procrastinate: Procrastinate
    scripts: dict[str, Path]
    pgbench: str


def run_arm(ctx: Context, arm: str, concurrency: int, jobs: int, round_number: int) -> float:
    """Prepare (untimed), run (timed), check; returns the arm's seconds for ``jobs``."""
    if arm == "procrastinate":
        ctx.procrastinate.reset(jobs)
        seconds = ctx.procrastinate.drain(concurrency)
        if ctx.procrastinate.succeeded() != jobs:
            raise BenchError(f"procrastinate: {ctx.procrastinate.succeeded()} of {jobs} jobs succeeded.")
        return seconds
    reset_work(jobs, ctx.namespace_id, round_number)
    if arm == "ours":
        done, seconds, _ = ctx.pool.run(concurrency)
        if done != jobs:
            raise BenchError(f"{arm}: {done} jobs done, expected {jobs}.")
    else:
        seconds = jobs / run_pgbench(ctx.pgbench, ctx.scripts[arm], ctx.database_url, concurrency, jobs)
    check_drained(arm, jobs)
    return seconds


def measure(ctx: Context, concurrency: int, rounds: int, jobs: int) -> dict[str, ArmRates]:
    results = {arm: ArmRates() for arm in ARMS}
    for round_number in range(rounds):
        for arm in rotated(ARMS, round_number):
            results[arm].add(jobs, run_arm(ctx, arm, concurrency, jobs, round_number))
    return results


def per_round(results: dict[str, ArmRates], base: str) -> list[float]:
    return [ratio(a, b) for a, b in zip(results["ours"].rounds, results[base].rounds, strict=True)]


def report(concurrency: int, results: dict[str, ArmRates], rounds: int, jobs: int) -> list[Verdict]:
    print(f"\nconcurrency {concurrency}: {rounds} interleaved rounds x {jobs} jobs per arm")
    print(f"  {'arm':<16}{'jobs':>7}{'jobs/s (pooled)':>17}{'per round: median [min-max]':>32}")
    for arm in ARMS:
        rates = results[arm]
        spread = f"{percentile(rates.rounds, 50):.0f} [{min(rates.rounds):.0f}-{max(rates.rounds):.0f}]"
        print(f"  {arm:<16}{rates.jobs:>7}{rates.pooled:>17.1f}{spread:>32}")
    verdicts = []
    for base, target, label in (("pgbench", TARGET_VS_PGBENCH, "ours / pgbench"),
                                ("procrastinate", TARGET_VS_PROCRASTINATE, "ours / procrastinate")):
        rounds_ratio = per_round(results, base)
        detail = (f"per round {percentile(rounds_ratio, 50):.2f} [{min(rounds_ratio):.2f}-{max(rounds_ratio):.2f}]")
        verdicts.append(Verdict(f"c={concurrency} {label}", ratio(results["ours"].pooled, results[base].pooled),
                                target, at_most=False, detail=detail))
    print(f"  ceiling for ours / procrastinate: pgbench / procrastinate = "
          f"{ratio(results['pgbench'].pooled, results['procrastinate'].pooled):.2f}")
    return verdicts


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds per concurrency (default 6)")
    parser.add_argument("--jobs", type=int, default=400, help="jobs per arm per round, a multiple of 4 (default 400)")
    parser.add_argument("--profile", action="store_true",
                        help="also time variants of ours in one process and profile a c=1 round (cProfile)")
    args = parser.parse_args(argv)
    if not (1 <= args.rounds <= 50 and 4 <= args.jobs <= 20000 and args.jobs % 4 == 0):
        parser.error("rounds must be 1-50; jobs 4-20000 and a multiple of 4")
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    started = time.monotonic()
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    print_facts("OCC queue claim + complete vs pgbench and procrastinate (ratios in one run)",
                machine_facts(database_url))
    with tempfile.TemporaryDirectory(prefix="occ-queue-bench-") as folder:
        env = process_env(database_url, Path(folder), OCC_WORKER_LEASE_SECONDS=str(BENCH_LEASE_SECONDS),
                          OCC_WORKER_HEARTBEAT_SECONDS="5")
        configure_django(env)
        migrate()
        import procrastinate

        from occ.models import Namespace, NamespaceStatus

        namespace = Namespace.objects.create(name="bench", status=NamespaceStatus.READY)
        reset_work(40, namespace.id, 999)
        print(f"  {'SQL per ours job':<24}{statements_per_job(20):.1f} statements "
              "(claim: lock and update; fenced completion)")
        print(f"  {'prepared statements':<24}{prepared_statements_note()}")
        print(f"  {'procrastinate':<24}{procrastinate.__version__}")
        version = subprocess.run([pgbench_path(), "--version"], capture_output=True, text=True, check=False)
        print(f"  {'pgbench':<24}{version.stdout.strip()}")
        pool = OursPool(max(CONCURRENCIES), env)
        queue_app = None
        try:
            queue_app = Procrastinate(database_url, pool_size=max(CONCURRENCIES) + 2)
            ctx = Context(database_url, namespace.id, pool, queue_app, pgbench_scripts(Path(folder)), pgbench_path())
            for concurrency in CONCURRENCIES:  # one warm-up round, not counted
                for arm in ARMS:
                    run_arm(ctx, arm, concurrency, min(args.jobs, 40), 900)
            print(f"setup took {time.monotonic() - started:.1f} s; load average {loadavg()}")
            verdicts: list[Verdict] = []
            for concurrency in CONCURRENCIES:
                results = measure(ctx, concurrency, args.rounds, args.jobs)
                verdicts.extend(report(concurrency, results, args.rounds, args.jobs))
            if args.profile:
                profile_round(ctx, args.jobs)
        finally:
            if queue_app is not None:
                queue_app.close()
            pool.close()
    print_verdicts(verdicts)
    print_closing(started, suffix="Targets apply to the pooled ratios; absolute rates are context, not gates.")
    return verdicts


def profile_round(ctx: Context, jobs: int) -> None:
    """Where one worker process's time goes at c=1: variants of the path, then cProfile."""
    _, _, text = ctx.pool.run(1, ("breakdown", ctx.namespace_id, jobs, 3))
    print(f"\nprofile: one worker process at c=1, median of 3 interleaved rounds x {jobs} jobs per variant")
    print(text, end="")
    reset_work(jobs, ctx.namespace_id, 998)
    done, seconds, text = ctx.pool.run(1, "profile")
    print(f"\nprofile: ours at c=1 under cProfile, {done} jobs in {seconds:.2f} s (cProfile slows it down)")
    print(text)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
