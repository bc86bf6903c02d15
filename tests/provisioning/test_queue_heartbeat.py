"""The heartbeat thread keeps a long job's claim alive, notices a lost claim, and cleans up.

Transactional: the heartbeat has its own database connection and must see committed rows.
The leases and waits leave room for a loaded machine (a starved heartbeat thread must not
lose a claim the test expects kept): each asserts an outcome, with a bound far from it.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from occ.models import ControllerWork, Namespace, NamespaceStatus, WorkState
from provisioning import queue
from provisioning.outcomes import ClaimLost, Complete
from tests.conftest import is_postgres
from tests.provisioning.conftest import make_work, reload

pytestmark = pytest.mark.django_db(transaction=True)


# Twelve renewals per lease: a renewal may come seconds late and the claim still holds.
LEASE_SECONDS = 3.0
HEARTBEAT_SECONDS = 0.25


@pytest.fixture
def short_lease(settings):
    settings.OCC_WORKER_LEASE_SECONDS = LEASE_SECONDS
    settings.OCC_WORKER_HEARTBEAT_SECONDS = HEARTBEAT_SECONDS


@pytest.fixture
def committed_namespace() -> Namespace:
    return Namespace.objects.create(name="heartbeat", status=NamespaceStatus.READY)


def wait_checking(claim: queue.Claim, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        claim.check()
        time.sleep(0.05)


def test_a_job_longer_than_the_lease_keeps_its_claim(committed_namespace, jobs, short_lease):
    work = make_work(committed_namespace)
    observed = {}

    def long_job(claim):
        observed["in_transaction"] = transaction.get_connection().in_atomic_block
        wait_checking(claim, LEASE_SECONDS * 1.5)  # the first lease has run out: renewals kept it
        observed["recovered_meanwhile"] = queue.recover_stale().requeued
        wait_checking(claim, 0.5)
        return Complete("DONE")

    jobs.set(work, long_job)
    applied = queue.run_work(work.pk)

    row = reload(work)
    assert applied == Complete("DONE")
    assert (row.state, row.attempt_count) == (WorkState.SUCCEEDED, 1), "one claim, renewed, never recovered"
    assert observed == {"in_transaction": False, "recovered_meanwhile": []}


def test_the_heartbeat_sees_a_lost_claim_and_the_job_stops(committed_namespace, jobs, settings):
    settings.OCC_WORKER_LEASE_SECONDS = 60.0
    settings.OCC_WORKER_HEARTBEAT_SECONDS = 0.2
    work = make_work(committed_namespace)
    stopped_after = []

    def job(claim):
        ControllerWork.objects.filter(pk=claim.key).update(claim_token="taken-over")
        started = time.monotonic()
        with pytest.raises(ClaimLost):
            wait_checking(claim, 30.0)
        stopped_after.append(time.monotonic() - started)
        claim.check()  # raises again: the job gives up
        return Complete("NEVER_WRITTEN")

    jobs.set(work, job)
    assert queue.run_work(work.pk) is None

    row = reload(work)
    assert stopped_after[0] < 30.0, "noticed by the heartbeat, long before the 60 s lease ran out"
    assert (row.state, row.claim_token, row.reason_code) == (WorkState.CLAIMED, "taken-over", None)


def test_one_renewer_thread_and_connection_serve_every_job(committed_namespace, jobs, short_lease):
    def open_connections() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            return cursor.fetchone()[0]

    def job(claim):
        time.sleep(HEARTBEAT_SECONDS * 2.5)  # renewed, so the thread opened its connection
        return Complete("DONE")

    before = open_connections() if is_postgres() else None
    for _ in range(3):
        work = make_work(committed_namespace)
        jobs.set(work, job)
        queue.run_work(work.pk)
        assert reload(work).state == WorkState.SUCCEEDED
    # However many jobs ran, the process keeps one renewer thread with one connection.
    assert len([t for t in threading.enumerate() if t.name.startswith("heartbeat")]) == 1
    if before is not None:
        assert open_connections() <= before + 1


@pytest.mark.postgres_only
def test_the_idle_renewer_gives_its_connection_back(committed_namespace, jobs, short_lease):
    """Once no claim needs renewing, the renewer thread closes the connection it opened."""
    def open_connections() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            return cursor.fetchone()[0]

    def job(claim):
        time.sleep(HEARTBEAT_SECONDS * 2.5)  # renewed: the thread has its own connection now
        return Complete("DONE")

    before = open_connections()
    work = make_work(committed_namespace)
    jobs.set(work, job)
    queue.run_work(work.pk)
    assert reload(work).state == WorkState.SUCCEEDED
    deadline = time.monotonic() + 60
    while open_connections() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert open_connections() == before
