"""Every write under a claim is fenced: the heartbeat's renewal and each outcome (succeed, fail,
defer, retry) update exactly the claimed row while the claim is live, and nothing once it is
lost — wrong token, another key, a lease expired on the database clock, a row requeued, taken
over or finished. Passes on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from occ.models import ControllerWork, WorkState
from provisioning import queue
from provisioning.outcomes import ClaimLost, Complete, Defer, Fail, Retry
from tests.provisioning.conftest import make_work, reload

LEASE_SECONDS = 15.0

# Each write of a claim, with the code it leaves on the row (None: it leaves none).
WRITES: dict[str, tuple[Callable[[queue.Claim], Any], str | None]] = {
    "renew": (lambda claim: claim.renew(), None),
    "succeed": (lambda claim: queue.apply_outcome(claim, Complete("TEST_DONE")), "TEST_DONE"),
    "fail": (lambda claim: queue.apply_outcome(claim, Fail("TEST_BROKEN")), "TEST_BROKEN"),
    "defer": (lambda claim: queue.apply_outcome(claim, Defer("TEST_PENDING", delay_seconds=30.0)), "TEST_PENDING"),
    "retry": (lambda claim: queue.apply_outcome(claim, Retry("TEST_RETRY")), "TEST_RETRY"),
}
DELAY = {"defer": 30.0, "retry": 1.0}  # a first retry's backoff is at most 1 s

# What the row looks like after each write, on a claim taken at attempt 1.
EXPECTED_STATE = {
    "renew": (WorkState.CLAIMED, 1), "succeed": (WorkState.SUCCEEDED, 1), "fail": (WorkState.FAILED_PERMANENT, 1),
    "defer": (WorkState.QUEUED, 0), "retry": (WorkState.QUEUED, 1),
}


@pytest.fixture(autouse=True)
def worker_settings(settings):
    settings.OCC_WORKER_LEASE_SECONDS = LEASE_SECONDS
    settings.OCC_WORKER_CONVERGENCE_SECONDS = 900
    settings.OCC_WORKER_RETRY_MAX_SECONDS = 300


def write(name: str, claim: queue.Claim) -> None:
    WRITES[name][0](claim)


def as_another(claim: queue.Claim, **row: Any) -> queue.Claim:
    """The same claim as a worker holding another key or token would hold it."""
    work = copy.copy(claim.work)
    for attribute, value in row.items():
        setattr(work, attribute, value)
    return queue.Claim(work, lease_seconds=claim.lease_seconds, confirmed_at=time.monotonic())


def snapshot(key: str) -> tuple[Any, ...]:
    row = ControllerWork.objects.get(pk=key)
    return (row.state, row.claim_token, row.lease_expires_at, row.attempt_count, row.available_at,
            row.completed_at, row.reason_code, row.last_attempt_code, row.updated_at)


@pytest.fixture
def claimed(namespace) -> queue.Claim:
    claim = queue.claim(make_work(namespace).pk)
    assert claim is not None
    return claim


def seconds_from_now(moment) -> float:
    return (moment - timezone.now()).total_seconds()


@pytest.mark.parametrize("name", WRITES)
def test_a_live_claim_updates_exactly_its_row(claimed, namespace, name):
    bystander = queue.claim(make_work(namespace).pk)
    assert bystander is not None
    untouched = snapshot(bystander.key)

    write(name, claimed)

    row = reload(claimed.work)
    assert (row.state, row.attempt_count) == EXPECTED_STATE[name]
    assert snapshot(bystander.key) == untouched
    if name == "renew":
        assert (row.claim_token, 13 < seconds_from_now(row.lease_expires_at) <= 15.5) == (claimed.token, True)
        return
    assert (row.claim_token, row.lease_expires_at) == (None, None), "the claim is released"
    assert row.last_attempt_code == WRITES[name][1]
    if name in ("succeed", "fail"):
        assert (row.reason_code, row.completed_at is not None) == (WRITES[name][1], True)
    else:
        assert (row.reason_code, row.completed_at) == (None, None)
        assert -0.5 < seconds_from_now(row.available_at) <= DELAY[name] + 0.5


@pytest.mark.parametrize("name", WRITES)
@pytest.mark.parametrize(("change", "holder"), [
    pytest.param({}, {"claim_token": "not-this-claims-token"}, id="wrong-token"),
    pytest.param({"lease_expires_at": timezone.now() - timedelta(seconds=5)}, {}, id="lease-expired"),
    pytest.param({"state": WorkState.QUEUED, "claim_token": None, "lease_expires_at": None}, {}, id="requeued"),
    pytest.param({"claim_token": "taken-over"}, {}, id="taken-over"),
    pytest.param({"state": WorkState.SUCCEEDED, "claim_token": None, "lease_expires_at": None,
                  "completed_at": timezone.now()}, {}, id="already-finished"),
])
def test_a_lost_claim_updates_zero_rows(claimed, name, change, holder):
    ControllerWork.objects.filter(pk=claimed.key).update(**change)
    before = snapshot(claimed.key)
    holding = as_another(claimed, **holder) if holder else claimed

    with pytest.raises(ClaimLost):
        write(name, holding)

    assert holding.lost
    assert snapshot(claimed.key) == before


@pytest.mark.parametrize("name", WRITES)
def test_another_rows_key_with_this_token_updates_zero_rows(claimed, namespace, name):
    other = queue.claim(make_work(namespace).pk)
    assert other is not None
    before = snapshot(other.key)

    with pytest.raises(ClaimLost):
        write(name, as_another(claimed, idempotency_key=other.key))

    assert snapshot(other.key) == before


@pytest.mark.parametrize("name", ["defer", "retry"])
@pytest.mark.parametrize(("age", "requeued"), [
    pytest.param(50, True, id="before-the-deadline"), pytest.param(61, False, id="past-the-deadline"),
])
def test_requeueing_stops_at_the_convergence_deadline(namespace, settings, name, age, requeued):
    """Past the deadline the fenced transaction turns the requeue into a failure."""
    settings.OCC_WORKER_CONVERGENCE_SECONDS = 60
    claim = queue.claim(make_work(namespace, created_at=timezone.now() - timedelta(seconds=age)).pk)
    assert claim is not None
    write(name, claim)
    row = reload(claim.work)
    assert row.state == (WorkState.QUEUED if requeued else WorkState.FAILED_PERMANENT)
    assert row.reason_code == (None if requeued else "CONVERGENCE_DEADLINE_EXCEEDED")


def test_a_completion_stores_result_data_as_json(claimed):
    queue.apply_outcome(claimed, Complete("TEST_DONE", result_data={"warnings": ["w1"], "n": 2}))
    assert reload(claimed.work).result_data == {"warnings": ["w1"], "n": 2}


def test_the_claimed_work_holds_what_jobs_read_and_loads_the_rest_on_access(namespace):
    """The claim loads (on either database) the columns jobs and outcomes read, converted by
    the ORM, plus what the claim set itself. The history of earlier attempts and the lease's
    timestamps stay deferred and load, correctly, on first access."""
    work = make_work(namespace, result_data={"previous": True}, last_attempt_code="REVISION_INCOMPLETE")

    claim = queue.claim(work.pk)

    assert claim is not None
    loaded = claim.work
    assert loaded.get_deferred_fields() == {"available_at", "lease_expires_at", "reason_code", "result_data",
                                            "last_attempt_code", "last_attempt_at", "updated_at"}
    with CaptureQueriesContext(connection) as captured:
        assert (loaded.state, loaded.claim_token, loaded.attempt_count) == (WorkState.CLAIMED, claim.token, 1)
        assert loaded.completed_at is None
        assert (loaded.idempotency_key, loaded.namespace_id, loaded.agent_id) == (work.pk, namespace.id, work.agent_id)
        assert (loaded.job, loaded.actor_id, loaded.agent_target) == (work.job, work.actor_id,
                                                                            work.agent_target)
        assert loaded.max_attempts == work.max_attempts
        assert timezone.is_aware(loaded.created_at)
        assert loaded.created_at == reload(work).created_at
    assert len(captured) == 1  # the reload only
    assert loaded.result_data == {"previous": True}
    assert loaded.last_attempt_code == "REVISION_INCOMPLETE"
    assert timezone.is_aware(loaded.lease_expires_at)
    assert loaded.lease_expires_at == reload(work).lease_expires_at


def test_defer_delay_is_bounded_by_the_retry_maximum(settings):
    settings.OCC_WORKER_RETRY_MAX_SECONDS = 300
    assert queue._defer_delay(Defer(delay_seconds=10_000)) == 300.0
    assert queue._defer_delay(Defer(delay_seconds=-5)) == 0.0


@pytest.mark.parametrize("name", WRITES)
def test_every_write_is_fenced_by_key_token_and_an_unexpired_lease(claimed, name):
    """The first statement of each write that touches the row (the update, or the lock of the
    fenced transaction) names the key and the token and compares the lease with the database
    clock; a later update in the same transaction names the key and the token."""
    with CaptureQueriesContext(connection) as captured:
        write(name, claimed)
    table = f'"{ControllerWork._meta.db_table}"'
    statements = [q["sql"] for q in captured.captured_queries
                  if table in q["sql"] and q["sql"].lstrip().startswith(("UPDATE", "SELECT"))]
    assert statements, captured.captured_queries
    for sql in statements:
        assert '"idempotency_key" =' in sql, sql
        assert '"claim_token" =' in sql, sql
    assert '"lease_expires_at" >' in statements[0], statements[0]
