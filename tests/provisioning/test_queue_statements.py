"""The queue's fixed statements (heartbeat and completions, the PostgreSQL claim).

Each database runs its own rendering of the same templates: this file passes on SQLite and
on PostgreSQL. Every statement that writes under a claim must update exactly the claimed row
while the claim is live, and zero rows once the claim is lost — wrong token, another key,
a lease expired on the database clock, a row requeued or taken over.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from occ.models import ControllerWork, WorkState
from provisioning import queue
from provisioning.outcomes import Defer
from tests.provisioning.conftest import make_work, reload

STATEMENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "renew": (queue.RENEW_SQL, {"lease": 15.0}),
    "succeed": (queue.SUCCEED_SQL, {"code": "TEST_DONE", "result_data": None}),
    "fail": (queue.FAIL_SQL, {"code": "TEST_BROKEN", "result_data": None}),
    "defer": (queue.DEFER_SQL, {"code": "TEST_PENDING", "delay": 30.0, "convergence": 900.0}),
    "retry": (queue.RETRY_SQL, {"code": "TEST_RETRY", "delay": 1.0, "convergence": 900.0}),
}

# What the row looks like after each statement, on a claim taken at attempt 1.
EXPECTED_STATE = {
    "renew": (WorkState.CLAIMED, 1), "succeed": (WorkState.SUCCEEDED, 1), "fail": (WorkState.FAILED_PERMANENT, 1),
    "defer": (WorkState.QUEUED, 0), "retry": (WorkState.QUEUED, 1),
}


def execute(name: str, claim: queue.Claim, **overrides: Any) -> int:
    template, params = STATEMENTS[name]
    return queue._execute(template, {"key": claim.key, "token": claim.token} | params | overrides)


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


@pytest.mark.parametrize("name", STATEMENTS)
def test_a_live_claim_updates_exactly_its_row(claimed, namespace, name):
    bystander = queue.claim(make_work(namespace).pk)
    assert bystander is not None
    untouched = snapshot(bystander.key)

    assert execute(name, claimed) == 1

    row = reload(claimed.work)
    assert (row.state, row.attempt_count) == EXPECTED_STATE[name]
    assert snapshot(bystander.key) == untouched
    if name == "renew":
        assert (row.claim_token, 13 < seconds_from_now(row.lease_expires_at) <= 15.5) == (claimed.token, True)
        return
    assert (row.claim_token, row.lease_expires_at) == (None, None), "the claim is released"
    assert row.last_attempt_code == STATEMENTS[name][1]["code"]
    if name in ("succeed", "fail"):
        assert (row.reason_code, row.completed_at is not None) == (STATEMENTS[name][1]["code"], True)
    else:
        assert (row.reason_code, row.completed_at) == (None, None)
        assert -0.5 < seconds_from_now(row.available_at) <= STATEMENTS[name][1]["delay"] + 0.5


@pytest.mark.parametrize("name", STATEMENTS)
@pytest.mark.parametrize(("change", "params"), [
    pytest.param({}, {"token": "not-this-claims-token"}, id="wrong-token"),
    pytest.param({"lease_expires_at": timezone.now() - timedelta(seconds=5)}, {}, id="lease-expired"),
    pytest.param({"state": WorkState.QUEUED, "claim_token": None, "lease_expires_at": None}, {}, id="requeued"),
    pytest.param({"claim_token": "taken-over"}, {}, id="taken-over"),
    pytest.param({"state": WorkState.SUCCEEDED, "claim_token": None, "lease_expires_at": None,
                  "completed_at": timezone.now()}, {}, id="already-finished"),
])
def test_a_lost_claim_updates_zero_rows(claimed, name, change, params):
    ControllerWork.objects.filter(pk=claimed.key).update(**change)
    before = snapshot(claimed.key)

    assert execute(name, claimed, **params) == 0

    assert snapshot(claimed.key) == before


@pytest.mark.parametrize("name", STATEMENTS)
def test_another_rows_key_with_this_token_updates_zero_rows(claimed, namespace, name):
    other = queue.claim(make_work(namespace).pk)
    assert other is not None
    before = snapshot(other.key)

    assert execute(name, claimed, key=other.key) == 0

    assert snapshot(other.key) == before


@pytest.mark.parametrize("name", ["defer", "retry"])
@pytest.mark.parametrize(("age", "updated"), [
    pytest.param(50, 1, id="before-the-deadline"), pytest.param(61, 0, id="past-the-deadline"),
])
def test_requeueing_stops_at_the_convergence_deadline(namespace, name, age, updated):
    """Zero rows past the deadline sends the outcome to the fenced transaction, which fails it."""
    claim = queue.claim(make_work(namespace, created_at=timezone.now() - timedelta(seconds=age)).pk)
    assert claim is not None
    assert execute(name, claim, convergence=60.0) == updated
    assert reload(claim.work).state == (WorkState.QUEUED if updated else WorkState.CLAIMED)


def test_a_completion_stores_result_data_as_json(claimed):
    params = queue._terminal_params("TEST_DONE", {"warnings": ["w1"], "n": 2})
    assert queue._execute(queue.SUCCEED_SQL, {"key": claimed.key, "token": claimed.token} | params) == 1
    assert reload(claimed.work).result_data == {"warnings": ["w1"], "n": 2}


def test_the_claimed_work_holds_what_jobs_read_and_loads_the_rest_on_access(namespace):
    """The claim builds the instance from RETURNING (on either database): the columns jobs and
    outcomes read, converted by the ORM, plus what the claim set itself. The history of earlier
    attempts and the lease's timestamps stay deferred and load, correctly, on first access."""
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


@pytest.mark.parametrize("vendor", ["postgresql", "sqlite"])
@pytest.mark.parametrize("name", STATEMENTS)
def test_every_rendering_is_fenced_and_parameters_only(vendor, name):
    sql = queue.statement_for(STATEMENTS[name][0], vendor)
    fence = queue.FENCE.format(now=queue._CLOCKS[vendor].now)
    assert fence in sql
    assert "{" not in sql
    assert "}" not in sql
