"""The worker and beat log at INFO what happened, not that the routine tasks ran.

Celery writes "Task … received", "Task … succeeded" and beat's "Sending due task …" at INFO
for every task. For the sweep and the compute maintenance, sent every few seconds, that was
two thirds of the log; they are DEBUG now, and the sweep itself logs at INFO only when it
recovered or nudged something. The embedded broker no longer warns "No hostname was
supplied" (its transport has folders, not a host).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys

import pytest
from celery.app import trace
from celery.beat import ScheduleEntry
from kombu import Connection

from provisioning import queue
from tests.e2e.stack import REMOVED_ENV, REPO, StackProcess, wait_until
from tests.provisioning.conftest import make_work

QUEUES = "work,maintenance"
# A worker and beat start in 5-10 s on an idle 2-core machine; leave room for a loaded one.
PROCESS_TIMEOUT_SECONDS = 180


def test_a_sweep_that_found_nothing_logs_at_debug_only(namespace, sent_nudges, caplog):
    caplog.set_level(logging.DEBUG, logger="provisioning.worker")

    queue.sweep()

    sweep_records = [r for r in caplog.records if r.getMessage().startswith("worker.sweep")]
    assert [(r.levelno, r.getMessage()) for r in sweep_records] == [
        (logging.DEBUG, "worker.sweep requeued=0 failed=0 nudged=0")]


def test_a_sweep_that_nudged_logs_what_it_did_at_info(namespace, sent_nudges, caplog, settings):
    settings.OCC_SWEEP_NUDGE_AFTER_SECONDS = 0.0
    make_work(namespace)
    caplog.set_level(logging.INFO, logger="provisioning.worker")

    queue.sweep()

    assert "worker.sweep requeued=0 failed=0 nudged=1" in [
        r.getMessage() for r in caplog.records if r.levelno == logging.INFO]


def celery_task_lines(name: str) -> None:
    """What Celery itself logs for one task: received, succeeded, expired (worker), sent (beat)."""
    context = {"id": "t1", "name": name, "args": "()", "kwargs": "{}", "eta": None, "return_value": "None",
               "runtime": 0.01}
    logging.getLogger("celery.worker.strategy").info(trace.LOG_RECEIVED, context, extra={"data": context})
    trace.info(trace.LOG_SUCCESS, context)
    logging.getLogger("celery.worker.request").info("Discarding revoked task: %s[%s]", name, "t1")
    entry = ScheduleEntry(name=name, task=name, schedule=1.0)
    logging.getLogger("celery.beat").info("Scheduler: Sending due task %s (%s)", entry.name, entry.task)


@pytest.mark.parametrize("task", ["provisioning.sweep", "provisioning.maintain_compute"])
def test_celerys_lines_about_a_routine_task_are_debug(task, caplog):
    caplog.set_level(logging.DEBUG)
    celery_task_lines(task)
    assert len(caplog.records) == 4
    assert {record.levelname for record in caplog.records} == {"DEBUG"}

    caplog.clear()
    caplog.set_level(logging.INFO)
    celery_task_lines(task)
    assert caplog.records == []


def test_celerys_lines_about_real_work_stay_info(caplog):
    caplog.set_level(logging.INFO)
    celery_task_lines("provisioning.run_work")
    assert [record.levelname for record in caplog.records] == ["INFO"] * 4


def test_the_embedded_broker_names_no_host(tmp_path, caplog):
    options = {f"data_folder_{way}": str(tmp_path) for way in ("in", "out")} | {"control_folder": str(tmp_path)}
    with Connection("filesystem://", transport="project.kombu_filesystem:Transport",
                    transport_options=options) as connection:
        caplog.set_level(logging.WARNING, logger="kombu")
        info = connection.info()
    assert not [r.getMessage() for r in caplog.records if "hostname" in r.getMessage()]
    assert info["hostname"] is None


# --- the real processes ----------------------------------------------------------------------------------


def info_lines(log: str) -> list[str]:
    """Lines logged at INFO or above, in Celery's format (``[… INFO/MainProcess]``) or Django's."""
    return [line for line in log.splitlines() if re.search(r"\b(INFO|WARNING|ERROR|CRITICAL)[/ ]", line)]


@pytest.mark.slow
def test_a_real_worker_and_beat_log_no_routine_lines_at_info(tmp_path):
    """Beat (INFO) sends the sweep every 0.3 s and the worker (DEBUG, so the sweeps can be
    counted) runs them: every line about them is DEBUG, the namespace's real work is INFO, and
    neither process warns about a hostname."""
    data_dir, log_dir = tmp_path / "data", tmp_path / "logs"
    log_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in REMOVED_ENV} | {
        "OCC_DATA_DIR": str(data_dir), "OCC_COMPUTE_DRIVER": "fake", "OCC_SWEEP_INTERVAL_SECONDS": "0.3",
        "OCC_COMPUTE_MAINTENANCE_SECONDS": "0.5", "PYTHONUNBUFFERED": "1", "OCC_LOG_LEVEL": "INFO"}
    python = sys.executable
    for command in (["-m", "project.data_dir"], ["manage.py", "migrate", "-v0"], ["manage.py", "occ_bootstrap"]):
        done = subprocess.run([python, *command], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=PROCESS_TIMEOUT_SECONDS, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
    worker = StackProcess("worker", [python, "-m", "celery", "-A", "project", "worker", "-Q", QUEUES,
                                     "--concurrency", "1", "--without-gossip", "--without-mingle",
                                     "--loglevel", "DEBUG"], env=env, log_dir=log_dir)
    beat = StackProcess("beat", [python, "-m", "celery", "-A", "project", "beat", "--loglevel", "INFO",
                                 "--schedule", str(data_dir / "schedule")], env=env, log_dir=log_dir)
    try:
        def swept_twice_and_ready() -> bool:
            log = worker.log()
            return log.count("Task provisioning.sweep[") >= 4 and "worker.completed" in log  # received + succeeded
        wait_until(swept_twice_and_ready, timeout=PROCESS_TIMEOUT_SECONDS, what="two sweeps and the ready work",
                   diagnose=lambda: worker.tail() + "\n" + beat.tail())
    finally:
        worker.stop()
        beat.stop()
    worker_log, beat_log = worker.log(), beat.log()
    routine = ("provisioning.sweep", "provisioning.maintain_compute")
    assert not [line for line in info_lines(worker_log) + info_lines(beat_log) if any(t in line for t in routine)]
    assert [line for line in info_lines(worker_log) if "worker.completed" in line]
    assert "No hostname" not in worker_log + beat_log
