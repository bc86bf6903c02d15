"""What the controller-worker benchmarks share: the database, a seeded world, worker
processes, the work-row transition log, machine facts and the PASS/MISS table.

Used by bench/queue_claim.py, bench/worker_wakeup.py, bench/worker_recovery.py and
bench/activation_local.py. The statistics (``percentile``, ``ratio``) and the database reset
(``recreate_database``) are the API benchmark's, imported from bench/api_latency.py.

Every process started here runs in its own session and is stopped by its process-group id
(SIGTERM, then SIGKILL after a grace period); nothing is ever signalled by name.

One module of ~530 lines: the support every worker benchmark shares, kept in one place so
that each benchmark script stays short.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from bench.api_latency import BenchError, database_name, mark_namespace_ready, percentile, ratio, recreate_database
from occ.commands.agents import AgentCreate, AgentSecretAccess, HarnessAuth
from occ.commands.configurations import ConfigurationCreate
from occ.commands.secrets import SecretCreate
from project.data_dir import DataDir

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

# Re-exported for the benchmark scripts: the API benchmark's statistics and database reset.
__all__ = ["BenchError", "percentile", "ratio", "recreate_database"]


# --- configuration ------------------------------------------------------------------------


def bench_database_url(default_name: str) -> str:
    """``DATABASE_URL`` if set, else ``postgres://postgres@127.0.0.1:5432/<default_name>``.

    The database is dropped and recreated, so its name must contain ``bench``."""
    url = os.environ.get("DATABASE_URL") or f"postgres://postgres@127.0.0.1:5432/{default_name}"
    if not url.startswith(("postgres://", "postgresql://")):
        raise BenchError("The worker benchmarks run on PostgreSQL: set DATABASE_URL=postgres://...")
    database_name(url)
    return url


def libpq_url(database_url: str) -> str:
    """The same URL in the ``postgresql://`` form psycopg and pgbench accept."""
    return urlunsplit(urlsplit(database_url)._replace(scheme="postgresql"))


def redis_db_number(url: str) -> int:
    """The database number of ``redis://host:port/<n>``; only 1-15 (0 belongs to CI and others)."""
    match = re.fullmatch(r"redis://127\.0\.0\.1:\d+/(\d+)", url)
    if match is None or not 1 <= int(match.group(1)) <= 15:
        raise BenchError(f"The Redis URL must be redis://127.0.0.1:<port>/<1-15> (loopback, own db); got {url!r}.")
    return int(match.group(1))


def flush_redis_db(url: str) -> None:
    """FLUSHDB on this benchmark's own database number (never FLUSHALL)."""
    import redis

    redis_db_number(url)
    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    try:
        client.flushdb()
    except redis.RedisError as exc:
        raise BenchError(f"Redis at {url} is not reachable ({type(exc).__name__}).") from exc
    finally:
        client.close()


def process_env(database_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of every OCC process of a run (this one and the workers it starts), with
    ``data_dir`` created (``make init``)."""
    DataDir(data_dir).create()
    env = os.environ.copy()
    env.update({
        "DJANGO_SETTINGS_MODULE": "project.settings", "DATABASE_URL": database_url, "OCC_DATA_DIR": str(data_dir),
        "PYTHONUNBUFFERED": "1", "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    })
    env.setdefault("OCC_LOG_LEVEL", "WARNING")
    env.update(extra)
    return env


def configure_django(env: Mapping[str, str]) -> None:
    """Configure this process with the run's environment (``process_env``) and set Django up."""
    os.environ.update(env)
    import django

    django.setup()


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


# --- machine facts ------------------------------------------------------------------------


def machine_facts(database_url: str) -> dict[str, str]:
    import psycopg

    facts = {"cpus": str(os.cpu_count()), "cpu": platform.processor() or "unknown",
             "python": platform.python_version(), "loadavg (1/5/15 min)": loadavg()}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
                break
    with psycopg.connect(libpq_url(database_url), connect_timeout=5) as conn:
        for setting in ("server_version", "synchronous_commit", "fsync"):
            row = conn.execute(f"SHOW {setting}").fetchone()
            facts[f"pg {setting}"] = str(row[0]) if row else "?"
    return facts


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def print_facts(title: str, facts: Mapping[str, str]) -> None:
    print(title)
    for name, value in facts.items():
        print(f"  {name:<24}{value}")


def busy_note() -> str | None:
    one_minute = os.getloadavg()[0]
    if one_minute > (os.cpu_count() or 1):
        return (f"note: load average {one_minute:.2f} on {os.cpu_count()} CPUs: other processes competed for the "
                "CPUs during this run; ratios are still side by side, but rerun on a quiet machine to compare.")
    return None


# --- pgbench ------------------------------------------------------------------------------


def parse_pgbench(output: str) -> float:
    """Transactions per second (without connection time) of one pgbench run's output.

    A run whose clients aborted (e.g. a claim found no row) or that failed transactions gives
    no figure: its rate would describe a different workload."""
    if "aborted" in output or re.search(r"number of failed transactions: [1-9]", output):
        raise BenchError(f"pgbench did not complete every transaction:\n{output[-1500:]}")
    match = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", output)
    if match is None:
        raise BenchError(f"pgbench printed no tps figure:\n{output[-1500:]}")
    return float(match.group(1))


def pgbench_path() -> str:
    for candidate in ("pgbench", "/usr/lib/postgresql/15/bin/pgbench"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run([candidate, "--version"], capture_output=True, timeout=10, check=True)
            return candidate
    raise BenchError("pgbench is not installed (apt-get install postgresql-client).")


# --- waiting --------------------------------------------------------------------------------


def wait_until(check: Callable[[], T | None], *, timeout: float, interval: float = 0.02,
               what: str = "the condition") -> T:
    """Poll ``check`` until it returns something other than None/False, at most ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


# --- processes ----------------------------------------------------------------------------


class ManagedProcess:
    """A child in its own session; every signal goes to that process group, by its id."""

    STOP_GRACE_SECONDS = 15.0

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str], log_path: Path, name: str) -> None:
        self.name = name
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(list(argv), cwd=ROOT, env=dict(env), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        self.pgid = self.process.pid

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def group_alive(self) -> bool:
        self.process.poll()
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def wait_for_log(self, text: str, timeout: float) -> None:
        def seen() -> bool:
            if self.process.poll() is not None:
                raise BenchError(f"{self.name} exited ({self.process.returncode}):\n{self.tail()}")
            return text in self.log()

        try:
            wait_until(seen, timeout=timeout, interval=0.05, what=f"{self.name} to log {text!r}")
        except BenchError as exc:
            raise BenchError(f"{exc}\n{self.tail()}") from None

    def kill(self) -> None:
        """SIGKILL the whole group (the fault a benchmark injects)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM the group, SIGKILL it after the grace period; reap the leader."""
        if self.group_alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, signal.SIGTERM)
            deadline = time.monotonic() + self.STOP_GRACE_SECONDS
            while time.monotonic() < deadline and self.group_alive():
                time.sleep(0.1)
            if self.group_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


WORKER_QUEUES = "work,maintenance"  # every queue of provisioning.queues.Queue (checked at start)


def celery_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "project", *args]


def start_worker(env: Mapping[str, str], log_dir: Path, name: str, *, concurrency: int = 1,
                 ready_timeout: float = 90.0) -> ManagedProcess:
    """A real ``celery worker`` (prefork) on every queue; returns once it logged ``ready``."""
    from provisioning.queues import Queue

    if set(WORKER_QUEUES.split(",")) != {queue.value for queue in Queue}:
        raise BenchError("bench/worker_support.py WORKER_QUEUES no longer matches provisioning.queues.Queue.")
    worker = ManagedProcess(
        celery_argv("worker", "-Q", WORKER_QUEUES, "--concurrency", str(concurrency), "--loglevel", "INFO",
                    "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{name}@localhost"),
        env=env, log_path=log_dir / f"{name}.log", name=name)
    try:
        worker.wait_for_log(" ready.", ready_timeout)
    except BaseException:
        worker.stop()
        raise
    return worker


def start_beat(env: Mapping[str, str], log_dir: Path, *, ready_timeout: float = 60.0) -> ManagedProcess:
    """``celery beat`` with its schedule file in the run's data folder; returns once it started."""
    beat = ManagedProcess(celery_argv("beat", "--loglevel", "INFO"), env=env, log_path=log_dir / "beat.log",
                          name="beat")
    try:
        beat.wait_for_log("beat: Starting", ready_timeout)
    except BaseException:
        beat.stop()
        raise
    return beat


# --- the transition log -----------------------------------------------------------------------

TRANSITION_TABLE = "bench_work_transitions"


def install_transition_log() -> None:
    """A trigger on the work table of this benchmark database: every state change, with the
    database clock at that moment, lands in ``bench_work_transitions``. The claim statement's
    own change (queued -> claimed) is the "claim started" time the wake-up and recovery
    figures use; nothing in OCC reads this table."""
    from django.db import connection

    from occ.models import ControllerWork

    table = connection.ops.quote_name(ControllerWork._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"""
            CREATE TABLE IF NOT EXISTS {TRANSITION_TABLE} (
                id bigserial PRIMARY KEY, key text NOT NULL, old_state text, new_state text NOT NULL,
                at timestamptz NOT NULL, attempt integer NOT NULL, available_at timestamptz,
                old_lease_expires_at timestamptz, code text)""")
        cursor.execute(f"""
            CREATE OR REPLACE FUNCTION bench_record_transition() RETURNS trigger AS $$
            BEGIN
                IF TG_OP = 'INSERT' OR NEW.state IS DISTINCT FROM OLD.state THEN
                    INSERT INTO {TRANSITION_TABLE} (key, old_state, new_state, at, attempt, available_at,
                                                    old_lease_expires_at, code)
                    VALUES (NEW.idempotency_key, CASE WHEN TG_OP = 'UPDATE' THEN OLD.state END, NEW.state,
                            clock_timestamp(), NEW.attempt_count, NEW.available_at,
                            CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_expires_at END, NEW.last_attempt_code);
                END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql""")
        cursor.execute(f"DROP TRIGGER IF EXISTS bench_work_transitions ON {table}")
        cursor.execute(f"CREATE TRIGGER bench_work_transitions AFTER INSERT OR UPDATE ON {table} "
                       "FOR EACH ROW EXECUTE FUNCTION bench_record_transition()")


@dataclass(frozen=True)
class Transition:
    key: str
    old_state: str | None
    new_state: str
    at: datetime
    attempt: int
    available_at: datetime | None = None
    old_lease_expires_at: datetime | None = None
    code: str | None = None

    @property
    def is_claim(self) -> bool:
        return self.old_state == "queued" and self.new_state == "claimed"


def read_transitions(key: str | None = None) -> list[Transition]:
    from django.db import connection

    where, params = ("WHERE key = %s", [key]) if key is not None else ("", [])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, old_state, new_state, at, attempt, available_at, old_lease_expires_at, code "
                       f"FROM {TRANSITION_TABLE} {where} ORDER BY id", params)
        return [Transition(*row) for row in cursor.fetchall()]


def first_claim_after(transitions: Iterable[Transition], key: str, moment: float) -> Transition | None:
    """The first queued -> claimed change of ``key`` at or after ``moment`` (epoch seconds)."""
    for transition in transitions:
        if transition.key == key and transition.is_claim and transition.at.timestamp() >= moment:
            return transition
    return None


# --- fake compute effects ---------------------------------------------------------------------

# Fake ComputeDriver methods that change its world (the rest only read it).
EFFECT_METHODS = ("prepare_revision", "activate_revision", "retire_revision", "stop_revision",
                  "deactivate_revision", "provision_runtime_credentials", "delete_runtime_credentials",
                  "ensure_namespace", "delete_namespace")


def duplicate_effects(calls: Iterable[Sequence[str]], *, allowed: Mapping[tuple[str, str], int] | None = None,
                      ) -> dict[tuple[str, str], int]:
    """(method, target) -> calls, for every effect call made more often than allowed (once,
    unless ``allowed`` says otherwise, e.g. a call killed before it took effect)."""
    allowed = allowed or {}
    counts: dict[tuple[str, str], int] = {}
    for method, target in calls:
        if method in EFFECT_METHODS:
            counts[(method, target)] = counts.get((method, target), 0) + 1
    return {call: n for call, n in counts.items() if n > allowed.get(call, 1)}


# --- a seeded world -----------------------------------------------------------------------------

FAKE_DOCUMENT: dict[str, Any] = {"agents": {"defaults": {"skipBootstrap": True,
                                                         "model": {"primary": "openai/gpt-5"}}}}


@dataclass
class World:
    actor: Any
    namespace_id: str
    harness_secret_id: str
    agents: list[Any] = field(default_factory=list)


def seed_world() -> World:
    """Migrate, bootstrap, and mark ``default`` ready as its worker would (that work row is
    closed, so it never competes with the measured work)."""

    from occ.iam.actor import Actor, Source
    from occ.models import Namespace
    from occ.services.bootstrap import installation_bootstrap
    from occ.services.secrets import secret_create

    migrate()
    result = installation_bootstrap(name="OCC worker bench", admin_username="admin",
                                    admin_password=secrets.token_urlsafe(18), key_days=1)
    if not result.created or result.key is None:
        raise BenchError("Bootstrap did not create a fresh Installation.")
    namespace = Namespace.objects.get(name="default")
    mark_namespace_ready(namespace.id)
    actor = Actor(principal=result.key.principal, source=Source.CLI)
    harness = secret_create(actor=actor, namespace_id=namespace.id,
                            command=SecretCreate(name="bench-model-key", value="sk-bench-" + secrets.token_hex(12)))
    return World(actor=actor, namespace_id=namespace.id, harness_secret_id=harness.id)


def add_agent(world: World, name: str, document: Mapping[str, Any] = FAKE_DOCUMENT) -> Any:
    """A deployable Agent: its Configuration, the api_key harness Secret, and ``secret:operate``
    on that Secret for its own service principal."""
    from occ.services.agent_secret_access import agent_secret_access_grant
    from occ.services.agents import agent_create
    from occ.services.configurations import configuration_create

    configuration = configuration_create(actor=world.actor, namespace_id=world.namespace_id,
                                         command=ConfigurationCreate(kind="agent", values=dict(document)))
    agent = agent_create(actor=world.actor, namespace_id=world.namespace_id,
                         command=AgentCreate(name=name, configuration_id=configuration.id,
                                             harness_auth=HarnessAuth.model_validate({
                                                 "method": "api_key", "source": {
                                                     "kind": "secret", "namespaceId": world.namespace_id,
                                                     "id": world.harness_secret_id}})))
    agent_secret_access_grant(actor=world.actor, namespace_id=world.namespace_id, agent_id=agent.id,
                              command=AgentSecretAccess(secret_ids=[world.harness_secret_id]))
    world.agents.append(agent)
    return agent


def deploy_committed_at(world: World, agent: Any) -> tuple[Any, float]:
    """Deploy ``agent``; returns the revision and the wall-clock moment its transaction
    committed (taken by the first on-commit callback, before the service's nudge is sent)."""
    from django.db import transaction

    from occ.services.deploy import agent_deploy

    committed: list[float] = []
    with transaction.atomic():
        transaction.on_commit(lambda: committed.append(time.time()))
        revision = agent_deploy(actor=world.actor, namespace_id=world.namespace_id, agent_id=agent.id)
    return revision, committed[0]


def work_state(key: str) -> Any:
    from occ.models import ControllerWork

    return ControllerWork.objects.filter(pk=key).values("state", "reason_code", "attempt_count", "completed_at",
                                                        "last_attempt_code").first()


def wait_terminal(key: str, timeout: float) -> dict[str, Any]:
    from django.db import close_old_connections

    def terminal() -> dict[str, Any] | None:
        close_old_connections()
        row = work_state(key)
        return row if row is not None and row["state"] in ("succeeded", "failed_permanent") else None

    return wait_until(terminal, timeout=timeout, interval=0.02, what=f"work {key} to finish")


# --- the scripts' ends ------------------------------------------------------------------------


def print_closing(started: float, *, suffix: str = "") -> None:
    """The last lines of a run: its duration, the load average now, and the busy note if any."""
    print(f"\ntotal {time.monotonic() - started:.1f} s; load average now {loadavg()} on {os.cpu_count()} CPUs."
          + (f" {suffix}" if suffix else ""))
    if note := busy_note():
        print(note)


def bench_main(parse_args: Callable[[Sequence[str] | None], Any], run: Callable[[Any], Any],
               argv: Sequence[str] | None) -> int:
    """A benchmark script's ``main``: SIGTERM exits through ``finally`` (so every process the
    run started is stopped), and a BenchError is one line on stderr and exit status 1."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    args = parse_args(argv)
    try:
        run(args)
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    return 0
