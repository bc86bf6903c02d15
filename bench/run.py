#!/usr/bin/env python
"""Every benchmark in one run, and one table of every figure against its target.

``make bench`` runs each benchmark script under ``bench/`` with its documented arguments, one
after the other (they would compete for the CPUs side by side), and prints one table: the
benchmark, the figure, its target, the measured value and PASS or MISS; a benchmark that cannot
run here (no OpenClaw runtime, no test cluster) is SKIPPED with its reason, one that crashed is
FAILED. ``--tiny`` runs each at the smallest size that still goes through every step: the figures
then mean nothing, but a benchmark that no longer runs is found (``tests/bench/test_every_benchmark.py``).

Each script records its verdicts through ``bench.verdicts`` into a file this runner names
(``OCC_BENCH_VERDICTS``); what a script prints is passed through (kept in a log with ``--tiny``).
Each benchmark uses its own database (its name contains ``bench``; it is dropped and recreated)
and Redis database, so the environment's ``DATABASE_URL`` and broker are not passed on. The data
directory is (``OCC_DATA_DIR``, else ``.occ/`` of ``make init``): the benchmarks that check the
runtime or build a driver read the settings, which need one; those that write make their own.

Run: ``.venv/bin/python -m bench.run [--tiny] [--only api,queue]``. Exit status 1 when a
benchmark failed or recorded nothing; a MISS is a figure, not a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script, sys.path[0] is bench/ itself: the project root first
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.verdicts import RECORD_ENV, Verdict

ROOT = Path(__file__).resolve().parent.parent
# What the benchmarks choose for themselves; the caller's would point them at its own services.
NOT_PASSED_ON = ("DATABASE_URL", "CELERY_BROKER_URL", "BENCH_REDIS_URL", "DJANGO_SETTINGS_MODULE")


@dataclass(frozen=True)
class Benchmark:
    key: str
    script: str
    tiny: tuple[str, ...]
    needs: str = ""  # beyond PostgreSQL and Redis: said when it fails


BENCHMARKS = (
    Benchmark("api", "api_latency.py", ("--rounds", "1", "--requests", "3", "--agents", "10")),
    Benchmark("validation", "config_validation.py", ("--rounds", "1", "--requests", "3")),
    Benchmark("console-lists", "console_list_render.py", ("--rounds", "1", "--requests", "2", "--agents", "10")),
    Benchmark("console-load", "console_page_load.py", ("--rounds", "3", "--warmup", "1"), needs="Chromium"),
    Benchmark("plugin-discovery", "plugin_discovery.py", ("--rounds", "1", "--walks", "1")),
    Benchmark("queue", "queue_claim.py", ("--rounds", "1", "--jobs", "40"), needs="pgbench"),
    Benchmark("wakeup", "worker_wakeup.py", ("--samples", "5")),
    Benchmark("recovery", "worker_recovery.py", ("--kills", "1")),
    Benchmark("provisioning", "provisioning_rate.py", ("--rounds", "1", "--agents", "5")),
    Benchmark("fleet", "fleet_scale.py", ("--sizes", "3,6", "--calls", "1")),
    Benchmark("usage", "usage_collection.py", ("--sizes", "3,6", "--calls", "1")),
    Benchmark("knee", "web_knee.py", ("--seconds", "2", "--levels", "1,4", "--agents", "10"), needs="wrk"),
    Benchmark("kubernetes", "kubernetes_driver.py", ("--agents", "3", "--rounds", "1", "--trials", "1",
                                                     "--fleet", "5"), needs="the test cluster (make kube)"),
    Benchmark("real-gateway", "real_gateway.py", ("--trials", "1"),
              needs="root, the test cluster and its real node (make kube), the OpenClaw runtime"),
    Benchmark("activation", "activation_local.py", ("--pairs", "1"), needs="the OpenClaw runtime"),
    Benchmark("chat", "chat_proxy.py", ("--pairs", "2"), needs="the OpenClaw runtime"),
    Benchmark("verify", "verify_cost.py", ("--pairs", "1"), needs="the OpenClaw runtime"),
    Benchmark("plugins-deploy", "plugins_deploy.py", ("--pairs", "1"), needs="the OpenClaw runtime"),
)


@dataclass(frozen=True)
class Outcome:
    benchmark: Benchmark
    status: int
    seconds: float
    verdicts: list[Verdict]
    skipped: str | None
    log: Path | None

    @property
    def failed(self) -> bool:
        return self.status != 0 or (not self.verdicts and self.skipped is None)


def run_one(benchmark: Benchmark, *, tiny: bool, folder: Path) -> Outcome:
    record = folder / f"{benchmark.key}.jsonl"
    env = {key: value for key, value in os.environ.items() if key not in NOT_PASSED_ON}
    env[RECORD_ENV] = str(record)
    env["PYTHONUNBUFFERED"] = "1"
    argv = [sys.executable, "-u", str(ROOT / "bench" / benchmark.script), *(benchmark.tiny if tiny else ())]
    print(f"\n=== {benchmark.key}: {' '.join(['bench/' + benchmark.script, *argv[3:]])}", flush=True)
    log = folder / f"{benchmark.key}.log" if tiny else None
    started = time.monotonic()
    if log is None:
        status = subprocess.run(argv, cwd=ROOT, env=env, check=False).returncode
    else:
        with log.open("wb") as out:
            status = subprocess.run(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    check=False).returncode
    seconds = time.monotonic() - started
    verdicts, skipped = [], None
    if record.exists():
        for line in record.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if "verdict" in entry:
                verdicts.append(Verdict(**entry["verdict"]))
            else:
                skipped = str(entry["skipped"])
    outcome = Outcome(benchmark, status, seconds, verdicts, skipped, log)
    if outcome.failed and log is not None:
        print(log.read_text(encoding="utf-8", errors="replace")[-4000:])
    print(f"=== {benchmark.key}: {'FAILED' if outcome.failed else 'done'} in {seconds:.0f} s", flush=True)
    return outcome


def table(outcomes: Sequence[Outcome]) -> str:
    rows = [("benchmark", "figure", "target", "measured", "result")]
    for outcome in outcomes:
        key = outcome.benchmark.key
        for verdict in outcome.verdicts:
            rows.append((key, verdict.name, verdict.goal, f"{verdict.value:.3f}", "PASS" if verdict.passed else "MISS"))
        if outcome.skipped is not None:
            rows.append((key, outcome.skipped.splitlines()[0], "", "", "SKIPPED"))
        if outcome.failed:
            needs = f"; it needs {outcome.benchmark.needs}" if outcome.benchmark.needs else ""
            rows.append((key, f"exit status {outcome.status}, {len(outcome.verdicts)} figures{needs}", "", "",
                         "FAILED"))
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="the smallest size of each (figures mean nothing)")
    parser.add_argument("--only", default="", help="comma-separated keys: " + ", ".join(b.key for b in BENCHMARKS))
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    wanted = [key for key in args.only.split(",") if key]
    unknown = sorted(set(wanted) - {b.key for b in BENCHMARKS})
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(b.key for b in BENCHMARKS)}",
              file=sys.stderr)
        return 2
    chosen = [b for b in BENCHMARKS if not wanted or b.key in wanted]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="occ-bench-run-") as folder:
        outcomes = [run_one(benchmark, tiny=args.tiny, folder=Path(folder)) for benchmark in chosen]
    print(f"\nevery figure{' (tiny sizes: the figures mean nothing)' if args.tiny else ''}, "
          f"{time.monotonic() - started:.0f} s, load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(table(outcomes))
    return 1 if any(outcome.failed for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
