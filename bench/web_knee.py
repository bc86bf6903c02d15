#!/usr/bin/env python
"""The web tier's knee: sustained mixed API load at rising concurrency until p99 doubles.

gunicorn runs OCC as the web process does (project/gunicorn_conf.py: 2 workers of 8 threads) on
PostgreSQL with 100 Agents in a Namespace; wrk (Debian's, a C load generator that takes little
of the 2 CPUs it shares) drives the mix of bench/web_knee.lua (eight reads and two Secret
creates in ten requests) over keep-alive connections, for ``--seconds`` at each of ``--levels``
open connections. Each step prints requests/s, p50/p90/p99 and errors, and the CPU each side
used (the web process tree, PostgreSQL's processes, wrk), sampled with psutil. The knee is the
first level whose p99 is at least twice the p99 at one connection; at it the script names what
saturated first: the side using the most CPU, or the CPUs themselves when all together used
nearly all of them.

Run: ``.venv/bin/python bench/web_knee.py [--seconds 15] [--levels 1,2,4,8,16,32,64]``
(``make bench BENCH=knee``; needs ``wrk``: ``make wrk``). ``DATABASE_URL`` names a PostgreSQL
database containing ``bench`` (dropped and recreated).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script, sys.path[0] is bench/ itself: the project root first
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import psutil

from bench.api_latency import configure_django, free_port, gunicorn_server, seed
from bench.verdicts import Verdict, print_skip, print_verdicts
from bench.worker_support import BenchError, bench_database_url, bench_main, loadavg, ratio, recreate_database

DEFAULT_DATABASE = "occ_knee_bench"
SCRIPT = Path(__file__).resolve().parent / "web_knee.lua"
THROUGHPUT_TARGET = 1.5  # requests/s at the knee ÷ at one connection: the threads serve concurrency
SATURATED_SHARE = 0.9  # of every CPU: then the machine, not one side, is what ran out


@dataclass(frozen=True)
class Step:
    connections: int
    requests_per_second: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    errors: int
    refused: str  # one refused response, when there were any
    cpu: dict[str, float]  # side -> CPUs used on average over the step


class CpuMeter:
    """CPU seconds used by each side while a step runs, summed over their processes: the web
    process tree, PostgreSQL's processes and wrk (this process's child while a step runs); read
    every 0.5 s, so processes that come and go are counted."""

    SIDES = ("web", "database", "wrk")

    def __init__(self, web: psutil.Process, database: list[psutil.Process]) -> None:
        self.web = web
        self.database = database
        self.seen: dict[int, float] = {}
        self.side_of: dict[int, str] = {}

    def _processes(self) -> list[tuple[str, psutil.Process]]:
        found = [("database", process) for process in self.database]
        try:
            found += [("web", process) for process in (self.web, *self.web.children(recursive=True))]
            found += [("wrk", process) for process in psutil.Process().children() if process.name() == "wrk"]
        except psutil.Error:
            pass
        return found

    def _sample(self) -> None:
        for side, process in self._processes():
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue
            self.seen[process.pid] = times.user + times.system
            self.side_of[process.pid] = side

    def measure(self, seconds_of: threading.Thread) -> dict[str, float]:
        self._sample()
        start = dict(self.seen)
        started = time.monotonic()
        while seconds_of.is_alive():
            self._sample()
            seconds_of.join(0.5)
        self._sample()
        wall = time.monotonic() - started
        used: dict[str, float] = dict.fromkeys(self.SIDES, 0.0)
        for pid, seconds in self.seen.items():
            used[self.side_of[pid]] += seconds - start.get(pid, 0.0)
        return {side: value / wall for side, value in used.items()}


def postgres_processes() -> list[psutil.Process]:
    """PostgreSQL's server processes on this machine (read only: their CPU time)."""
    found = []
    for process in psutil.process_iter(["name"]):
        if process.info["name"] in ("postgres", "postmaster"):
            found.append(process)
    return found


def wrk_step(wrk: str, base_url: str, args: Sequence[str], connections: int, seconds: int) -> dict[str, Any]:
    threads = str(min(connections, 2))
    tag = f"{connections}x{time.time_ns() % 10**12}"  # each run's Secrets have names of their own
    command = [wrk, "-t", threads, "-c", str(connections), "-d", f"{seconds}s", "--timeout", "10s",
               "-s", str(SCRIPT), base_url, "--", *args, tag]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("KNEE "):
            return json.loads(line[len("KNEE "):])
    raise BenchError(f"wrk printed no figures (exit {done.returncode}):\n{done.stdout[-1500:]}{done.stderr[-1500:]}")


def run_step(wrk: str, base_url: str, script_args: Sequence[str], connections: int, seconds: int,
             meter: CpuMeter) -> Step:
    result: dict[str, dict[str, Any]] = {}
    failure: list[BaseException] = []

    def load() -> None:
        try:
            result["figures"] = wrk_step(wrk, base_url, script_args, connections, seconds)
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=load)
    worker.start()
    cpu = meter.measure(worker)
    if failure:
        raise failure[0]
    figures = result["figures"]
    errors = int(sum(figures[key] for key in ("connect", "read", "write", "status", "timeout")))
    return Step(connections, figures["requests"] / figures["seconds"], figures["p50_ms"], figures["p90_ms"],
                figures["p99_ms"], errors, str(figures.get("refused", "")), cpu)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=15, help="seconds of load at each level (default 15)")
    parser.add_argument("--levels", default="1,2,4,8,16,32,64", help="open connections, ascending")
    parser.add_argument("--agents", type=int, default=100, help="Agents in the listed Namespace (default 100)")
    args = parser.parse_args(argv)
    args.levels = [int(level) for level in args.levels.split(",")]
    if args.levels[0] != 1 or args.levels != sorted(set(args.levels)):
        parser.error("--levels: ascending, starting at 1")
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    wrk = shutil.which("wrk")
    if wrk is None:
        print_skip("the web tier's knee: wrk is not installed (`make wrk`: Debian's wrk)")
        return []
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    with tempfile.TemporaryDirectory(prefix="occ-bench-knee-") as data_dir:
        configure_django(database_url, Path(data_dir))
        seeded = seed([args.agents])
        from occ.models import Agent

        agent_id = Agent.objects.filter(namespace_id=seeded.namespace_id).values_list("id", flat=True).first()
        script_args = [seeded.key, seeded.namespace_id, str(agent_id)]
        os.environ["OCC_LOG_LEVEL"] = "WARNING"
        with gunicorn_server(free_port(), Path(data_dir) / "gunicorn.log", production=True) as base_url:
            web = next(p for p in psutil.Process().children() if "gunicorn" in " ".join(p.cmdline()))
            meter = CpuMeter(web, postgres_processes())
            wrk_step(wrk, base_url, script_args, 4, max(2, args.seconds // 3))  # warm: every thread connected
            print(f"OCC web tier under mixed API load (wrk, {args.seconds} s per level, {os.cpu_count()} CPUs)")
            print(f"  {'conns':>5}{'req/s':>9}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'errors':>8}"
                  f"{'web cpu':>9}{'db cpu':>8}{'wrk cpu':>9}")
            steps = []
            for connections in args.levels:
                step = run_step(wrk, base_url, script_args, connections, args.seconds, meter)
                steps.append(step)
                print(f"  {step.connections:>5}{step.requests_per_second:>9.1f}{step.p50_ms:>9.2f}{step.p90_ms:>9.2f}"
                      f"{step.p99_ms:>9.2f}{step.errors:>8}{step.cpu['web']:>9.2f}{step.cpu['database']:>8.2f}"
                      f"{step.cpu['wrk']:>9.2f}")
                if step.errors:
                    print(f"        refused, for example: {step.refused[:120]}")
    return report(steps)


def report(steps: list[Step]) -> list[Verdict]:
    first = steps[0]
    knee = next((step for step in steps[1:] if step.p99_ms >= 2 * first.p99_ms), None)
    if knee is None:
        print(f"\nno knee up to {steps[-1].connections} connections: p99 stayed under twice {first.p99_ms:.2f} ms")
        at = steps[-1]
    else:
        at = knee
        print(f"\nknee at {knee.connections} connections: p99 {knee.p99_ms:.2f} ms >= 2 x {first.p99_ms:.2f} ms")
    total = sum(at.cpu.values())
    cpus = os.cpu_count() or 1
    busiest = max(at.cpu, key=lambda side: at.cpu[side])
    saturated = (f"the CPUs ({total:.2f} of {cpus} in use; the web process {at.cpu['web']:.2f})"
                 if total >= SATURATED_SHARE * cpus else f"{busiest} ({at.cpu[busiest]:.2f} CPUs of {total:.2f} used)")
    print(f"saturated first: {saturated}; load average now {loadavg()}")
    detail = (f"knee at {at.connections} connections" if knee else f"no knee up to {at.connections}") + \
        f", {at.requests_per_second:.0f} req/s, saturated first: {saturated}"
    refused = [step for step in steps if step.errors]
    return [Verdict("requests/s at the knee ÷ at 1 connection", ratio(at.requests_per_second,
                                                                      first.requests_per_second),
                    THROUGHPUT_TARGET, at_most=False, detail=detail),
            Verdict("responses refused or failed, every level", float(sum(step.errors for step in steps)), 0.0,
                    at_most=True, detail=refused[0].refused[:80] if refused else "")]


def main(argv: Sequence[str] | None = None) -> int:
    def run_and_print(args: argparse.Namespace) -> list[Verdict]:
        verdicts = run(args)
        if verdicts:
            print_verdicts(verdicts)
        return verdicts

    return bench_main(parse_args, run_and_print, argv)


if __name__ == "__main__":
    sys.exit(main())
