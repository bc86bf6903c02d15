"""Fault tests with real worker processes on PostgreSQL: races, SIGKILL, SIGSTOP, a flushed Redis.

Each process runs in its own session and is signalled by its own group id only; every
process is stopped in ``finally``. Jobs are the harness's test job (worker_harness.py):
claims are recorded in files, effects as ``test.effect`` audit rows written in the fenced
completion transaction.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.db import connection
from django.utils import timezone

from occ.models import AuditEvent, ControllerWork, Namespace, NamespaceStatus, WorkState
from project.data_dir import DataDir
from tests.conftest import service_missing
from tests.parallel import worker_index
from tests.provisioning.worker_harness import HarnessProcess, read_claims

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# This suite's own Redis database (flushed freely; never FLUSHALL): 11, or the next ones for each
# worker of a parallel run (tests/parallel.py).
REDIS_URL = os.environ.get("OCC_TEST_FAULTS_REDIS_URL", f"redis://127.0.0.1:6379/{11 + worker_index()}")
LEASE, HEARTBEAT, SWEEP = 2.0, 0.5, 0.5


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)
    return time.monotonic() - started


def harness_database_url() -> str:
    """The URL of the database this test runs on (pytest-django's test database)."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


@pytest.fixture
def harness(tmp_path) -> Iterator[Callable[..., HarnessProcess]]:
    """Start harness processes; all of them are stopped when the test ends."""
    started: list[HarnessProcess] = []
    records = tmp_path / "records"
    records.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"OCC_TEST_DATABASE_NAME", "PYTEST_ADDOPTS"}}
    DataDir(tmp_path / "data").create()
    env.update(
        DATABASE_URL=harness_database_url(), OCC_DATA_DIR=str(tmp_path / "data"), PYTHONUNBUFFERED="1",
        CELERY_BROKER_URL=REDIS_URL, HARNESS_RECORD_DIR=str(records),
        OCC_WORKER_LEASE_SECONDS=str(LEASE), OCC_WORKER_HEARTBEAT_SECONDS=str(HEARTBEAT),
        OCC_SWEEP_INTERVAL_SECONDS=str(SWEEP), OCC_LOG_LEVEL="INFO",
    )

    def start(mode: str = "loop", **extra: str) -> HarnessProcess:
        process = HarnessProcess(mode, env=env | extra, log_dir=tmp_path, name=f"{mode}-{len(started)}")
        started.append(process)
        return process

    start.records = records  # type: ignore[attr-defined]
    try:
        yield start
    finally:
        for process in started:
            process.stop()
        assert not [p.name for p in started if p.alive()], "a harness process outlived its test"


@pytest.fixture
def namespace() -> Namespace:
    return Namespace.objects.create(name="faults", status=NamespaceStatus.READY)


def create_rows(namespace: Namespace, count: int, *, prefix: str = "agt", shared_every: int = 0,
                retry_every: int = 0) -> list[str]:
    """``count`` queued rows, committed. Every ``shared_every``-th row shares its Agent with the
    previous one (per-resource serialization); every ``retry_every``-th retries once."""
    now = timezone.now() - timedelta(milliseconds=1)
    rows = []
    for i in range(count):
        agent = f"{prefix}_{i - 1 if shared_every and i % shared_every == 1 else i:05d}"
        key = f"agent:{agent}:stopped:{i}" + ("-retry" if retry_every and i % retry_every == 0 else "")
        rows.append(ControllerWork(
            idempotency_key=key, job="agent_stop", namespace=namespace, actor_id="usr_faults", agent_id=agent,
            agent_target="stopped", state=WorkState.QUEUED, available_at=now, max_attempts=5, created_at=now,
            updated_at=now))
    ControllerWork.objects.bulk_create(rows)
    return [row.idempotency_key for row in rows]


def effects() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action="test.effect"))


def states(keys: list[str]) -> Counter:
    return Counter(ControllerWork.objects.filter(pk__in=keys).values_list("state", flat=True))


def all_terminal(keys: list[str]) -> Callable[[], bool]:
    return lambda: ControllerWork.objects.filter(pk__in=keys, state__in=["succeeded", "failed_permanent"]).count() \
        == len(keys)


# --- racing workers ------------------------------------------------------------------------

def test_racing_workers_claim_each_row_once_per_attempt(namespace, harness, tmp_path):
    keys = create_rows(namespace, 300, shared_every=5, retry_every=25)
    go = tmp_path / "go"
    workers = [harness("loop", HARNESS_GO_FILE=str(go), HARNESS_IDLE_EXIT="3") for _ in range(3)]
    for worker in workers:
        worker.wait_for_log("harness.ready", timeout=60)
    go.touch()

    elapsed = wait_until(all_terminal(keys), timeout=90, what="300 rows to finish")

    rows = {row.pk: row for row in ControllerWork.objects.filter(pk__in=keys)}
    assert states(keys) == Counter({WorkState.SUCCEEDED: 300})
    claims = read_claims(harness.records)
    per_attempt = Counter((key, attempt) for key, attempt, _, _ in claims)
    assert max(per_attempt.values()) == 1, "a row was claimed twice in one attempt"
    retried = {key for key in keys if key.endswith("-retry")}
    expected = {(key, 1) for key in keys} | {(key, 2) for key in retried}
    assert set(per_attempt) == expected
    assert all(rows[key].attempt_count == (2 if key in retried else 1) for key in keys)
    assert len({token for _, _, token, _ in claims}) == len(claims), "every claim has its own token"
    assert Counter(e.resource_id for e in effects()) == Counter(keys), "exactly one effect per row"
    by_worker = Counter(pid for _, _, _, pid in claims)
    assert len(by_worker) == 3, f"all three workers claimed rows: {by_worker}"
    print(f"\n300 rows, 3 processes: {elapsed:.1f}s; claims per worker {sorted(by_worker.values())}")


# --- a worker killed mid-job ---------------------------------------------------------------

def test_a_killed_worker_loses_its_lease_and_another_completes_the_work(namespace, harness):
    first = harness("loop", HARNESS_JOB="hang-first")
    first.wait_for_log("harness.ready", timeout=60)
    [key] = create_rows(namespace, 1, prefix="agt_kill")
    wait_until(lambda: read_claims(harness.records), timeout=30, what="the first claim")
    claimed = ControllerWork.objects.get(pk=key)

    time.sleep(LEASE + 1)  # past the first lease: the heartbeat renews it from another thread
    renewed = ControllerWork.objects.get(pk=key)
    assert (renewed.state, renewed.claim_token) == (WorkState.CLAIMED, claimed.claim_token)
    assert renewed.lease_expires_at > claimed.lease_expires_at

    second = harness("loop", HARNESS_JOB="hang-first")
    second.wait_for_log("harness.ready", timeout=60)
    first.signal(signal.SIGKILL)
    killed_at = time.monotonic()
    first.wait_exit(timeout=10)

    wait_until(lambda: ControllerWork.objects.get(pk=key).state == WorkState.SUCCEEDED, timeout=30,
               what="the second worker to complete the work")
    recovery = time.monotonic() - killed_at

    row = ControllerWork.objects.get(pk=key)
    claims = read_claims(harness.records)
    assert [(attempt, pid) for _, attempt, _, pid in claims] == [(1, first.pid), (2, second.pid)]
    assert (row.attempt_count, row.reason_code) == (2, "TEST_DONE")
    [effect] = effects()
    assert effect.details["pid"] == second.pid
    assert effect.details["attempt"] == 2
    # lease + sweep interval + the first retry's backoff (≤ 1 s) + process slack
    assert recovery < LEASE + SWEEP + 1 + 3, f"recovered in {recovery:.1f}s"
    print(f"\nrecovery after SIGKILL: {recovery:.2f}s (lease {LEASE}s, sweep {SWEEP}s)")


# --- a worker paused past its lease --------------------------------------------------------

def test_a_paused_worker_resumed_after_its_lease_commits_nothing(namespace, harness, tmp_path):
    """The paused step ends only when the test releases it, after its lease has observably
    expired and another worker has reclaimed and completed the row: the resumed worker's
    commit can only meet a lost claim, however slow the machine is."""
    release = tmp_path / "release-the-paused-step"
    paused = harness("loop", HARNESS_JOB="hang-first", HARNESS_RELEASE_FILE=str(release))
    paused.wait_for_log("harness.ready", timeout=60)
    other = harness("loop", HARNESS_JOB="hang-first")
    [key] = create_rows(namespace, 1, prefix="agt_pause")
    wait_until(lambda: read_claims(harness.records), timeout=30, what="the first claim")
    [(_, _, first_token, first_pid)] = read_claims(harness.records)
    assert first_pid == paused.pid, "the paused worker holds the first claim"
    other.wait_for_log("harness.ready", timeout=60)

    paused.signal(signal.SIGSTOP)
    try:
        wait_until(lambda: ControllerWork.objects.get(pk=key).state == WorkState.SUCCEEDED, timeout=60,
                   what="the other worker to take over and complete")
        finished = ControllerWork.objects.get(pk=key)
        assert finished.attempt_count == 2, "another worker reclaimed the row after the first lease expired"
        release.touch()
    finally:
        paused.signal(signal.SIGCONT)

    wait_until(lambda: f"resumed {key} 1" in (harness.records / f"claims-{paused.pid}.log").read_text(),
               timeout=60, what="the paused job to finish its step")
    # Generous: on a loaded 2-core machine the resumed process may wait long for a CPU.
    paused.wait_for_log("worker.error CLAIM_LOST", timeout=60)

    row = ControllerWork.objects.get(pk=key)
    assert (row.state, row.attempt_count, row.completed_at, row.updated_at) == (
        WorkState.SUCCEEDED, 2, finished.completed_at, finished.updated_at), "the resumed worker wrote nothing"
    [effect] = effects()
    assert effect.details["pid"] == other.pid
    assert effect.details["token"] != first_token
    assert "worker.completed key" not in paused.log()


# --- lost messages -------------------------------------------------------------------------

@pytest.fixture
def redis_db():
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError:
        service_missing(f"needs Redis at {REDIS_URL}")
    client.flushdb()
    try:
        yield client
    finally:
        client.flushdb()
        client.close()


def test_queued_work_survives_a_flushed_redis_and_completes_through_the_sweep(redis_db, namespace, harness,
                                                                             monkeypatch):
    """Nudges lost with the broker's data cost the sweep's grace (OCC_SWEEP_NUDGE_AFTER_SECONDS,
    five intervals here) and one interval, nothing more.

    (``redis_db`` comes first so that it is flushed after the harness processes stopped.)"""
    from celery import Celery

    keys = create_rows(namespace, 5, prefix="agt_flush")
    # Celery prefers CELERY_BROKER_URL from the environment (CI sets it) over broker=.
    monkeypatch.setenv("CELERY_BROKER_URL", REDIS_URL)
    sender = Celery("faults", broker=REDIS_URL)
    try:
        for key in keys:
            sender.send_task("provisioning.run_work", args=(key,), queue="work")
    finally:
        sender.close()
    assert redis_db.llen("work") == len(keys), "the nudges were in Redis"
    redis_db.flushdb()
    assert redis_db.llen("work") == 0

    worker = harness("celery-worker")
    harness("celery-beat")
    worker.wait_for_log("ready.", timeout=60)
    elapsed = wait_until(all_terminal(keys), timeout=30, what="the sweep to nudge the lost work")

    assert states(keys) == Counter({WorkState.SUCCEEDED: len(keys)})
    assert all(row.attempt_count == 1 for row in ControllerWork.objects.filter(pk__in=keys))
    assert Counter(e.resource_id for e in effects()) == Counter(keys)
    # The sweep logs at INFO only when it found something to do (DEBUG otherwise).
    assert re.search(r"worker\.sweep requeued=\d+ failed=\d+ nudged=[1-9]", worker.log()), worker.log()[-2000:]
    print(f"\nlost nudges recovered through the sweep {elapsed:.1f}s after the worker was ready")


def test_deferred_work_comes_back_at_its_due_time_without_the_sweep(redis_db, namespace, harness, monkeypatch):
    """A deferral is nudged again, counted down to its due time, by the worker that deferred it:
    no beat runs here, so only that countdown can bring the work back."""
    from celery import Celery

    [key] = create_rows(namespace, 1, prefix="agt_defer")
    monkeypatch.setenv("CELERY_BROKER_URL", REDIS_URL)
    worker = harness("celery-worker", HARNESS_JOB="defer-first", HARNESS_DEFER_SECONDS="1.5",
                     OCC_SWEEP_INTERVAL_SECONDS="600")
    worker.wait_for_log("ready.", timeout=60)
    sender = Celery("faults", broker=REDIS_URL)
    try:
        sender.send_task("provisioning.run_work", args=(key,), queue="work")
    finally:
        sender.close()
    wait_until(all_terminal([key]), timeout=30, what="the deferred work to come back")

    row = ControllerWork.objects.get(pk=key)
    assert (row.state, row.attempt_count) == (WorkState.SUCCEEDED, 1), "the deferral refunded its attempt"
    assert [claim[0] for claim in read_claims(harness.records)] == [key, key]  # type: ignore[attr-defined]
    assert row.completed_at - row.created_at >= timedelta(seconds=1.5), "not before its due time"
