"""Work put back in the queue with a delay is nudged again at its due time, not at the next sweep."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from occ.models import ControllerWork, WorkState
from provisioning import queue
from provisioning.outcomes import Complete, Defer, Fail, Retry
from tests.provisioning.conftest import make_work, reload

SLACK = queue.NUDGE_SLACK_SECONDS


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run the on-commit callbacks of what the block did (the test's own transaction never commits)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def due_in(row: ControllerWork) -> float:
    """Seconds between the row's last attempt and its next due time (both on the database clock)."""
    return (row.available_at - row.last_attempt_at).total_seconds()


def test_a_deferred_row_is_nudged_once_counted_down_to_its_due_time(namespace, jobs, sent_nudges, committed):
    work = make_work(namespace)
    jobs.set(work, lambda claim: Defer("RECONCILIATION_PENDING", delay_seconds=3))
    with committed():
        assert queue.run_work(work.pk) == Defer("RECONCILIATION_PENDING", delay_seconds=3)
    row = reload(work)
    assert row.state == WorkState.QUEUED
    assert sent_nudges == [], "nothing due now"
    [(key, countdown)] = sent_nudges.later
    assert key == work.pk
    assert countdown == pytest.approx(3 + SLACK)
    assert due_in(row) == pytest.approx(3, abs=0.01)


def test_a_retried_row_is_nudged_at_the_end_of_its_random_backoff(namespace, jobs, sent_nudges, settings, committed):
    settings.OCC_WORKER_RETRY_MAX_SECONDS = 60
    work = make_work(namespace, attempt_count=5, max_attempts=9)  # attempt 6: backoff up to 32 s
    jobs.set(work, lambda claim: Retry("DEPENDENCY_UNAVAILABLE"))
    with committed():
        queue.run_work(work.pk)
    row = reload(work)
    [(key, countdown)] = sent_nudges.later
    assert key == work.pk
    assert countdown - SLACK == pytest.approx(due_in(row), abs=0.01), "the same backoff the row was given"


def test_a_deferral_with_effects_is_nudged_too(namespace, jobs, sent_nudges, committed):
    work = make_work(namespace)
    jobs.set(work, lambda claim: Defer(delay_seconds=1.5, effects=lambda: None))
    with committed():
        queue.run_work(work.pk)
    assert [key for key, _ in sent_nudges.later] == [work.pk]
    assert sent_nudges.later[0][1] == pytest.approx(1.5 + SLACK)


@pytest.mark.parametrize("outcome", [
    pytest.param(Complete("TEST_DONE"), id="complete"),
    pytest.param(Fail("TEST_FAILED"), id="fail"),
])
def test_terminal_work_is_not_nudged_again(namespace, jobs, sent_nudges, outcome, committed):
    work = make_work(namespace)
    jobs.set(work, lambda claim: outcome)
    with committed():
        queue.run_work(work.pk)
    assert (sent_nudges, sent_nudges.later) == ([], [])


def test_a_retry_that_becomes_a_failure_is_not_nudged(namespace, jobs, sent_nudges, committed):
    work = make_work(namespace, attempt_count=4, max_attempts=5)
    jobs.set(work, lambda claim: Retry("DEPENDENCY_UNAVAILABLE"))
    with committed():
        assert queue.run_work(work.pk) == Fail("DEPENDENCY_UNAVAILABLE")
    assert sent_nudges.later == []


def test_a_recovered_lease_is_nudged_at_the_end_of_its_backoff(namespace, sent_nudges, committed):
    work = make_work(namespace)
    assert queue.claim(work.pk) is not None
    ControllerWork.objects.filter(pk=work.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    with committed():
        assert queue.recover_stale().requeued == [work.pk]
    row = reload(work)
    [(key, countdown)] = sent_nudges.later
    assert key == work.pk
    assert countdown - SLACK == pytest.approx(due_in(row), abs=0.01)
