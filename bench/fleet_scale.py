#!/usr/bin/env python
"""What a bigger fleet costs: the same reads and sweeps at 100, 1,000 and 10,000 Agents.

One Namespace grows through the services (``agent_create``, each audited) to each size in
turn, on PostgreSQL with the fake ComputeDriver; at each size, in process through the whole
middleware stack (``django.test.Client``), the median of several calls of

    api-agents       GET /namespaces/{ns}/agents              (the API's list, an API key)
    console-agents   GET /console/namespaces/{ns}/agents      (the console's list, signed in)
    console-audit    GET /console/audit                       (the audit log's first page)
    sweep            one beat sweep (provisioning.queue.sweep)
    maintenance      one compute maintenance pass (provisioning.jobs.maintenance)

and its SQL query count. Between two sizes the script prints each one's slope on a log-log
scale, log(t2/t1) / log(n2/n1): 0 is flat (the cost of a page does not grow with the fleet),
1 is linear. Targets (issue "Proof at scale"): flat per page, at most linear per sweep. The
Agents are created, not deployed: their revisions, gateways and work rows are not part of
this fleet (docs/performance.md says what that leaves out).

Run: ``.venv/bin/python bench/fleet_scale.py [--sizes 100,1000,10000] [--calls 7]``;
``DATABASE_URL`` names a PostgreSQL database containing ``bench`` (dropped and recreated).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script, sys.path[0] is bench/ itself: the project root first
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.api_latency import mark_namespace_ready
from bench.fleet_support import fake_compute_occ, parse_fleet_args, slope
from bench.verdicts import Verdict, print_verdicts
from bench.worker_support import BenchError, bench_main, loadavg

DEFAULT_DATABASE = "occ_fleet_bench"
PAGE_SLOPE_TARGET = 0.2  # "flat per page", with room for an index's log n
SWEEP_SLOPE_TARGET = 1.0  # "at most linear per sweep"
PAGES = ("api-agents", "console-agents", "console-audit")
SWEEPS = ("sweep", "maintenance")


@dataclass(frozen=True)
class Reading:
    milliseconds: float
    queries: int


class Fleet:
    """The Installation, its one Namespace and the Agents in it so far."""

    def __init__(self) -> None:
        from django.contrib.auth import get_user_model
        from django.test import Client

        from occ.commands.configurations import ConfigurationCreate
        from occ.iam.actor import Actor, Source
        from occ.models import Namespace
        from occ.services.bootstrap import installation_bootstrap
        from occ.services.configurations import configuration_create

        result = installation_bootstrap(name="OCC fleet bench", admin_username="admin",
                                        admin_password=secrets.token_urlsafe(18), key_days=1)
        if not result.created or result.key is None or result.key_token is None:
            raise BenchError("Bootstrap did not create a fresh Installation.")
        self.actor = Actor(principal=result.key.principal, source=Source.CLI)
        self.namespace = Namespace.objects.get(name="default")
        mark_namespace_ready(self.namespace.id)
        self.configuration = configuration_create(
            actor=self.actor, namespace_id=self.namespace.id,
            command=ConfigurationCreate(kind="agent", values={"agents": {"defaults": {"skipBootstrap": True}}}))
        self.api = Client(headers={"x-api-key": result.key_token})
        self.console = Client()
        self.console.force_login(get_user_model().objects.get(username="admin"))
        self.agents = 0

    def grow_to(self, size: int) -> float:
        """Create Agents up to ``size``; the seconds it took."""
        from occ.commands.agents import AgentCreate
        from occ.services.agents import agent_create

        started = time.monotonic()
        for index in range(self.agents, size):
            agent_create(actor=self.actor, namespace_id=self.namespace.id,
                         command=AgentCreate(name=f"fleet-{index:05d}", configuration_id=self.configuration.id))
        self.agents = max(self.agents, size)
        return time.monotonic() - started

    def operations(self) -> dict[str, Callable[[], None]]:
        from provisioning import queue
        from provisioning.jobs.maintenance import maintain_compute

        ns = self.namespace.id

        def get(client: Any, path: str) -> Callable[[], None]:
            def call() -> None:
                response = client.get(path)
                if response.status_code != 200:
                    raise BenchError(f"GET {path} answered {response.status_code}")
            return call

        def sweep_once() -> None:
            queue.sweep()

        return {
            "api-agents": get(self.api, f"/namespaces/{ns}/agents"),
            "console-agents": get(self.console, f"/console/namespaces/{ns}/agents"),
            "console-audit": get(self.console, "/console/audit"),
            "sweep": sweep_once,
            "maintenance": maintain_compute,
        }


def read(operation: Callable[[], None], calls: int) -> Reading:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    operation()  # warm: caches, the first connection
    with CaptureQueriesContext(connection) as captured:
        operation()
    queries = len(captured)  # now: the next request clears the connection's query log
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        operation()
        samples.append((time.perf_counter() - started) * 1000)
    return Reading(statistics.median(samples), queries)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return parse_fleet_args(argv, description=(__doc__ or "").split("\n\n")[0], sizes="100,1000,10000",
                            sizes_help="fleet sizes", calls=7, calls_help="timed calls of each operation per size")


def run(args: argparse.Namespace) -> list[Verdict]:
    with fake_compute_occ(DEFAULT_DATABASE, "occ-bench-fleet-"):
        fleet = Fleet()
        readings: dict[int, dict[str, Reading]] = {}
        print("What a bigger fleet costs (in process, PostgreSQL, the fake ComputeDriver); median ms and SQL queries")
        for size in args.sizes:
            seconds = fleet.grow_to(size)
            readings[size] = {name: read(operation, args.calls) for name, operation in fleet.operations().items()}
            print(f"\n{size} Agents (created in {seconds:.0f} s; load average {loadavg()})")
            for name, reading in readings[size].items():
                print(f"  {name:<16}{reading.milliseconds:>10.2f} ms{reading.queries:>6} queries")
    verdicts = []
    print("\nslopes, log-log (0 flat, 1 linear)")
    for name in (*PAGES, *SWEEPS):
        steps = [slope((n1, readings[n1][name].milliseconds), (n2, readings[n2][name].milliseconds))
                 for n1, n2 in zip(args.sizes, args.sizes[1:], strict=False)]
        print(f"  {name:<16}" + "  ".join(f"{n1}->{n2}: {s:+.2f}" for (n1, n2), s in
                                           zip(zip(args.sizes, args.sizes[1:], strict=False), steps, strict=True)))
        before, last = args.sizes[-2], args.sizes[-1]  # the verdict is the largest step's
        target = PAGE_SLOPE_TARGET if name in PAGES else SWEEP_SLOPE_TARGET
        detail = (f"{readings[before][name].milliseconds:.1f} -> {readings[last][name].milliseconds:.1f} ms, "
                  f"queries {readings[before][name].queries} -> {readings[last][name].queries}")
        verdicts.append(Verdict(f"{name}: slope {before}->{last} Agents", steps[-1], target, at_most=True,
                                detail=detail))
    print_verdicts(verdicts)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
