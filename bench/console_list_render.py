#!/usr/bin/env python
"""Console Agents list render time ÷ the JSON list of the same Agents, side by side in one run.

gunicorn (2 sync workers, ``bench.settings``: production settings plus a ``Server-Timing``
header timing the whole Django stack) serves OCC on PostgreSQL with N Agents (default 500)
in one Namespace. Rounds of the arms

    console       GET /console/namespaces/{ns}/agents  full HTML page, signed-in session
    json          GET /namespaces/{ns}/agents          the API as its clients call it (x-api-key)
    json-session  GET /namespaces/{ns}/agents          the same JSON through the same session

are interleaved at concurrency 1 (the order rotates every round), over HTTP on loopback like
bench/api_latency.py. The figure is the p50 of the server time (``Server-Timing``) of
``console`` ÷ that of ``json``; target <= 3 (issue 5). ``json-session`` shows how much of
the difference is authentication (session vs key) rather than rendering; client-side p50s
(including the socket and the larger HTML body) are printed too. Also prints the SQL queries
of one console page with 10 and with N Agents (they must be equal).

Run: ``.venv/bin/python bench/console_list_render.py`` (``--help``). ``DATABASE_URL``
(default ``postgres://postgres@127.0.0.1:5432/occ_bench_console``) must name a PostgreSQL
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
import math
import re
import secrets
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.api_latency import app_time_ms, configure_django, free_port, gunicorn_server
from bench.worker_support import (
    BenchError,
    Verdict,
    bench_database_url,
    bench_main,
    machine_facts,
    percentile,
    print_closing,
    print_facts,
    print_verdicts,
    ratio,
    recreate_database,
)
from occ.commands.agents import AgentCreate
from occ.commands.configurations import ConfigurationCreate

DEFAULT_DATABASE = "occ_bench_console"
TARGET = 3.0
REQUEST_TIMEOUT_SECONDS = 30
ADMIN = "admin"


@dataclass
class Seeded:
    namespace_id: str
    key: str
    password: str
    queries: dict[int, int]  # Agents in the Namespace -> SQL queries of one console page


# --- the data ---------------------------------------------------------------------------------


def console_rows(html: str) -> int:
    """Agent rows in a rendered ``#agents-table`` (each row's name links to the Agent)."""
    table = re.search(r'<table id="agents-table".*?</table>', html, re.S)
    if table is None:
        raise BenchError("The console page has no #agents-table.")
    return len(re.findall(r"<tr><td><a href=", table.group(0)))


def page_queries(namespace_id: str, expected_rows: int) -> int:
    """SQL queries of one console Agents page, in-process through the whole middleware stack."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(get_user_model().objects.get(username=ADMIN))
    url = f"/console/namespaces/{namespace_id}/agents"
    client.get(url)  # the session row is written once; count a steady-state request
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    if response.status_code != 200:
        raise BenchError(f"The console page answered {response.status_code} in-process.")
    rows = console_rows(response.content.decode())
    if rows != expected_rows:
        raise BenchError(f"The console page listed {rows} Agents, expected {expected_rows}.")
    return len(captured.captured_queries)


def seed(agents: int) -> Seeded:
    """Migrate, bootstrap (with a password this run knows), ready ``default``, create the Agents
    through ``agent_create``, counting the console page's queries at 10 and at ``agents``."""
    from django.core.management import call_command
    from django.db import connections
    from django.utils import timezone

    from occ.iam.actor import Actor, Source
    from occ.models import ControllerWork, Namespace, NamespaceStatus, NamespaceTarget, WorkState
    from occ.services.agents import agent_create
    from occ.services.bootstrap import installation_bootstrap
    from occ.services.configurations import configuration_create

    call_command("migrate", verbosity=0, interactive=False)
    password = secrets.token_urlsafe(18)
    result = installation_bootstrap(name="OCC console bench", admin_username=ADMIN, admin_password=password,
                                    key_days=1)
    if not result.created or result.key is None or result.key_token is None:
        raise BenchError("Bootstrap did not create a fresh Installation.")
    namespace = Namespace.objects.get(name="default")
    now = timezone.now()  # what the controller worker does once the Namespace exists
    ControllerWork.objects.filter(namespace=namespace, namespace_target=NamespaceTarget.READY).update(
        state=WorkState.SUCCEEDED, completed_at=now, reason_code="NAMESPACE_READY", updated_at=now)
    Namespace.objects.filter(id=namespace.id).update(status=NamespaceStatus.READY, updated_at=now)
    actor = Actor(principal=result.key.principal, source=Source.CLI)
    configuration = configuration_create(actor=actor, namespace_id=namespace.id,
                                         command=ConfigurationCreate(
                                             kind="agent", values={"agents": {"defaults": {"skipBootstrap": True}}}))
    queries: dict[int, int] = {}
    created = 0
    for target in sorted({10, agents}):
        for index in range(created, target):
            agent_create(actor=actor, namespace_id=namespace.id,
                         command=AgentCreate(name=f"bench-agent-{index:04d}", configuration_id=configuration.id))
        created = target
        queries[target] = page_queries(namespace.id, target)
    connections.close_all()
    return Seeded(namespace_id=namespace.id, key=result.key_token, password=password, queries=queries)


# --- the arms ---------------------------------------------------------------------------------


@dataclass
class Arm:
    name: str
    label: str
    call: Callable[[], Any]  # -> httpx.Response
    check: Callable[[Any], None]


@dataclass
class ArmResult:
    client_ms: list[float] = field(default_factory=list)
    app_ms: list[float] = field(default_factory=list)
    round_app_p50: list[float] = field(default_factory=list)


def signed_in_client(base_url: str, password: str) -> Any:
    """An httpx client holding a console session, signed in through the real sign-in form."""
    import httpx

    client = httpx.Client(base_url=base_url, timeout=REQUEST_TIMEOUT_SECONDS, follow_redirects=False)
    client.get("/console/sign-in")
    response = client.post("/console/sign-in", data={
        "username": ADMIN, "password": password, "csrfmiddlewaretoken": client.cookies["csrftoken"]})
    if response.status_code != 302 or "sessionid" not in client.cookies:
        client.close()
        raise BenchError(f"Console sign-in answered {response.status_code}.")
    return client


def make_arms(session: Any, keyed: Any, namespace_id: str, agents: int) -> list[Arm]:
    console_path = f"/console/namespaces/{namespace_id}/agents"
    json_path = f"/namespaces/{namespace_id}/agents"

    def html_ok(response: Any) -> None:
        if response.status_code != 200 or console_rows(response.text) != agents:
            raise BenchError(f"GET {console_path} answered {response.status_code} without {agents} rows.")

    def json_ok(response: Any) -> None:
        if response.status_code != 200 or len(response.json()["data"]) != agents:
            raise BenchError(f"GET {json_path} answered {response.status_code} without {agents} items.")

    return [
        Arm("console", "GET /console/namespaces/{ns}/agents", lambda: session.get(console_path), html_ok),
        Arm("json", "GET /namespaces/{ns}/agents (key)", lambda: keyed.get(json_path), json_ok),
        Arm("json-session", "GET /namespaces/{ns}/agents (session)", lambda: session.get(json_path), json_ok),
    ]


def measure(arms: Sequence[Arm], *, rounds: int, requests: int) -> dict[str, ArmResult]:
    """Rounds of every arm in turn, one request at a time; the order rotates each round."""
    results = {arm.name: ArmResult() for arm in arms}
    for arm in arms:  # each checked once, untimed
        arm.check(arm.call())
    for round_number in range(rounds):
        shift = round_number % len(arms)
        for arm in [*arms[shift:], *arms[:shift]]:
            app_times = []
            for _ in range(requests):
                started = time.perf_counter()
                response = arm.call()
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code != 200:
                    raise BenchError(f"{arm.label} answered {response.status_code}.")
                results[arm.name].client_ms.append(elapsed)
                app_times.append(app_time_ms(response))
            measured = [t for t in app_times if not math.isnan(t)]
            if not measured:
                raise BenchError(f"{arm.label} sent no Server-Timing header (bench.settings not in use?).")
            results[arm.name].app_ms.extend(measured)
            results[arm.name].round_app_p50.append(percentile(measured, 50))
    return results


def warm_up(arms: Sequence[Arm], requests: int) -> None:
    """Both gunicorn workers connect, import and fill their template caches before timing."""
    for _ in range(requests):
        for arm in arms:
            arm.call()


def report(arms: Sequence[Arm], results: dict[str, ArmResult], rounds: int, requests: int) -> list[Verdict]:
    print(f"\n{rounds} interleaved rounds x {requests} requests per arm, concurrency 1")
    print(f"  {'arm':<40}{'n':>6}{'server p50 ms':>15}{'server p99 ms':>15}{'client p50 ms':>15}")
    for arm in arms:
        result = results[arm.name]
        print(f"  {arm.label:<40}{len(result.app_ms):>6}{percentile(result.app_ms, 50):>15.2f}"
              f"{percentile(result.app_ms, 99):>15.2f}{percentile(result.client_ms, 50):>15.2f}")
    console, keyed, session = results["console"], results["json"], results["json-session"]
    per_round = [ratio(c, j) for c, j in zip(console.round_app_p50, keyed.round_app_p50, strict=True)]
    print("\nratios (console page ÷ JSON list)")
    print(f"  server p50 ÷ json (key):      {ratio(percentile(console.app_ms, 50), percentile(keyed.app_ms, 50)):.2f}x"
          f"   rounds median {percentile(per_round, 50):.2f}x [{min(per_round):.2f}-{max(per_round):.2f}]")
    print(f"  server p50 ÷ json (session):  "
          f"{ratio(percentile(console.app_ms, 50), percentile(session.app_ms, 50)):.2f}x")
    print(f"  client p50 ÷ json (key):      "
          f"{ratio(percentile(console.client_ms, 50), percentile(keyed.client_ms, 50)):.2f}x")
    return [Verdict("console ÷ JSON list, server p50", ratio(percentile(console.app_ms, 50),
                                                              percentile(keyed.app_ms, 50)), TARGET, at_most=True)]


# --- the run ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds (default 20)")
    parser.add_argument("--requests", type=int, default=15, help="requests per arm per round (default 15)")
    parser.add_argument("--agents", type=int, default=500, help="Agents in the listed Namespace (default 500)")
    args = parser.parse_args(argv)
    if not (1 <= args.rounds <= 1000 and 1 <= args.requests <= 1000 and 10 <= args.agents <= 5000):
        parser.error("rounds and requests must be 1-1000, agents 10-5000")
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    import httpx

    started = time.monotonic()
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    with tempfile.TemporaryDirectory(prefix="occ-bench-console-") as data_dir:
        configure_django(database_url, Path(data_dir))
        print_facts("OCC console list benchmark (Agents page ÷ JSON list, same data, same gunicorn)",
                    machine_facts(database_url))
        seeded = seed(args.agents)
        counts = ", ".join(f"{n} Agents: {q}" for n, q in sorted(seeded.queries.items()))
        equal = len(set(seeded.queries.values())) == 1
        print(f"\nSQL queries per console Agents page: {counts} -> {'EQUAL' if equal else 'GROWS'}")
        print(f"setup took {time.monotonic() - started:.1f} s")
        with gunicorn_server(free_port(), Path(data_dir) / "gunicorn.log") as base_url:
            session = signed_in_client(base_url, seeded.password)
            keyed = httpx.Client(base_url=base_url, headers={"x-api-key": seeded.key},
                                 timeout=REQUEST_TIMEOUT_SECONDS)
            try:
                arms = make_arms(session, keyed, seeded.namespace_id, args.agents)
                warm_up(arms, 10)
                results = measure(arms, rounds=args.rounds, requests=args.requests)
            finally:
                session.close()
                keyed.close()
    verdicts = report(arms, results, args.rounds, args.requests)
    if not equal:
        verdicts.append(Verdict("console queries 10 vs N Agents (grows)", 1.0, 0.0, at_most=True))
    print_verdicts(verdicts)
    print_closing(started, suffix="The target applies to the server p50 ratio; absolute times are context.")
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
