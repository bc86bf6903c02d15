"""Claiming, fencing and outcomes of controller work (SQLite and PostgreSQL)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from occ.drivers.compute.base import ComputeError
from occ.models import AuditEvent, ControllerWork, NamespaceStatus, WorkState
from provisioning import queue
from provisioning.outcomes import ClaimLost, Complete, Defer, Fail, Retry
from tests.provisioning.conftest import make_work, reload

SECRET_CANARY = "sk-canary-do-not-log-4f1d"


def seconds_from_now(moment) -> float:
    return (moment - timezone.now()).total_seconds()


# --- claim ---------------------------------------------------------------------------------

def test_claim_sets_token_lease_and_attempt_on_the_database_clock(namespace, settings):
    settings.OCC_WORKER_LEASE_SECONDS = 15
    work = make_work(namespace)

    claim = queue.claim(work.pk)

    assert claim is not None
    row = reload(work)
    assert (row.state, row.attempt_count, row.claim_token) == (WorkState.CLAIMED, 1, claim.token)
    assert 13 < seconds_from_now(row.lease_expires_at) <= 15.5
    assert claim.key == work.pk
    assert claim.work.attempt_count == 1
    assert queue.claim(work.pk) is None, "a claimed row is not claimable again"
    assert reload(work).claim_token == claim.token


def test_every_claim_gets_a_new_token(namespace):
    work = make_work(namespace)
    first = queue.claim(work.pk)
    ControllerWork.objects.filter(pk=work.pk).update(state=WorkState.QUEUED, claim_token=None, lease_expires_at=None)
    second = queue.claim(work.pk)
    assert first
    assert second
    assert first.token != second.token
    assert reload(work).attempt_count == 2


# Each case is a function of "now" at the test's run, not at collection: a long suite reaches
# this test more than five minutes after the module was imported.
@pytest.mark.parametrize("fields", [
    pytest.param(lambda now: {"state": WorkState.SUCCEEDED, "completed_at": now}, id="succeeded"),
    pytest.param(lambda now: {"state": WorkState.FAILED_PERMANENT, "completed_at": now}, id="failed"),
    pytest.param(lambda now: {"available_at": now + timedelta(minutes=5)}, id="not-due"),
    pytest.param(lambda now: {"attempt_count": 5, "max_attempts": 5}, id="attempts-exhausted"),
])
def test_rows_that_are_not_claimable(namespace, fields):
    work = make_work(namespace, **fields(timezone.now()))
    before = reload(work)
    assert queue.claim(work.pk) is None
    assert queue.claim() is None
    after = reload(work)
    assert (after.state, after.attempt_count, after.claim_token) == (before.state, before.attempt_count, None)


def test_missing_key_is_not_claimable(db):
    assert queue.claim("agent:agt_nope:stopped:1") is None


def test_one_claimed_row_per_resource(namespace):
    first = make_work(namespace, agent_id="agt_shared")
    second = make_work(namespace, agent_id="agt_shared")
    other = make_work(namespace, agent_id="agt_other")

    assert queue.claim(first.pk) is not None
    assert queue.claim(second.pk) is None, "same Agent: waits for the claimed row"
    assert queue.claim(other.pk) is not None, "sibling Agents progress in parallel"
    assert reload(second).state == WorkState.QUEUED


def test_namespace_work_and_agent_work_are_different_resources(namespace):
    ready = make_work(namespace, namespace_target="ready")
    agent = make_work(namespace)
    assert queue.claim(ready.pk) is not None
    assert queue.claim(agent.pk) is not None


def test_claim_without_key_takes_the_oldest_due_row(namespace):
    now = timezone.now()
    newer = make_work(namespace, available_at=now - timedelta(seconds=1))
    older = make_work(namespace, available_at=now - timedelta(seconds=10))
    make_work(namespace, available_at=now + timedelta(minutes=1))

    assert queue.claim().key == older.pk
    assert queue.claim().key == newer.pk
    assert queue.claim() is None


def test_claim_skips_a_busy_resource_and_takes_the_next(namespace):
    now = timezone.now()
    busy = make_work(namespace, agent_id="agt_busy", available_at=now - timedelta(seconds=20))
    queued_same_agent = make_work(namespace, agent_id="agt_busy", available_at=now - timedelta(seconds=10))
    free = make_work(namespace, available_at=now - timedelta(seconds=1))
    assert queue.claim().key == busy.pk
    assert queue.claim().key == free.pk
    assert reload(queued_same_agent).state == WorkState.QUEUED


# --- the Claim's fence ---------------------------------------------------------------------

@pytest.fixture
def claimed(namespace):
    work = make_work(namespace)
    claim = queue.claim(work.pk)
    assert claim is not None
    return claim


def test_renew_extends_the_lease(claimed, settings):
    ControllerWork.objects.filter(pk=claimed.key).update(lease_expires_at=timezone.now() + timedelta(seconds=2))
    claimed.renew()
    assert seconds_from_now(reload(claimed.work).lease_expires_at) > settings.OCC_WORKER_LEASE_SECONDS - 2


@pytest.mark.parametrize("change", [
    pytest.param({"claim_token": "someone-else"}, id="token-changed"),
    pytest.param({"lease_expires_at": timezone.now() - timedelta(seconds=1)}, id="lease-expired"),
    pytest.param({"state": WorkState.QUEUED, "claim_token": None, "lease_expires_at": None}, id="requeued"),
])
def test_a_lost_claim_renews_nothing_and_writes_nothing(claimed, jobs, change):
    ControllerWork.objects.filter(pk=claimed.key).update(**change)
    before = reload(claimed.work)

    with pytest.raises(ClaimLost):
        claimed.renew()
    assert claimed.lost
    with pytest.raises(ClaimLost):
        claimed.check()
    after = reload(claimed.work)
    assert (after.lease_expires_at, after.state, after.claim_token) == (before.lease_expires_at, before.state,
                                                                        before.claim_token)


@pytest.mark.parametrize("change", [
    pytest.param({"claim_token": "someone-else"}, id="token-changed"),
    pytest.param({"lease_expires_at": timezone.now() - timedelta(seconds=1)}, id="lease-expired"),
])
def test_fenced_refuses_before_running_anything(claimed, change):
    ControllerWork.objects.filter(pk=claimed.key).update(**change)
    ran = []
    with pytest.raises(ClaimLost), claimed.fenced():
        ran.append(True)
    assert ran == []


def test_fenced_commits_with_a_live_claim(claimed, namespace):
    with claimed.fenced():
        namespace.status = NamespaceStatus.FAILED
        namespace.save(update_fields=["status"])
    namespace.refresh_from_db()
    assert namespace.status == NamespaceStatus.FAILED


def test_check_fails_once_the_last_confirmed_lease_passed(claimed, monkeypatch):
    """A renewal that got no answer extends nothing: the local deadline decides."""
    claimed.check()
    sent_at = queue.time.monotonic()
    monkeypatch.setattr(queue.time, "monotonic", lambda: sent_at + claimed.lease_seconds + 0.01)
    with pytest.raises(ClaimLost):
        claimed.check()


def test_a_renewal_counts_from_when_it_was_sent(claimed, monkeypatch):
    clock = [queue.time.monotonic()]
    monkeypatch.setattr(queue.time, "monotonic", lambda: clock[0])
    claimed.renew()
    sent = clock[0]
    clock[0] = sent + claimed.lease_seconds - 0.01
    claimed.check()
    clock[0] = sent + claimed.lease_seconds
    with pytest.raises(ClaimLost):
        claimed.check()


# --- outcomes ------------------------------------------------------------------------------

def run(work):
    return queue.run_work(work.pk)


def test_complete_succeeds_with_reason_and_result(namespace, jobs):
    work = make_work(namespace)
    jobs.set(work, lambda claim: Complete("REVISION_ACTIVATED", result_data={"warnings": []}))

    applied = run(work)

    row = reload(work)
    assert applied == Complete("REVISION_ACTIVATED", result_data={"warnings": []})
    assert (row.state, row.reason_code, row.result_data) == (WorkState.SUCCEEDED, "REVISION_ACTIVATED",
                                                             {"warnings": []})
    assert row.completed_at is not None
    assert row.claim_token is None
    assert row.lease_expires_at is None
    assert row.attempt_count == 1
    assert queue.run_work(work.pk) is None, "terminal work is never run again"
    assert len(jobs.calls) == 1


def test_fail_is_permanent(namespace, jobs):
    work = make_work(namespace)
    jobs.set(work, lambda claim: Fail("AUTHORIZATION_DENIED"))
    run(work)
    row = reload(work)
    assert (row.state, row.reason_code, row.attempt_count) == (WorkState.FAILED_PERMANENT, "AUTHORIZATION_DENIED", 1)
    assert row.completed_at is not None
    assert row.claim_token is None


def test_defer_requeues_with_the_attempt_refunded(namespace, jobs, settings):
    settings.OCC_WORKER_DEFER_SECONDS = 30
    work = make_work(namespace)
    jobs.set(work, lambda claim: Defer("REVISION_INCOMPLETE"))

    run(work)

    row = reload(work)
    assert (row.state, row.attempt_count, row.claim_token) == (WorkState.QUEUED, 0, None)
    assert (row.last_attempt_code, row.reason_code, row.completed_at) == ("REVISION_INCOMPLETE", None, None)
    assert row.last_attempt_at is not None
    assert 28 < seconds_from_now(row.available_at) <= 30.5


def test_defer_with_an_explicit_delay(namespace, jobs):
    work = make_work(namespace)
    jobs.set(work, lambda claim: Defer(delay_seconds=7))
    run(work)
    row = reload(work)
    assert 5 < seconds_from_now(row.available_at) <= 7.5
    assert row.last_attempt_code == "RECONCILIATION_PENDING"


def test_defers_never_exhaust_attempts(namespace, jobs):
    work = make_work(namespace, max_attempts=2)
    jobs.set(work, lambda claim: Defer(delay_seconds=0))
    for _ in range(4):
        assert isinstance(run(work), Defer)
    assert (reload(work).state, reload(work).attempt_count) == (WorkState.QUEUED, 0)


def test_retry_keeps_the_attempt_and_backs_off_with_full_jitter(namespace, jobs, settings):
    work = make_work(namespace, attempt_count=3)
    jobs.set(work, lambda claim: Retry("DEPENDENCY_UNAVAILABLE"))
    run(work)
    row = reload(work)
    assert (row.state, row.attempt_count, row.last_attempt_code) == (WorkState.QUEUED, 4, "DEPENDENCY_UNAVAILABLE")
    # attempt 4: random(0, min(300, 2**3)) seconds
    assert -0.5 < seconds_from_now(row.available_at) <= 8.5


@pytest.mark.parametrize(("attempt", "ceiling"), [
    pytest.param(1, 1, id="first"), pytest.param(4, 8, id="fourth"), pytest.param(20, 300, id="capped"),
])
def test_retry_backoff_bounds(attempt, ceiling, settings):
    settings.OCC_WORKER_RETRY_MAX_SECONDS = 300
    delays = [queue.retry_backoff(attempt).total_seconds() for _ in range(200)]
    assert all(0 <= d <= ceiling for d in delays)
    assert max(delays) > ceiling / 2, "full jitter spreads over the whole range"


def test_retry_with_no_attempts_left_fails_with_its_code(namespace, jobs):
    work = make_work(namespace, attempt_count=4, max_attempts=5)
    jobs.set(work, lambda claim: Retry("DEPENDENCY_UNAVAILABLE"))
    applied = run(work)
    row = reload(work)
    assert isinstance(applied, Fail)
    assert (row.state, row.reason_code, row.attempt_count) == (WorkState.FAILED_PERMANENT, "DEPENDENCY_UNAVAILABLE", 5)


@pytest.mark.parametrize(("outcome", "code"), [
    pytest.param(Defer("REVISION_INCOMPLETE"), "CONVERGENCE_DEADLINE_EXCEEDED", id="defer"),
    pytest.param(Retry("DEPENDENCY_UNAVAILABLE"), "CONVERGENCE_DEADLINE_EXCEEDED", id="retry"),
    pytest.param(Defer("AGENT_GATEWAY_UNAVAILABLE"), "AGENT_GATEWAY_UNAVAILABLE", id="transient-dependency"),
])
def test_past_the_convergence_deadline_work_fails(namespace, jobs, settings, outcome, code):
    settings.OCC_WORKER_CONVERGENCE_SECONDS = 60
    work = make_work(namespace, created_at=timezone.now() - timedelta(seconds=61))
    jobs.set(work, lambda claim: outcome)
    run(work)
    row = reload(work)
    assert (row.state, row.reason_code) == (WorkState.FAILED_PERMANENT, code)
    if code == "CONVERGENCE_DEADLINE_EXCEEDED":
        assert row.result_data == {"timeoutMs": 60000}


def test_before_the_deadline_a_defer_is_still_a_defer(namespace, jobs, settings):
    settings.OCC_WORKER_CONVERGENCE_SECONDS = 60
    work = make_work(namespace, created_at=timezone.now() - timedelta(seconds=50))
    jobs.set(work, lambda claim: Defer())
    run(work)
    assert reload(work).state == WorkState.QUEUED


@pytest.mark.parametrize(("error", "state", "code", "attempts"), [
    pytest.param(ComputeError("KUBERNETES_API_UNAVAILABLE"), WorkState.QUEUED, "KUBERNETES_API_UNAVAILABLE", 1,
                 id="retryable"),
    pytest.param(ComputeError("RUNTIME_STARTUP_FAILED", retryable=False), WorkState.FAILED_PERMANENT,
                 "RUNTIME_STARTUP_FAILED", 1, id="permanent"),
    pytest.param(ComputeError("not a safe code"), WorkState.QUEUED, "UNKNOWN_FAILURE", 1, id="unsafe-code"),
    pytest.param(RuntimeError(f"upstream said {SECRET_CANARY}"), WorkState.QUEUED, "UNKNOWN_FAILURE", 1,
                 id="any-exception"),
])
def test_job_exceptions_map_to_retry_or_fail(namespace, jobs, caplog, error, state, code, attempts):
    work = make_work(namespace)

    def job(claim):
        raise error

    jobs.set(work, job)
    with caplog.at_level(logging.INFO, logger="provisioning.worker"):
        run(work)
    row = reload(work)
    field = row.reason_code if state == WorkState.FAILED_PERMANENT else row.last_attempt_code
    assert (row.state, field, row.attempt_count) == (state, code, attempts)
    assert SECRET_CANARY not in caplog.text
    if isinstance(error, RuntimeError):
        assert "worker.error UNKNOWN_FAILURE" in caplog.text
        assert "RuntimeError" in caplog.text
        assert "at=test_queue.py:" in caplog.text, "where, in OCC's own code"


def test_a_database_error_is_logged_with_its_sqlstate_and_never_its_message(namespace, jobs, caplog):
    work = make_work(namespace)

    def job(claim):  # in a savepoint: this test's transaction stays usable, as autocommit would
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT * FROM occ_no_such_table")

    jobs.set(work, job)
    with caplog.at_level(logging.INFO, logger="provisioning.worker"):
        run(work)
    assert reload(work).last_attempt_code == "UNKNOWN_FAILURE"
    expected = "sqlstate=42P01" if connection.vendor == "postgresql" else "error=OperationalError"
    assert expected in caplog.text
    assert "no_such_table" not in caplog.text, "never the message"


def test_a_job_that_loses_its_claim_writes_nothing(namespace, jobs, caplog):
    work = make_work(namespace)

    def job(claim):
        raise ClaimLost(claim.key)

    jobs.set(work, job)
    with caplog.at_level(logging.WARNING, logger="provisioning.worker"):
        assert run(work) is None
    row = reload(work)
    assert (row.state, row.attempt_count) == (WorkState.CLAIMED, 1), "left for the lease to expire"
    assert "worker.error CLAIM_LOST" in caplog.text


@pytest.mark.parametrize("change", [
    pytest.param({"claim_token": "taken-over"}, id="token-changed"),
    pytest.param({"lease_expires_at": timezone.now() - timedelta(seconds=1)}, id="lease-expired"),
])
def test_completion_after_losing_the_claim_commits_nothing(namespace, jobs, caplog, change):
    """The worker was paused past its lease: its completion and effects are fenced out."""
    work = make_work(namespace)

    def effect():
        AuditEvent.objects.create(kind="reconcile", action="test.effect", outcome="succeeded", resource_id=work.pk)

    def job(claim):
        ControllerWork.objects.filter(pk=claim.key).update(**change)
        return Complete("REVISION_ACTIVATED", effects=effect)

    jobs.set(work, job)
    with caplog.at_level(logging.WARNING, logger="provisioning.worker"):
        assert run(work) is None
    row = reload(work)
    assert row.state == WorkState.CLAIMED
    assert row.reason_code is None
    assert row.completed_at is None
    assert not AuditEvent.objects.filter(action="test.effect").exists()
    assert "worker.error CLAIM_LOST" in caplog.text


def test_effects_commit_with_the_completion(namespace, jobs):
    work = make_work(namespace)

    def effect():
        namespace.status = NamespaceStatus.FAILED
        namespace.save(update_fields=["status"])

    jobs.set(work, lambda claim: Complete("DONE", effects=effect))
    run(work)
    namespace.refresh_from_db()
    assert (reload(work).state, namespace.status) == (WorkState.SUCCEEDED, NamespaceStatus.FAILED)


def test_effects_that_raise_roll_back_and_the_work_retries(namespace, jobs, caplog):
    work = make_work(namespace)

    def effect():
        namespace.status = NamespaceStatus.FAILED
        namespace.save(update_fields=["status"])
        raise ValueError(SECRET_CANARY)

    jobs.set(work, lambda claim: Complete("DONE", effects=effect))
    with caplog.at_level(logging.INFO, logger="provisioning.worker"):
        applied = run(work)
    namespace.refresh_from_db()
    row = reload(work)
    assert applied == Retry("UNKNOWN_FAILURE")
    assert (row.state, row.last_attempt_code, namespace.status) == (WorkState.QUEUED, "UNKNOWN_FAILURE",
                                                                    NamespaceStatus.READY)
    assert SECRET_CANARY not in caplog.text


def test_a_job_may_write_under_the_fence_while_it_runs(namespace, jobs):
    work = make_work(namespace)

    def job(claim):
        claim.renew()
        with claim.fenced():
            namespace.status = NamespaceStatus.FAILED
            namespace.save(update_fields=["status"])
        claim.check()
        return Complete("DONE")

    jobs.set(work, job)
    run(work)
    namespace.refresh_from_db()
    assert namespace.status == NamespaceStatus.FAILED


def test_the_job_sees_the_row_as_claimed(namespace, jobs):
    work = make_work(namespace, actor_id="usr_frozen")
    seen = {}

    def job(claim):
        seen.update(actor=claim.work.actor_id, state=claim.work.state, token=claim.work.claim_token)
        return Complete("DONE")

    jobs.set(work, job)
    run(work)
    assert seen["actor"] == "usr_frozen"
    assert seen["state"] == WorkState.CLAIMED
    assert seen["token"]


# --- a Namespace whose ready work fails ----------------------------------------------------

def test_namespace_ready_work_failing_in_the_queue_fails_the_namespace(namespace, jobs):
    namespace.status = NamespaceStatus.PROVISIONING
    namespace.save(update_fields=["status"])
    work = make_work(namespace, namespace_target="ready", attempt_count=4)
    jobs.set(work, lambda claim: Retry("DEPENDENCY_UNAVAILABLE"))

    run(work)

    namespace.refresh_from_db()
    assert namespace.status == NamespaceStatus.FAILED
    event = AuditEvent.objects.get(action="openclaw.namespaces.ready", namespace_id=namespace.id)
    assert (event.kind, event.outcome, event.details["reasonCode"]) == ("lifecycle", "failed",
                                                                       "DEPENDENCY_UNAVAILABLE")


def test_a_namespace_already_moved_on_is_left_alone(namespace, jobs):
    work = make_work(namespace, namespace_target="ready")
    jobs.set(work, lambda claim: Fail("DEPENDENCY_UNAVAILABLE"))
    run(work)
    namespace.refresh_from_db()
    assert namespace.status == NamespaceStatus.READY
    assert not AuditEvent.objects.filter(action="openclaw.namespaces.ready").exists()


def test_effects_that_break_a_database_rule_roll_back_and_the_work_retries(namespace, jobs):
    work = make_work(namespace)

    def effect():
        AuditEvent.objects.create(kind="not-a-kind", action="test.effect", outcome="succeeded")

    jobs.set(work, lambda claim: Complete("DONE", effects=effect))
    assert run(work) == Retry("UNKNOWN_FAILURE")
    assert reload(work).state == WorkState.QUEUED
    assert not AuditEvent.objects.filter(action="test.effect").exists()


def test_a_row_due_this_instant_is_claimable_at_once(namespace):
    """Services write ``available_at = now`` and nudge at once: the claim that follows within
    the same millisecond (SQLite's clock) must take it."""
    for _ in range(20):
        work = make_work(namespace, available_at=timezone.now())
        claim = queue.claim(work.pk)
        assert claim is not None
        queue.apply_outcome(claim, Complete("TEST_DONE"))
