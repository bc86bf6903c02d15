"""The Celery wiring: routes to enum queues, worker safety settings, beat, thin tasks, nudges."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from occ import nudges
from occ.models import NamespaceTarget, WorkJob, WorkState
from occ.services.work import work_enqueue
from project import celery_app
from provisioning import queue, tasks
from provisioning.outcomes import Complete
from provisioning.queues import TASK_QUEUES, Queue
from tests.provisioning.conftest import make_work, reload


@pytest.fixture(scope="module")
def registered_tasks() -> dict[str, object]:
    """The tasks a worker registers at start (autodiscovery included)."""
    celery_app.loader.import_default_modules()
    return {name: task for name, task in celery_app.tasks.items() if not name.startswith("celery.")}


def test_our_tasks_are_registered(registered_tasks):
    assert {"provisioning.run_work", "provisioning.sweep"} <= set(registered_tasks)


def test_every_task_is_routed_to_a_queue_of_the_enum(registered_tasks):
    declared = {q.name for q in celery_app.conf.task_queues}
    assert declared == {q.value for q in Queue}
    for name, task in registered_tasks.items():
        named = name in TASK_QUEUES or "queue" in type(task).__dict__
        assert named, f"{name} names no queue: add it to provisioning.queues.TASK_QUEUES"
        routed = celery_app.amqp.router.route({}, name)["queue"].name
        assert routed in declared, f"{name} is routed to {routed!r}, not a queue of the enum"
    assert celery_app.amqp.router.route({}, "provisioning.run_work")["queue"].name == Queue.WORK
    assert celery_app.amqp.router.route({}, "provisioning.sweep")["queue"].name == Queue.MAINTENANCE


def test_worker_settings_survive_crashes():
    conf = celery_app.conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_ignore_result is True
    assert conf.task_create_missing_queues is False


def test_a_hung_job_is_killed_only_after_its_convergence_deadline():
    limit = celery_app.tasks["provisioning.run_work"].time_limit
    assert limit > settings.OCC_WORKER_CONVERGENCE_SECONDS


def test_beat_sweeps_every_interval_into_the_maintenance_queue():
    entry = celery_app.conf.beat_schedule["provisioning.sweep"]
    assert entry["task"] == "provisioning.sweep"
    assert entry["schedule"] == settings.OCC_SWEEP_INTERVAL_SECONDS
    assert entry["options"]["queue"] == Queue.MAINTENANCE
    assert entry["options"]["expires"] >= settings.OCC_SWEEP_INTERVAL_SECONDS
    assert celery_app.conf.beat_schedule_filename.startswith(str(settings.OCC_DATA_DIR))


# --- the tasks are thin and quiet ------------------------------------------------------------

def test_run_work_task_runs_a_due_row(namespace, jobs):
    work = make_work(namespace)
    tasks.run_work(work.pk)
    assert reload(work).state == WorkState.SUCCEEDED
    assert [call[0] for call in jobs.calls] == [work.pk]


@pytest.mark.parametrize("fields", [
    pytest.param({"state": WorkState.SUCCEEDED}, id="terminal"),
    pytest.param({"state": WorkState.CLAIMED, "claim_token": "other"}, id="claimed-elsewhere"),
])
def test_run_work_task_returns_quietly_when_not_claimable(namespace, jobs, fields):
    extra = {"completed_at": timezone.now()} if fields["state"] == WorkState.SUCCEEDED else {
        "lease_expires_at": timezone.now() + timedelta(seconds=30)}
    work = make_work(namespace, **fields, **extra)
    assert tasks.run_work(work.pk) is None
    assert jobs.calls == []
    assert reload(work).state == fields["state"]


def test_run_work_task_returns_quietly_for_a_missing_row(db, jobs):
    assert tasks.run_work("agent:agt_gone:deleted:1") is None
    assert jobs.calls == []


def test_sweep_task_calls_the_sweep(monkeypatch):
    calls = []
    monkeypatch.setattr(queue, "sweep", lambda **kw: calls.append(kw))
    tasks.sweep()
    assert calls == [{}]


@pytest.fixture
def published(monkeypatch) -> list[tuple[str, tuple, dict]]:
    """What the Celery app was asked to send: (task name, args, options)."""
    sent: list[tuple[str, tuple, dict]] = []
    monkeypatch.setattr(celery_app, "send_task", lambda name, args=(), **kw: sent.append((name, args, kw)))
    return sent


def test_nudges_carry_only_the_key_to_a_registered_task(namespace, published, registered_tasks):
    work = make_work(namespace)
    assert nudges.nudge(work.pk) is True
    [(name, args, options)] = published
    assert (name, args, options["countdown"]) == ("provisioning.run_work", (work.pk,), None)
    assert name in registered_tasks
    assert TASK_QUEUES[name] == Queue.WORK


# --- the on-commit nudge -------------------------------------------------------------------

def test_work_enqueue_nudges_the_worker_after_commit(namespace, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        work = work_enqueue(key=f"namespace:{namespace.id}:deleted:9", job=WorkJob.NAMESPACE,
                            namespace_id=namespace.id, actor_id="usr_x", namespace_target=NamespaceTarget.DELETED)
    assert published == [], "nothing is sent before the commit"
    assert len(callbacks) == 1
    callbacks[0]()
    assert [args for _, args, _ in published] == [(work.pk,)]


def test_enqueueing_an_existing_key_sends_nothing_new(namespace, monkeypatch, django_capture_on_commit_callbacks):
    with transaction.atomic():
        work = make_work(namespace, namespace_target="deleted")
    with django_capture_on_commit_callbacks() as callbacks, transaction.atomic():
        again = work_enqueue(key=work.pk, job=WorkJob.NAMESPACE, namespace_id=namespace.id, actor_id="usr_x",
                             namespace_target=NamespaceTarget.DELETED)
    assert again.pk == work.pk
    assert callbacks == []


def test_a_broker_outage_after_commit_is_logged_not_raised(namespace, monkeypatch, caplog,
                                                          django_capture_on_commit_callbacks):
    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(celery_app, "send_task", refuse)
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True), \
            transaction.atomic():
        work = work_enqueue(key=f"namespace:{namespace.id}:deleted:8", job=WorkJob.NAMESPACE,
                            namespace_id=namespace.id, actor_id="usr_x", namespace_target=NamespaceTarget.DELETED)
    assert reload(work).state == WorkState.QUEUED
    assert f"worker.nudge failed key={work.pk}" in caplog.text


def test_a_nudged_row_completes_through_the_task(namespace, jobs, monkeypatch, django_capture_on_commit_callbacks):
    """The on-commit message, delivered, runs the row (eagerly here; real workers in test_faults)."""
    monkeypatch.setattr(celery_app, "send_task", lambda name, args=(), **kw: tasks.run_work(*args))
    jobs.set(f"namespace:{namespace.id}:deleted:7", lambda claim: Complete("NAMESPACE_DELETED"))
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        work = work_enqueue(key=f"namespace:{namespace.id}:deleted:7", job=WorkJob.NAMESPACE,
                            namespace_id=namespace.id, actor_id="usr_x", namespace_target=NamespaceTarget.DELETED)
    row = reload(work)
    assert (row.state, row.reason_code) == (WorkState.SUCCEEDED, "NAMESPACE_DELETED")


def test_the_procfile_runs_web_a_worker_on_every_queue_and_beat():
    procfile = (settings.BASE_DIR / "Procfile").read_text()
    processes = dict(line.split(":", 1) for line in procfile.splitlines() if line and not line.startswith("#"))
    assert set(processes) == {"web", "worker", "beat"}
    worker = processes["worker"].split()
    assert worker[worker.index("-Q") + 1].split(",") == [q.value for q in Queue]
    assert "celery -A project worker" in processes["worker"]
    assert "celery -A project beat" in processes["beat"]
    assert "gunicorn" in processes["web"]
    assert "127.0.0.1" in processes["web"]


def test_beat_schedules_sweep_and_compute_maintenance():
    from project.celery import app

    app.loader.import_default_modules()
    names = set(app.conf.beat_schedule)
    assert {"provisioning.sweep", "provisioning.maintain_compute"} <= names
