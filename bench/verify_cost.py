#!/usr/bin/env python
"""What verification before cutover costs on ``local``: a replacing deploy, accepted -> active, with checks ÷ without.

Each pair deploys v2 of an Agent whose v1 serves, once with a worker that verifies the
candidate (``OCC_VERIFY_BEFORE_CUTOVER=true``, the default: runtime config validate, a
candidate gateway to ``/readyz``, a one-token model turn, no smoke conversations) and once with a
worker that does not (``false``); the order alternates. Real ``celery worker`` and ``beat``
(Redis broker), the pinned Node and openclaw, the loopback fake model of the tests. Timed from
the deploy service's return (the API's 202) to the work row's ``completed_at``
(``REVISION_ACTIVATED``); the checked arm's worker log gives the candidate's own time
(``candidate … passed``), to say where the time goes. One Agent per arm (v1 is deployed, untimed,
before each pair); every gateway is stopped by verified PID in ``finally``.

Target (issue 28): with ÷ without <= 1.5. Run: ``.venv/bin/python bench/verify_cost.py`` (``--pairs``).
``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/occ_verify_bench``) must name a
database containing ``bench``: it is dropped and recreated.
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
import re
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from bench.activation_local import (
    READY_TIMEOUT_SECONDS,
    Gateways,
    model_document,
    port_slice,
    runtime_check,
    stop_agent,
)
from bench.verdicts import Verdict, print_skip, print_verdicts
from bench.worker_support import (
    BenchError,
    ManagedProcess,
    World,
    add_agent,
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
    work_state,
)

DEFAULT_DATABASE = "occ_verify_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
TARGET = 1.5
POLL_SECONDS = 0.2


def deploy_seconds(world: World, agent: Any) -> float:
    """Deploy the Agent's next revision; seconds from accepted to ``REVISION_ACTIVATED``."""
    from django.db import close_old_connections

    from occ.models.work import revision_reconcile_key
    from occ.services.deploy import agent_deploy

    revision = agent_deploy(actor=world.actor, namespace_id=world.namespace_id, agent_id=agent.id)
    accepted = time.time()
    key = revision_reconcile_key(revision.id)

    def finished() -> dict[str, Any] | None:
        close_old_connections()
        row = work_state(key)
        return row if row is not None and row["state"] in ("succeeded", "failed_permanent") else None

    row = wait_until(finished, timeout=READY_TIMEOUT_SECONDS * 3, interval=POLL_SECONDS, what=f"work {key}")
    if row["state"] != "succeeded" or row["reason_code"] != "REVISION_ACTIVATED":
        raise BenchError(f"work {key} ended {row['state']} {row['reason_code']} (last attempt "
                         f"{row['last_attempt_code']}); see the worker log")
    return row["completed_at"].timestamp() - accepted


def replacing_deploy(world: World, name: str, document: dict[str, Any], data: Path) -> float:
    """v1 deployed and serving (untimed), then v2 timed; the Agent is stopped afterwards."""
    agent = add_agent(world, name, document)
    try:
        deploy_seconds(world, agent)
        return deploy_seconds(world, agent)
    finally:
        stop_agent(world, agent, data)


def candidate_seconds(log: Path) -> list[float]:
    """The checked worker's ``verify_candidate`` durations, from its log (``candidate … in N s``)."""
    found = re.findall(r"candidate \S+ of \S+ passed .* in ([0-9.]+) s", log.read_text(errors="replace"))
    return [float(value) for value in found]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1, help="with/without pairs (default 1; ~2 minutes each)")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
                        help=f"this benchmark's own Redis database (default {DEFAULT_REDIS_URL})")
    args = parser.parse_args(argv)
    if not 1 <= args.pairs <= 5:
        parser.error("pairs must be 1-5")
    redis_db_number(args.redis_url)
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    started = time.monotonic()
    installed, says = runtime_check()
    if not installed:
        print_skip("verification cost on the local driver: `manage.py occ_runtime check` failed (`make runtime`):\n  "
                   + says.replace("\n", "\n  "))
        return []
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    flush_redis_db(args.redis_url)
    print_facts("A replacing deploy on the local driver with verification before cutover vs without",
                machine_facts(database_url))
    from tests.fakes.fake_openai import FakeOpenAI

    model = FakeOpenAI().start()
    processes: list[ManagedProcess] = []
    with tempfile.TemporaryDirectory(prefix="occ-verify-bench-") as folder:
        data = Path(folder)
        gateways = Gateways(data)
        try:
            first, last = port_slice()
            base = process_env(database_url, data, CELERY_BROKER_URL=args.redis_url, OCC_COMPUTE_DRIVER="local",
                               OCC_LOCAL_GATEWAY_PORT_RANGE=f"{first}-{last}",
                               OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS=str(READY_TIMEOUT_SECONDS))
            for name in ("OCC_SWEEP_INTERVAL_SECONDS", "OCC_WORKER_DEFER_SECONDS"):
                base.pop(name, None)  # the defaults are what is measured
            configure_django(base)
            document = model_document(model.base_url)
            world = seed_world()
            processes.append(start_beat(base, data))
            print(f"setup took {time.monotonic() - started:.1f} s; load average {loadavg()}")
            timings: dict[str, list[float]] = {"with": [], "without": []}
            for pair in range(args.pairs):
                for arm in (("with", "without") if pair % 2 == 0 else ("without", "with")):
                    env = {**base, "OCC_VERIFY_BEFORE_CUTOVER": "true" if arm == "with" else "false"}
                    (data / arm).mkdir(exist_ok=True)
                    worker = start_worker(env, data / arm, f"bench-verify-{arm}")
                    try:
                        timings[arm].append(replacing_deploy(world, f"verify-{arm}-{pair}", document, data))
                    finally:
                        worker.stop()
            candidates = candidate_seconds(data / "with" / "bench-verify-with.log") if (
                data / "with" / "bench-verify-with.log").exists() else []
        finally:  # workers first (beat would restart a gateway it finds dead), then every gateway
            for process in reversed(processes):
                process.stop()
            gateways.stop_all()
            model.stop()
            flush_redis_db(args.redis_url)
    print(f"\n{args.pairs} pair(s) (order alternates); v2 accepted -> active, seconds")
    for index, (checked, unchecked) in enumerate(zip(timings["with"], timings["without"], strict=True), 1):
        print(f"  pair {index}: with {checked:.1f}  without {unchecked:.1f}  ratio {checked / unchecked:.2f}")
    if candidates:
        print("  verify_candidate itself (worker log): " + ", ".join(f"{value:.1f} s" for value in candidates))
    pooled = ratio(sum(timings["with"]), sum(timings["without"]))
    verdicts = [Verdict("replacing deploy with checks / without (pooled)", pooled, TARGET, at_most=True,
                        detail="pairs " + " ".join(f"{a / b:.2f}" for a, b in
                                                   zip(timings["with"], timings["without"], strict=True)))]
    print_verdicts(verdicts)
    print_closing(started)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
