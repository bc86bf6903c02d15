"""Real worker processes for the fault tests, with a test job in place of job_for.

Run as ``python -m tests.provisioning.worker_harness <mode>``:

- ``loop``: what a worker does without Celery — sweep (no nudges) every
  ``OCC_SWEEP_INTERVAL_SECONDS``, then claim and run the oldest due row, until idle for
  ``HARNESS_IDLE_EXIT`` seconds (0: until SIGTERM) or ``HARNESS_MAX_SECONDS``.
- ``celery-worker``: a real ``celery worker`` (prefork) on the queues of the enum.
- ``celery-beat``: a real ``celery beat`` (the sweep schedule).

The test job (``HARNESS_JOB``): every claim appends ``claim <key> <attempt> <token> <pid>`` to
``HARNESS_RECORD_DIR/claims-<pid>.log`` before anything else; completion writes one
``test.effect`` audit row in the fenced transaction (so effects are counted in the database,
and a fenced-out completion leaves none). ``noop`` completes at once (a key ending in
``-retry`` retries its first attempt); ``defer-first`` defers its first claim by
``HARNESS_DEFER_SECONDS``; ``hang-first`` sleeps ``HARNESS_HANG_SECONDS`` (or waits for
``HARNESS_RELEASE_FILE`` to exist) in its first attempt before completing — the window in
which a test kills or pauses the process.
``real`` keeps the real jobs (``job_for``); with ``HARNESS_PAUSE=before:<step>`` or
``after:<step>`` a step function of provisioning/jobs/provision.py (``configure``,
``begin_transport``, ``send_transport``, ``receipt_transport``, ``hand_off``; or
``<module>.<function>`` of another job module) records
``paused <step> 0 - <pid>`` at that boundary and then sleeps until the test kills it.

The test side (``HarnessProcess``) starts each process in its own session and signals only
that process group.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from provisioning.queues import Queue

REPO = Path(__file__).resolve().parents[2]
QUEUES = ",".join(queue.value for queue in Queue)


# --- inside the harness process ------------------------------------------------------------

def _record(line: str) -> None:
    path = Path(os.environ["HARNESS_RECORD_DIR"]) / f"claims-{os.getpid()}.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _effect(key: str, attempt: int, token: str):
    def write() -> None:
        from occ.models import AuditEvent, AuditKind, AuditOutcome

        AuditEvent.objects.create(kind=AuditKind.RECONCILE, action="test.effect", outcome=AuditOutcome.SUCCEEDED,
                                  resource_id=key, details={"pid": os.getpid(), "attempt": attempt, "token": token})
    return write


def test_job(claim: Any) -> Any:
    from provisioning.outcomes import Complete, Defer, Retry

    work = claim.work
    _record(f"claim {claim.key} {work.attempt_count} {claim.token} {os.getpid()}")
    mode = os.environ.get("HARNESS_JOB", "noop")
    if mode == "noop" and claim.key.endswith("-retry") and work.attempt_count == 1:
        return Retry("DEPENDENCY_UNAVAILABLE")
    if mode == "defer-first" and work.last_attempt_code is None:
        return Defer("RECONCILIATION_PENDING", delay_seconds=float(os.environ.get("HARNESS_DEFER_SECONDS", "1")))
    if mode == "hang-first" and work.attempt_count == 1:
        _hang()
        _record(f"resumed {claim.key} {work.attempt_count} {claim.token} {os.getpid()}")
    return Complete("TEST_DONE", effects=_effect(claim.key, work.attempt_count, claim.token))


def _hang() -> None:
    """``HARNESS_RELEASE_FILE``: until the test creates that file (the test decides when the
    step ends, so no timing can end it early); otherwise ``HARNESS_HANG_SECONDS``."""
    release = os.environ.get("HARNESS_RELEASE_FILE")
    if not release:
        time.sleep(float(os.environ.get("HARNESS_HANG_SECONDS", "60")))
        return
    deadline = time.monotonic() + 600
    while not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _install_test_jobs() -> None:
    from provisioning import queue

    if os.environ.get("HARNESS_JOB") == "real":
        _install_pause()
        return
    queue.resolve_job = lambda work: test_job


def _install_pause() -> None:
    """Hold the process at one phase boundary of a job (HARNESS_PAUSE): ``when:step`` for a
    step of the provisioning job, ``when:module.step`` for one of another job module
    (``before:revision._finalize``: the revision is published, nothing activated yet)."""
    pause = os.environ.get("HARNESS_PAUSE")
    if not pause:
        return
    when, qualified = pause.split(":")
    module_name, _, name = qualified.rpartition(".")
    job_module = importlib.import_module(f"provisioning.jobs.{module_name or 'provision'}")
    original = getattr(job_module, name)

    def hold() -> None:
        _record(f"paused {name} 0 - {os.getpid()}")
        time.sleep(float(os.environ.get("HARNESS_HANG_SECONDS", "600")))

    def paused(*args: Any, **kwargs: Any) -> Any:
        if when == "before":
            hold()
        result = original(*args, **kwargs)
        if when == "after":
            hold()
        return result

    setattr(job_module, name, paused)


def _loop() -> None:
    from django.conf import settings
    from django.db import close_old_connections

    from provisioning import queue

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    go_file = os.environ.get("HARNESS_GO_FILE")
    print("harness.ready", flush=True)
    if go_file:
        deadline = time.monotonic() + 60
        while not Path(go_file).exists() and time.monotonic() < deadline and not stopping:
            time.sleep(0.02)
    idle_exit = float(os.environ.get("HARNESS_IDLE_EXIT", "0"))
    end = time.monotonic() + float(os.environ.get("HARNESS_MAX_SECONDS", "120"))
    last_work = last_sweep = time.monotonic()
    while not stopping and time.monotonic() < end:
        close_old_connections()
        if time.monotonic() - last_sweep >= settings.OCC_SWEEP_INTERVAL_SECONDS:
            queue.sweep(nudge=False)
            last_sweep = time.monotonic()
        claim = queue.claim()
        if claim is not None:
            queue.run_claimed(claim)
            last_work = time.monotonic()
        elif idle_exit and time.monotonic() - last_work > idle_exit:
            break
        else:
            time.sleep(0.05)
    print("harness.stopped", flush=True)


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    _install_test_jobs()
    mode = argv[0] if argv else "loop"
    if mode == "loop":
        _loop()
        return 0
    from project import celery_app

    if mode == "celery-worker":
        celery_app.worker_main(["worker", "-Q", QUEUES, "--concurrency", os.environ.get("HARNESS_CONCURRENCY", "2"),
                                "--loglevel", "INFO", "--without-gossip", "--without-mingle",
                                "-n", f"harness-{os.getpid()}@localhost"])
        return 0
    if mode == "celery-beat":
        return celery_app.start(["beat", "--loglevel", "INFO"]) or 0
    raise SystemExit(f"unknown mode {mode!r}")


# --- on the test side ----------------------------------------------------------------------

class HarnessProcess:
    """One harness process in its own session; every signal goes to that group only."""

    STOP_TIMEOUT = 15

    def __init__(self, mode: str, *, env: dict[str, str], log_dir: Path, name: str) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.provisioning.worker_harness", mode], cwd=REPO, env=env,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        self.pgid = self.process.pid  # start_new_session: the group is the child's own

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, sig)

    def wait_for_log(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited ({self.process.returncode}):\n{self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no {text!r} within {timeout}s:\n{self.tail()}")
            time.sleep(0.05)

    def wait_exit(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)

    def alive(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        return True

    def stop(self) -> None:
        """SIGCONT (it may be paused), SIGTERM, then SIGKILL the group after a timeout."""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        deadline = time.monotonic() + self.STOP_TIMEOUT
        while time.monotonic() < deadline and (self.process.poll() is None or self.alive()):
            time.sleep(0.1)
        if self.alive():
            self.signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=self.STOP_TIMEOUT)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])


def read_claims(record_dir: Path) -> list[tuple[str, int, str, int]]:
    """Every ``claim`` line of every process: (key, attempt, token, pid), by key and attempt
    (the files are per pid, and pids do not grow in time once they wrap around)."""
    claims = []
    for path in sorted(record_dir.glob("claims-*.log")):
        for line in path.read_text().splitlines():
            kind, key, attempt, token, pid = line.split()
            if kind == "claim":
                claims.append((key, int(attempt), token, int(pid)))
    return sorted(claims, key=lambda claim: (claim[0], claim[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
