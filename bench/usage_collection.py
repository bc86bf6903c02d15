#!/usr/bin/env python
"""What a usage collection pass costs as the fleet grows: one pass over N running gateways.

N Agents run (rows only: an active revision each, the fake ComputeDriver); their gateways are
loopback stand-ins of the operator RPC speaking real WebSockets (``tests.fakes.usage_gateway``,
one server for all of them, each answering ``sessions.usage`` with two models a day). A pass
(``occ.services.usage_collection.usage_collect``) asks each gateway for yesterday and today
(two connections), writes its rows in one short transaction per gateway and enforces the
budgets (one on the Namespace). At each size, the median of ``--calls`` passes, the time per
gateway and the main thread's SQL queries; then the slope between sizes on a log-log scale,
log(t2/t1) / log(n2/n1): 1 is linear. Target (issue 29, "Fleet cost"): at most linear.

The fleet is made once at the largest size; each round then runs one pass at every size in
turn (the first N Agents wanted running, the others stopped), so a change in the machine's load
during the run weighs on every size alike. The stand-ins run in this process: what a pass costs
here includes answering it.

Run: ``.venv/bin/python bench/usage_collection.py [--sizes 100,1000] [--calls 3]``;
``DATABASE_URL`` names a PostgreSQL database containing ``bench`` (dropped and recreated).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script, sys.path[0] is bench/ itself: the project root first
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.fleet_support import fake_compute_occ, parse_fleet_args, slope
from bench.verdicts import Verdict, print_verdicts
from bench.worker_support import BenchError, bench_main, loadavg

DEFAULT_DATABASE = "occ_usage_bench"
SLOPE_TARGET = 1.0  # "grows at most linearly"
SNAPSHOT: dict[str, Any] = {
    "configurationKind": "agent", "configuration": {"agents": {"defaults": {"model": "openai/gpt-5"}}},
    "harness": {"id": "openclaw", "version": "2026.1.0", "mode": "embedded"},
    "compute": {"id": "fake", "implementation": "fake"}, "harnessAuth": None, "backendId": None,
    "secretBindings": {}, "pluginApprovers": [], "servicePrincipalId": "sp_bench", "sandboxDriver": "none",
}


class Fleet:
    def __init__(self) -> None:
        from occ.models import Budget, Configuration, Namespace, NamespaceStatus
        from tests.fakes.usage_gateway import StandInDriver, UsageGateways

        self.namespace = Namespace.objects.create(name="bench", status=NamespaceStatus.READY)
        self.configuration = Configuration.objects.create(namespace=self.namespace, name="bench", values={})
        Budget.objects.create(namespace=self.namespace, period="month", limit=Decimal(10**9), set_by="bench")
        self.gateways = UsageGateways()
        self.driver = StandInDriver(self.gateways)
        self.agents = 0

    def grow_to(self, size: int, today: str) -> None:
        from occ.models import Agent, AgentRevision
        from tests.fakes.usage_gateway import ModelFigures

        agents = [Agent(namespace=self.namespace, name=f"usage-{index:05d}", configuration=self.configuration,
                        desired_runtime_state="running") for index in range(self.agents, size)]
        Agent.objects.bulk_create(agents)
        revisions = AgentRevision.objects.bulk_create([
            AgentRevision(namespace=self.namespace, agent=agent, number=1, configuration_id=self.configuration.id,
                          configuration_generation=1, snapshot=SNAPSHOT, created_by="bench") for agent in agents])
        for agent, revision in zip(agents, revisions, strict=True):
            agent.active_revision = revision
        Agent.objects.bulk_update(agents, ["active_revision"])
        for index, agent in enumerate(agents):
            self.gateways.add(agent.id, days={today: [
                ModelFigures("openai", "gpt-5", 1000 + index, 200, 50, 0, 0.01),
                ModelFigures("openai", "gpt-5-mini", 300, 40, 0, 0, 0.001)]})
        self.agents = size

    def run_first(self, size: int) -> None:
        """Only the first ``size`` Agents (by id, as a pass reads them) want to run."""
        from occ.models import Agent

        ids = list(Agent.objects.order_by("id").values_list("id", flat=True)[:size])
        Agent.objects.exclude(id__in=ids).update(desired_runtime_state="stopped")
        Agent.objects.filter(id__in=ids).update(desired_runtime_state="running")

    def close(self) -> None:
        self.gateways.close()


def one_pass(fleet: Fleet, now: datetime) -> tuple[float, int, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from occ.services.usage_collection import usage_collect

    with CaptureQueriesContext(connection) as captured:
        started = time.perf_counter()
        report = usage_collect(driver=fleet.driver, now=now)
        seconds = time.perf_counter() - started
    if report.missed:
        raise BenchError(f"{report.missed} of {report.gateways} stand-in gateways did not answer")
    return seconds * 1000, len(captured), report


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return parse_fleet_args(argv, description=(__doc__ or "").split("\n\n")[0], sizes="100,1000",
                            sizes_help="gateways", calls=3, calls_help="timed passes per size")


def run(args: argparse.Namespace) -> list[Verdict]:
    with fake_compute_occ(DEFAULT_DATABASE, "occ-bench-usage-"):
        from django.conf import settings

        now = datetime.now(UTC)
        fleet = Fleet()
        times: dict[int, float] = {}
        print(f"A usage collection pass over N stand-in gateways (real WebSockets on loopback, "
              f"{settings.OCC_USAGE_CONCURRENCY} at a time; PostgreSQL); median of {args.calls} passes")
        try:
            fleet.grow_to(args.sizes[-1], now.date().isoformat())
            fleet.run_first(args.sizes[-1])
            one_pass(fleet, now)  # warm: the first pass inserts every row, the timed ones re-collect
            samples: dict[int, list[tuple[float, int, Any]]] = {size: [] for size in args.sizes}
            for _ in range(args.calls):
                for size in args.sizes:
                    fleet.run_first(size)
                    samples[size].append(one_pass(fleet, now))
            for size in args.sizes:
                times[size] = statistics.median(r[0] for r in samples[size])
                print(f"  {size:>6} gateways: {times[size]:>9.1f} ms per pass, {times[size] / size:6.2f} ms per "
                      f"gateway, {samples[size][0][1]} SQL queries in the pass's own thread, "
                      f"{samples[size][0][2].rows} rows")
            print(f"  (load average {loadavg()})")
        finally:
            fleet.close()
    verdicts = []
    print("\nslopes, log-log (1 linear)")
    for n1, n2 in zip(args.sizes, args.sizes[1:], strict=False):
        step = slope((n1, times[n1]), (n2, times[n2]))
        print(f"  {n1}->{n2} gateways: {step:+.2f} (time ratio {times[n2] / times[n1]:.1f} for {n2 / n1:.0f}x "
              "the gateways)")
        verdicts.append(Verdict(f"collection pass: slope {n1}->{n2}", step, SLOPE_TARGET, at_most=True,
                                detail=f"{times[n1]:.0f} -> {times[n2]:.0f} ms"))
    print_verdicts(verdicts)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
