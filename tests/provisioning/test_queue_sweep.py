"""Stale-claim recovery and due-work nudges (the beat sweep)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from occ.models import AuditEvent, ControllerWork, NamespaceStatus, WorkState
from provisioning import queue
from tests.provisioning.conftest import make_work, reload


def expire(work: ControllerWork) -> None:
    ControllerWork.objects.filter(pk=work.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def claimed_row(namespace, **fields) -> ControllerWork:
    work = make_work(namespace, **fields)
    assert queue.claim(work.pk) is not None
    return reload(work)


def test_an_expired_claim_is_requeued_with_backoff_and_evidence(namespace, sent_nudges):
    work = claimed_row(namespace)
    expire(work)

    result = queue.sweep()

    row = reload(work)
    assert result.requeued == [work.pk]
    assert result.failed == []
    assert (row.state, row.claim_token, row.lease_expires_at) == (WorkState.QUEUED, None, None)
    assert (row.attempt_count, row.last_attempt_code) == (1, "LEASE_EXPIRED")
    assert row.available_at <= timezone.now() + timedelta(seconds=1.5), "attempt 1 backs off at most 1 s"
    assert row.completed_at is None
    assert row.reason_code is None


def test_a_live_claim_is_left_alone(namespace, sent_nudges):
    work = claimed_row(namespace)
    before = reload(work)
    assert queue.sweep().requeued == []
    after = reload(work)
    assert (after.state, after.claim_token, after.lease_expires_at) == (
        WorkState.CLAIMED, before.claim_token, before.lease_expires_at)


def test_an_expired_claim_on_its_last_attempt_fails(namespace, sent_nudges):
    work = claimed_row(namespace, attempt_count=4, max_attempts=5)
    expire(work)
    result = queue.sweep()
    row = reload(work)
    assert result.failed == [work.pk]
    assert (row.state, row.reason_code, row.attempt_count) == (WorkState.FAILED_PERMANENT, "LEASE_EXPIRED", 5)
    assert row.completed_at is not None
    assert row.claim_token is None


def test_an_expired_claim_past_the_deadline_fails(namespace, sent_nudges, settings):
    settings.OCC_WORKER_CONVERGENCE_SECONDS = 60
    work = claimed_row(namespace, created_at=timezone.now() - timedelta(seconds=120))
    expire(work)
    queue.sweep()
    row = reload(work)
    assert (row.state, row.reason_code, row.result_data) == (
        WorkState.FAILED_PERMANENT, "CONVERGENCE_DEADLINE_EXCEEDED", {"timeoutMs": 60000})


def test_exhausted_queued_work_fails(namespace, sent_nudges):
    work = make_work(namespace, attempt_count=5, max_attempts=5, last_attempt_code="DEPENDENCY_UNAVAILABLE")
    assert queue.sweep().failed == [work.pk]
    row = reload(work)
    assert (row.state, row.reason_code) == (WorkState.FAILED_PERMANENT, "DEPENDENCY_UNAVAILABLE")


def test_a_provisioning_namespace_fails_with_its_ready_work(namespace, sent_nudges):
    namespace.status = NamespaceStatus.PROVISIONING
    namespace.save(update_fields=["status"])
    work = claimed_row(namespace, namespace_target="ready", attempt_count=4)
    expire(work)

    queue.sweep()

    namespace.refresh_from_db()
    assert (reload(work).state, namespace.status) == (WorkState.FAILED_PERMANENT, NamespaceStatus.FAILED)
    event = AuditEvent.objects.get(action="openclaw.namespaces.ready", namespace_id=namespace.id)
    assert (event.outcome, event.details["reasonCode"], event.details["workKey"]) == ("failed", "LEASE_EXPIRED",
                                                                                      work.pk)


@pytest.mark.parametrize("target", [
    pytest.param({"agent_id": "agt_x"}, id="agent-work"),
    pytest.param({"namespace_target": "deleted"}, id="namespace-delete-work"),
])
def test_other_failed_work_leaves_the_namespace_status(namespace, sent_nudges, target):
    namespace.status = NamespaceStatus.PROVISIONING
    namespace.save(update_fields=["status"])
    work = claimed_row(namespace, attempt_count=4, **target)
    expire(work)
    queue.sweep()
    namespace.refresh_from_db()
    assert (reload(work).state, namespace.status) == (WorkState.FAILED_PERMANENT, NamespaceStatus.PROVISIONING)


def test_the_sweep_recovers_at_most_one_batch(namespace, sent_nudges):
    rows = [claimed_row(namespace) for _ in range(5)]
    for row in rows:
        expire(row)
    assert len(queue.sweep(batch=3).requeued) == 3
    assert len(queue.sweep(batch=3).requeued) == 2
    assert queue.sweep(batch=3).requeued == []


def test_a_recovered_row_is_claimed_again_and_the_old_claim_is_fenced_out(namespace, sent_nudges, jobs):
    work = make_work(namespace)
    stale = queue.claim(work.pk)
    expire(work)
    queue.sweep()
    ControllerWork.objects.filter(pk=work.pk).update(available_at=timezone.now() - timedelta(seconds=1))
    fresh = queue.claim(work.pk)

    assert fresh is not None
    assert fresh.token != stale.token
    assert fresh.work.attempt_count == 2
    with pytest.raises(queue.ClaimLost):
        stale.renew()
    with pytest.raises(queue.ClaimLost), stale.fenced():
        pass
    assert reload(work).claim_token == fresh.token


def test_nudges_go_to_overdue_rows_of_free_resources_oldest_first(namespace, sent_nudges, settings):
    settings.OCC_SWEEP_NUDGE_AFTER_SECONDS = 10.0
    now = timezone.now()
    newer = make_work(namespace, available_at=now - timedelta(seconds=11))
    older = make_work(namespace, available_at=now - timedelta(seconds=15))
    make_work(namespace, available_at=now - timedelta(seconds=9))  # its own nudge is still in line
    make_work(namespace, available_at=now + timedelta(minutes=1))
    make_work(namespace, state=WorkState.SUCCEEDED, completed_at=now - timedelta(minutes=1))
    claimed_row(namespace, agent_id="agt_busy")
    make_work(namespace, agent_id="agt_busy", available_at=now - timedelta(minutes=1))

    result = queue.sweep()

    assert sent_nudges == [older.pk, newer.pk]
    assert result.nudged == 2


def test_a_row_is_nudged_once_the_grace_after_its_due_time_has_passed(namespace, sent_nudges, settings):
    settings.OCC_SWEEP_NUDGE_AFTER_SECONDS = 0.5
    work = make_work(namespace)

    assert queue.sweep().nudged == 0, "just due: the nudge sent at its due time is on its way"
    ControllerWork.objects.filter(pk=work.pk).update(available_at=timezone.now() - timedelta(seconds=1))
    assert queue.sweep().nudged == 1
    assert sent_nudges == [work.pk]


def test_nudges_are_bounded_by_the_batch(namespace, sent_nudges, settings):
    settings.OCC_SWEEP_NUDGE_AFTER_SECONDS = 0.0
    for _ in range(4):
        make_work(namespace)
    assert queue.sweep(batch=3).nudged == 3
    assert len(sent_nudges) == 3


def test_a_broker_that_refuses_stops_the_nudges_quietly(namespace, monkeypatch, caplog, settings):
    settings.OCC_SWEEP_NUDGE_AFTER_SECONDS = 0.0
    for _ in range(3):
        make_work(namespace)
    from project import celery_app

    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(celery_app, "send_task", refuse)
    assert queue.sweep().nudged == 0
    assert len(calls) == 1
    assert "worker.nudge failed" in caplog.text
