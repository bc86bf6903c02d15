#!/usr/bin/env python
"""API latency against the web stack's floor, measured side by side in one run.

gunicorn (2 sync workers) serves OCC on PostgreSQL with ``bench.settings``, which adds a bare
Django view (``GET /bench/bare``) behind the same middleware. Rounds of the three arms

    bare     GET  /bench/bare
    agents   GET  /namespaces/{ns}/agents          (100 Agents)
    secrets  POST /namespaces/{ns}/secrets         (encryption, IAM, audit)

are interleaved at concurrency 1 and 4, and the script prints p50/p99 of each arm and the
ratios agents/bare and secrets/bare. Only ratios mean anything: absolute times on shared
2-core machines swing by 40%. Also prints the SQL queries one agents-list request makes with
10 and with 100 Agents (they must be equal).

Run: ``make bench`` or ``.venv/bin/python bench/api_latency.py``. ``DATABASE_URL`` names a
PostgreSQL database whose name contains ``bench``; it is dropped and recreated.

One module of ~520 lines: a benchmark script that runs on its own; its seeding, arms and
statistics (which the other benchmarks import) are read together.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

if __package__ in (None, ""):  # run as a script, sys.path[0] is bench/ itself: the project root first
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.verdicts import Verdict, print_verdicts
from occ.commands.agents import AgentCreate
from occ.commands.configurations import ConfigurationCreate

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/occ_bench"
SETTINGS_MODULE = "bench.settings"
# p50 targets from the issue: endpoint ÷ bare view.
TARGETS = {"agents": 5.0, "secrets": 10.0}
AGENT_PAGE = 50  # occ.selectors.agents.PAGE_SIZE: GET …/agents answers its first page
CONCURRENCIES = (1, 4)
GUNICORN_WORKERS = 2
SERVER_START_SECONDS = 30
REQUEST_TIMEOUT_SECONDS = 30


class BenchError(Exception):
    """The run cannot produce meaningful figures (setup failed, a request was refused)."""


# --- statistics ---------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0 to 100) with linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError("p must be between 0 and 100")
    ordered = sorted(values)
    position = (len(ordered) - 1) * p / 100
    lower = math.floor(position)
    upper = math.ceil(position)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def ratio(numerator: float, denominator: float) -> float:
    """numerator ÷ denominator; a zero or negative floor cannot be a baseline."""
    if denominator <= 0:
        raise ValueError("ratio needs a positive denominator")
    return numerator / denominator


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


# --- the database and the data ------------------------------------------------------------


def database_name(url: str) -> str:
    name = urlsplit(url).path.lstrip("/")
    if not re.fullmatch(r"[A-Za-z0-9_]+", name) or "bench" not in name:
        raise BenchError(f"DATABASE_URL must name a database containing 'bench' (it is dropped); got {name!r}.")
    return name


def recreate_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    name = database_name(url)
    parts = urlsplit(url)
    maintenance = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    try:
        with psycopg.connect(maintenance, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError as exc:
        raise BenchError(f"PostgreSQL at {parts.hostname}:{parts.port or 5432} is not reachable. Start it "
                         "(e.g. `pg_ctlcluster 15 main start`) or set DATABASE_URL.") from exc


@dataclass
class Seeded:
    key: str
    namespace_id: str
    queries: dict[int, int]  # agents in the Namespace -> SQL queries per list request


def configure_django(database_url: str, data_dir: Path) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    os.environ["DATABASE_URL"] = database_url
    os.environ["OCC_DATA_DIR"] = str(data_dir)
    from project.data_dir import DataDir  # like django: importable once main has put the project on sys.path

    DataDir(data_dir).create()
    os.environ.setdefault("OCC_LOG_LEVEL", "WARNING")
    import django

    django.setup()


def list_queries(key: str, namespace_id: str, expected_items: int) -> int:
    """SQL queries of one agents-list request, in-process through the whole middleware stack."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(headers={"x-api-key": key})
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"/namespaces/{namespace_id}/agents")
    if response.status_code != 200:
        raise BenchError(f"GET agents answered {response.status_code} in-process.")
    items = len(response.json()["data"]["agents"])  # the first keyset page
    if items != min(expected_items, AGENT_PAGE):
        raise BenchError(f"GET agents returned {items} items, expected {min(expected_items, AGENT_PAGE)}.")
    return len(captured.captured_queries)


def mark_namespace_ready(namespace_id: str) -> None:
    """What the controller worker does once a Namespace exists: its ready work succeeded, the
    Namespace ready (the benchmarks run no worker for that)."""
    from django.utils import timezone

    from occ.models import ControllerWork, Namespace, NamespaceStatus, NamespaceTarget, WorkState

    now = timezone.now()
    ControllerWork.objects.filter(namespace_id=namespace_id, namespace_target=NamespaceTarget.READY).update(
        state=WorkState.SUCCEEDED, completed_at=now, reason_code="NAMESPACE_READY", updated_at=now)
    Namespace.objects.filter(id=namespace_id).update(status=NamespaceStatus.READY, updated_at=now)


def seed(agent_counts: Sequence[int]) -> Seeded:
    """Migrate, bootstrap, ready ``default``, then grow its Agents, counting list queries at each size."""
    from django.core.management import call_command
    from django.db import connections

    from occ.iam.actor import Actor, Source
    from occ.models import Namespace
    from occ.services.agents import agent_create
    from occ.services.bootstrap import installation_bootstrap
    from occ.services.configurations import configuration_create

    call_command("migrate", verbosity=0, interactive=False)
    result = installation_bootstrap(name="OCC bench", admin_username="admin",
                                    admin_password=secrets.token_urlsafe(18), key_days=1)
    if not result.created or result.key is None or result.key_token is None:
        raise BenchError("Bootstrap did not create a fresh Installation.")
    namespace = Namespace.objects.get(name="default")
    mark_namespace_ready(namespace.id)

    actor = Actor(principal=result.key.principal, source=Source.CLI)
    configuration = configuration_create(
        actor=actor, namespace_id=namespace.id,
        command=ConfigurationCreate(kind="agent", values={"agents": {"defaults": {"skipBootstrap": True}}}),
    )
    queries: dict[int, int] = {}
    created = 0
    for target in sorted(agent_counts):
        for index in range(created, target):
            agent_create(actor=actor, namespace_id=namespace.id,
                         command=AgentCreate(name=f"bench-agent-{index:03d}", configuration_id=configuration.id))
        created = target
        # What autovacuum does to a table that grew, before anything is timed: planned on the
        # statistics of 10 Agents, the keyset page sorts all 10,000 instead of reading the index.
        with connections["default"].cursor() as cursor:
            cursor.execute("ANALYZE")
        queries[target] = list_queries(result.key_token, namespace.id, target)
    connections.close_all()
    return Seeded(key=result.key_token, namespace_id=namespace.id, queries=queries)


def machine_facts(database_url: str) -> dict[str, str]:
    import django
    import gunicorn
    import httpx
    import psycopg

    facts = {
        "cpus": str(os.cpu_count()),
        "cpu": platform.processor() or "unknown",
        "kernel": platform.release(),
        "python": platform.python_version(),
        "django": django.get_version(),
        "gunicorn": gunicorn.__version__,
        "psycopg": psycopg.__version__,
        "httpx": httpx.__version__,
        "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
                break
    conninfo = urlunsplit(urlsplit(database_url)._replace(scheme="postgresql"))
    with psycopg.connect(conninfo, connect_timeout=5) as conn:
        for setting in ("server_version", "synchronous_commit", "fsync", "shared_buffers"):
            row = conn.execute(f"SHOW {setting}").fetchone()
            facts[f"pg {setting}"] = str(row[0]) if row else "?"
    return facts


# --- the server ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def gunicorn_server(port: int, log_path: Path, *, production: bool = False) -> Iterator[str]:
    """gunicorn in its own process group; always stopped by its PID on the way out. Sync
    workers by default; ``production``: the web process's own settings (project/gunicorn_conf.py)."""
    import httpx

    workers = (["-c", "python:project.gunicorn_conf"] if production
               else ["--workers", str(GUNICORN_WORKERS), "--worker-class", "sync"])
    command = [
        sys.executable, "-m", "gunicorn", "project.wsgi:application", "--bind", f"127.0.0.1:{port}", *workers,
        "--chdir", str(ROOT), "--log-level", "warning", "--error-logfile", "-",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=os.environ.copy(), stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while True:
            if process.poll() is not None:
                raise BenchError(f"gunicorn exited with {process.returncode}:\n{tail(log_path)}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise BenchError(f"gunicorn did not answer /healthz within {SERVER_START_SECONDS} s:\n"
                                 f"{tail(log_path)}")
            time.sleep(0.1)
        yield base_url
    except BenchError as exc:
        raise BenchError(f"{exc}\ngunicorn log:\n{tail(log_path)}") from exc
    finally:
        stop_process_group(process)


def stop_process_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)  # the master stops its workers gracefully
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
    # A worker orphaned by a crashed master is still in the group the master led.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


# --- load ---------------------------------------------------------------------------------


@dataclass
class Sample:
    client_ms: float
    app_ms: float


@dataclass
class Arm:
    name: str
    label: str
    call: Callable[[Any], Any]  # httpx.Client -> httpx.Response
    expected_status: int


def app_time_ms(response: Any) -> float:
    match = re.search(r"app;dur=([0-9.]+)", response.headers.get("Server-Timing", ""))
    return float(match.group(1)) if match else math.nan


def make_arms(namespace_id: str) -> list[Arm]:
    run = secrets.token_hex(4)
    counter = iter(range(10**9))
    lock = threading.Lock()

    def secret_body() -> dict[str, str]:
        with lock:
            number = next(counter)
        return {"name": f"bench-{run}-{number}", "value": "bench-value-" + secrets.token_hex(16)}

    agents_path = f"/namespaces/{namespace_id}/agents"
    secrets_path = f"/namespaces/{namespace_id}/secrets"
    return [
        Arm("bare", "GET /bench/bare", lambda c: c.get("/bench/bare"), 200),
        Arm("agents", "GET /namespaces/{ns}/agents", lambda c: c.get(agents_path), 200),
        Arm("secrets", "POST /namespaces/{ns}/secrets", lambda c: c.post(secrets_path, json=secret_body()), 201),
    ]


class Load:
    """``concurrency`` threads, each with its own client, sharing a fixed number of requests."""

    def __init__(self, base_url: str, key: str, concurrency: int) -> None:
        import httpx

        self.concurrency = concurrency
        self.clients = [httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=REQUEST_TIMEOUT_SECONDS)
                        for _ in range(concurrency)]
        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench")

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        for client in self.clients:
            client.close()

    def batch(self, arm: Arm, requests: int) -> list[Sample]:
        tickets = iter(range(requests))
        lock = threading.Lock()

        def take() -> bool:
            with lock:
                return next(tickets, None) is not None

        def drive(client: Any) -> list[Sample]:
            samples = []
            while take():
                started = time.perf_counter()
                response = arm.call(client)
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code != arm.expected_status:
                    code = response.headers.get("content-type", "")
                    raise BenchError(f"{arm.label} answered {response.status_code} ({code}); "
                                     f"expected {arm.expected_status}.")
                samples.append(Sample(elapsed, app_time_ms(response)))
            return samples

        futures = [self.pool.submit(drive, client) for client in self.clients]
        return [sample for future in futures for sample in future.result()]


@dataclass
class ArmResult:
    samples: list[Sample] = field(default_factory=list)
    round_p50: list[float] = field(default_factory=list)

    def client(self) -> list[float]:
        return [s.client_ms for s in self.samples]

    def app(self) -> list[float]:
        return [s.app_ms for s in self.samples if not math.isnan(s.app_ms)]


def measure(load: Load, arms: list[Arm], *, rounds: int, requests: int) -> dict[str, ArmResult]:
    """Rounds of every arm in turn; the order rotates each round so none always goes first."""
    results = {arm.name: ArmResult() for arm in arms}
    for round_number in range(rounds):
        shift = round_number % len(arms)
        for arm in arms[shift:] + arms[:shift]:
            samples = load.batch(arm, requests)
            results[arm.name].samples.extend(samples)
            results[arm.name].round_p50.append(median([s.client_ms for s in samples]))
    return results


# --- report -------------------------------------------------------------------------------


@dataclass
class LatencyRatio:
    """One list endpoint ÷ the bare view at one concurrency."""

    concurrency: int
    arm: str
    p50: float
    p99: float
    round_median: float
    round_min: float
    round_max: float
    app_p50: float

    @property
    def target(self) -> float:
        return TARGETS[self.arm]

    @property
    def passed(self) -> bool:
        return self.p50 <= self.target


def latency_ratios(concurrency: int, results: dict[str, ArmResult]) -> list[LatencyRatio]:
    bare = results["bare"]
    out = []
    for name in ("agents", "secrets"):
        arm = results[name]
        per_round = [ratio(a, b) for a, b in zip(arm.round_p50, bare.round_p50, strict=True)]
        out.append(LatencyRatio(
            concurrency=concurrency, arm=name,
            p50=ratio(percentile(arm.client(), 50), percentile(bare.client(), 50)),
            p99=ratio(percentile(arm.client(), 99), percentile(bare.client(), 99)),
            round_median=median(per_round), round_min=min(per_round), round_max=max(per_round),
            app_p50=ratio(percentile(arm.app(), 50), percentile(bare.app(), 50)),
        ))
    return out


def print_table(concurrency: int, arms: list[Arm], results: dict[str, ArmResult], rounds: int, requests: int) -> None:
    print(f"\nconcurrency {concurrency}: {rounds} interleaved rounds x {requests} requests per endpoint")
    print(f"  {'endpoint':<32}{'n':>6}{'p50 ms':>9}{'p99 ms':>9}{'app p50 ms':>12}")
    for arm in arms:
        result = results[arm.name]
        print(f"  {arm.label:<32}{len(result.samples):>6}{percentile(result.client(), 50):>9.2f}"
              f"{percentile(result.client(), 99):>9.2f}{percentile(result.app(), 50):>12.2f}")
    print(f"  {'ratio':<18}{'p50':>7}{'p99':>7}{'rounds p50 [min-max]':>24}{'app p50':>10}"
          f"{'target':>10}  result")
    for v in latency_ratios(concurrency, results):
        spread = f"{v.round_median:.2f}x [{v.round_min:.2f}-{v.round_max:.2f}]"
        print(f"  {v.arm + ' / bare':<18}{v.p50:>6.2f}x{v.p99:>6.2f}x{spread:>24}{v.app_p50:>9.2f}x"
              f"{'<=' + format(v.target, 'g') + 'x':>10}  {'PASS' if v.passed else 'MISS'}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds per concurrency (default 20)")
    parser.add_argument("--requests", type=int, default=25, help="requests per endpoint per round (default 25)")
    parser.add_argument("--agents", type=int, default=100, help="Agents in the listed Namespace (default 100)")
    args = parser.parse_args(argv)
    if not (1 <= args.rounds <= 1000 and 1 <= args.requests <= 1000 and 10 <= args.agents <= 10_000):
        parser.error("rounds and requests must be 1-1000, agents 10-10000 (issue 31's fleet)")
    return args


def measure_server(base_url: str, key: str, arms: list[Arm], args: argparse.Namespace) -> list[LatencyRatio]:
    warm = Load(base_url, key, max(CONCURRENCIES))
    try:  # every worker connects to the database and imports everything before timing starts
        for arm in arms:
            warm.batch(arm, 10 * GUNICORN_WORKERS * max(CONCURRENCIES))
    finally:
        warm.close()
    all_ratios: list[LatencyRatio] = []
    for concurrency in CONCURRENCIES:
        load = Load(base_url, key, concurrency)
        try:
            results = measure(load, arms, rounds=args.rounds, requests=args.requests)
        finally:
            load.close()
        print_table(concurrency, arms, results, args.rounds, args.requests)
        all_ratios.extend(latency_ratios(concurrency, results))
    return all_ratios


def run(args: argparse.Namespace) -> list[Verdict]:
    started = time.monotonic()
    database_url = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    if not database_url.startswith(("postgres://", "postgresql://")):
        raise BenchError("The benchmark runs on PostgreSQL: set DATABASE_URL=postgres://...")
    recreate_database(database_url)
    with tempfile.TemporaryDirectory(prefix="occ-bench-") as data_dir:
        configure_django(database_url, Path(data_dir))
        print("OCC API latency benchmark (ratios to a bare Django view in the same gunicorn)")
        for name, value in machine_facts(database_url).items():
            print(f"  {name:<22}{value}")
        seeded = seed(sorted({10, args.agents}))
        counts = ", ".join(f"{n} Agents: {q}" for n, q in sorted(seeded.queries.items()))
        equal = len(set(seeded.queries.values())) == 1
        print(f"\nSQL queries per GET /namespaces/{{ns}}/agents: {counts} -> {'EQUAL' if equal else 'GROWS'}")
        print(f"setup took {time.monotonic() - started:.1f} s")
        with gunicorn_server(free_port(), Path(data_dir) / "gunicorn.log") as base_url:
            all_ratios = measure_server(base_url, seeded.key, make_arms(seeded.namespace_id), args)
    loadavg = os.getloadavg()[0]
    print(f"\ntotal {time.monotonic() - started:.1f} s, load average now {loadavg:.2f} on {os.cpu_count()} CPUs. "
          "Targets apply to the p50 ratios; absolute times are context, not gates.")
    if loadavg > (os.cpu_count() or 1):
        print("note: other processes competed for the CPUs during this run; rerun on a quiet machine.")
    fewest, most = min(seeded.queries.items()), max(seeded.queries.items())
    verdicts = [Verdict(f"c={r.concurrency} GET {r.arm} ÷ bare view, p50", r.p50, r.target, at_most=True,
                        detail=f"p99 {r.p99:.2f}x, rounds {r.round_median:.2f}x [{r.round_min:.2f}-{r.round_max:.2f}]")
                for r in all_ratios]
    verdicts.append(Verdict(f"SQL per Agents list, {most[0]} ÷ {fewest[0]} Agents", ratio(most[1], fewest[1]), 1.0,
                            at_most=True, detail=counts))
    print_verdicts(verdicts)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    # SIGTERM takes the same way out as Ctrl-C, so gunicorn is always stopped.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    args = parse_args(argv)
    try:
        run(args)
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
