"""OCC started by a test the way ``make run`` starts it, on a database of its own.

``OccStack`` runs preflight, migrate and bootstrap, then web (gunicorn), a Celery worker and
Celery beat, each in its own session (process group), with the embedded defaults: the
filesystem broker under a temporary ``OCC_DATA_DIR``, the ``local`` compute driver, and
SQLite in that folder — or, when the tests run on PostgreSQL, a database of its own on the
same server, created and dropped here. The test talks to it over HTTP only, except that it
can attach its own default database connection to the stack's database for a moment
(``attached()``) to read what no API returns, such as the gateway password through the
SecretDriver.

Every process is signalled through its own group id and stopped in ``stop()``; gateways the
worker started run in their own groups and are the test's to stop (by verified PID).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.db import DEFAULT_DB_ALIAS, connections

from provisioning.queues import Queue
from tests.ports import free_port
from tests.processes import group_running

REPO = Path(__file__).resolve().parents[2]
QUEUES = ",".join(queue.value for queue in Queue)
# What the stack must not inherit from the test run: it chooses its own database, broker,
# data folder, keys and driver.
REMOVED_ENV = frozenset({
    "DATABASE_URL", "CELERY_BROKER_URL", "OCC_TEST_DATABASE_NAME", "OCC_DATA_DIR", "OCC_PORT", "OCC_SECRET_KEYS",
    "OCC_DJANGO_SECRET_KEY", "OCC_ADMIN_PASSWORD", "OCC_COMPUTE_DRIVER", "OCC_FAKE_COMPUTE_STATE",
    "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST", "MAKEFLAGS", "MAKELEVEL", "MFLAGS",
})
COMMAND_TIMEOUT_SECONDS = 300
START_TIMEOUT_SECONDS = 240
STOP_TIMEOUT_SECONDS = 20



def wait_until(condition: Callable[[], Any], *, timeout: float, what: str, interval: float = 0.5,
               diagnose: Callable[[], str] = lambda: "") -> Any:
    """Poll ``condition`` until it returns something truthy (returned), or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{diagnose()}")
        time.sleep(interval)


# --- the database --------------------------------------------------------------------------------


@dataclass(frozen=True)
class StackDatabase:
    """The stack's database: ``url`` for its processes (None: SQLite in its data folder) and
    the ``NAME`` the test's own connection uses when it attaches."""

    url: str | None
    name: str


@contextlib.contextmanager
def stack_database(data_dir: Path, *, suffix: str = "e2e") -> Iterator[StackDatabase]:
    """SQLite under ``data_dir``, or a fresh PostgreSQL database when the tests run on PostgreSQL."""
    current = connections[DEFAULT_DB_ALIAS]
    if current.vendor != "postgresql":
        yield StackDatabase(url=None, name=str(data_dir / "occ.sqlite3"))
        return
    import psycopg

    # Named after this run's own test database (test_<name>, or OCC_TEST_DATABASE_NAME), so two runs
    # on one server (each with its own DATABASE_URL) never drop each other's stack database.
    params = current.settings_dict
    name = f"{params['NAME']}_{suffix}"[:63]
    admin = {"dbname": "postgres", "host": params["HOST"] or None, "port": params["PORT"] or None,
             "user": params["USER"] or None, "password": params["PASSWORD"] or None}
    with psycopg.connect(**{k: v for k, v in admin.items() if v is not None}, autocommit=True) as server:
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        server.execute(f'CREATE DATABASE "{name}"')
        try:
            parts = urlsplit(os.environ["DATABASE_URL"])
            yield StackDatabase(url=urlunsplit(parts._replace(path="/" + name)), name=name)
        finally:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def attached(database: StackDatabase) -> Iterator[None]:
    """Point this thread's default connection at the stack's database, then back.

    (Call it inside ``django_db_blocker.unblock()``: the test is not a pytest-django DB test.)"""
    original = connections[DEFAULT_DB_ALIAS]
    replacement = original.__class__({**original.settings_dict, "NAME": database.name}, alias=DEFAULT_DB_ALIAS)
    connections[DEFAULT_DB_ALIAS] = replacement
    try:
        yield
    finally:
        replacement.close()
        connections[DEFAULT_DB_ALIAS] = original


# --- processes -----------------------------------------------------------------------------------


class StackProcess:
    """One long-running process in its own session; every signal goes to that group only."""

    def __init__(self, name: str, argv: list[str], *, env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        self.pgid = self.process.pid

    def alive(self) -> bool:
        return group_running(self.pgid)

    def signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, sig)

    def stop(self) -> None:
        """SIGTERM the leader (gunicorn and Celery stop their own children; a Celery pool
        child killed under its warm shutdown can leave it waiting), then SIGKILL the whole
        group if anything is left after a timeout."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while time.monotonic() < deadline and (self.process.poll() is None or self.alive()):
            time.sleep(0.2)
        if self.alive():
            self.signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=STOP_TIMEOUT_SECONDS)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def tail(self, lines: int = 30) -> str:
        return f"--- {self.name} ---\n" + "\n".join(self.log().splitlines()[-lines:])


class OccStack:
    def __init__(self, root: Path, *, database: StackDatabase, secret_key: str, gateway_ports: str,
                 extra_env: dict[str, str] | None = None,
                 process_env: dict[str, dict[str, str]] | None = None) -> None:
        self.root = root
        self.data_dir = root / "data"
        self.log_dir = root / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.database = database
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.processes: list[StackProcess] = []
        env = {k: v for k, v in os.environ.items() if k not in REMOVED_ENV}
        env.update(
            OCC_DATA_DIR=str(self.data_dir), OCC_PORT=str(self.port), OCC_COMPUTE_DRIVER="local",
            OCC_SECRET_KEYS=secret_key, OCC_LOCAL_GATEWAY_PORT_RANGE=gateway_ports, OCC_LOG_LEVEL="INFO",
            # The driver's 120 s default fails an activation a loaded test machine only made slow.
            OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS="300",
            # Plain http on loopback: cookies without Secure (OCC_HTTPS is on outside embedded mode).
            OCC_HTTPS="false",
            PYTHONUNBUFFERED="1", PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        )
        if database.url:
            env["DATABASE_URL"] = database.url
        env.update(extra_env or {})  # e.g. where the loopback fakes of Slack and model providers listen
        self.env = env
        # What one process kind gets on top ("web", "worker", "beat"): e.g. its own credentials.
        self.process_env = process_env or {}

    # --- commands ---------------------------------------------------------------------------
    def python(self, *args: str, timeout: float = COMMAND_TIMEOUT_SECONDS) -> str:
        """``python <args>`` with the stack's environment; its output (asserted exit 0)."""
        result = subprocess.run([sys.executable, *args], cwd=REPO, env=self.env, capture_output=True,
                                text=True, timeout=timeout, check=False)
        with (self.log_dir / "manage.log").open("a") as log:
            log.write(f"$ {' '.join(args[:3])} -> {result.returncode}\n{result.stderr}\n")
        assert result.returncode == 0, f"{' '.join(args[:2])} failed ({result.returncode}):\n{result.stderr[-3000:]}"
        return result.stdout

    def manage(self, *args: str, timeout: float = COMMAND_TIMEOUT_SECONDS) -> str:
        """``python manage.py <args>`` with the stack's environment; its output (asserted exit 0)."""
        return self.python("manage.py", *args, timeout=timeout)

    def init(self) -> None:
        """``make init``: the data directory, the only step that creates it."""
        self.python("-m", "project.data_dir")

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """What ``make run`` does after installing: init, preflight, migrate, bootstrap, then the Procfile."""
        self.init()
        self.manage("occ_preflight")
        self.manage("migrate", "--noinput", "-v0")
        self.manage("occ_bootstrap")
        python = sys.executable
        self._spawn("web", [python, "-m", "gunicorn", "project.wsgi:application", "-c", "python:project.gunicorn_conf",
                            "--bind", f"127.0.0.1:{self.port}"])
        self._spawn("worker", [python, "-m", "celery", "-A", "project", "worker", "-Q", QUEUES, "--concurrency", "2",
                               "--without-gossip", "--without-mingle", "--loglevel", "INFO"])
        self._spawn("beat", [python, "-m", "celery", "-A", "project", "beat", "--loglevel", "INFO"])
        wait_until(self._healthy, timeout=START_TIMEOUT_SECONDS, what="the web process to answer /healthz",
                   diagnose=self.tails)

    def _spawn(self, name: str, argv: list[str]) -> None:
        env = {**self.env, **self.process_env.get(name, {})}
        self.processes.append(StackProcess(name, argv, env=env, log_dir=self.log_dir))

    def _healthy(self) -> bool:
        for process in self.processes:
            if process.process.poll() is not None:
                raise AssertionError(f"{process.name} exited with {process.process.returncode}\n{self.tails()}")
        try:
            return httpx.get(f"{self.base_url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self) -> None:
        for process in self.processes:
            process.stop()

    def outlived(self) -> list[str]:
        return [process.name for process in self.processes if process.alive()]

    def tails(self) -> str:
        return "\n".join(process.tail() for process in self.processes)

    # --- what bootstrap wrote ---------------------------------------------------------------
    @property
    def api_key(self) -> str:
        return json.loads((self.data_dir / "bootstrap-admin-key.json").read_text())["data"]["key"]

    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers={"x-api-key": self.api_key}, timeout=30)
