"""The Celery app: nudges for controller work and the beat sweep.

Celery only carries "work key K is due": the ``controller_work`` row is the truth, claimed
with a lease and fenced by its token (provisioning/queue.py). So a message may be lost,
duplicated or late without losing work or repeating an effect; the beat sweep every
``OCC_SWEEP_INTERVAL_SECONDS`` recovers expired leases and nudges overdue rows.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from kombu import Queue as KombuQueue

from provisioning.queues import TASK_QUEUES, Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

SWEEP_TASK = "provisioning.sweep"
MAINTAIN_COMPUTE_TASK = "provisioning.maintain_compute"
COLLECT_USAGE_TASK = "provisioning.collect_usage"
SESSION_INDEX_TASK = "provisioning.refresh_session_index"
AGENT_SESSIONS_TASK = "provisioning.refresh_agent_sessions"
# The housekeeping beat sends every few seconds; each run logs at INFO what it did, if anything.
ROUTINE_TASKS = frozenset({SWEEP_TASK, MAINTAIN_COMPUTE_TASK, COLLECT_USAGE_TASK, SESSION_INDEX_TASK,
                           AGENT_SESSIONS_TASK})

app = Celery("occ")
# Broker URL, transport options, the beat schedule file and ignore_result come from
# project/settings.py (CELERY_*); what follows holds for every deployment.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    # Ack after the task ran, and requeue when a pool child dies: a lost message costs the
    # sweep's grace (OCC_SWEEP_NUDGE_AFTER_SECONDS) and one interval, a duplicate returns
    # quietly (the row is claimed or terminal).
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_queues=[KombuQueue(queue.value, routing_key=queue.value) for queue in Queue],
    task_default_queue=Queue.WORK.value,
    task_routes={name: {"queue": queue.value} for name, queue in TASK_QUEUES.items()},
    task_create_missing_queues=False,
    broker_connection_retry_on_startup=True,
)
app.autodiscover_tasks(["provisioning"])


@app.on_after_configure.connect
def _schedule_sweep(sender: Celery, **_: Any) -> None:
    from django.conf import settings

    interval = settings.OCC_SWEEP_INTERVAL_SECONDS
    sender.add_periodic_task(
        interval, sender.signature(SWEEP_TASK), name=SWEEP_TASK,
        # A sweep that waited longer than a few intervals is stale: the next one is coming.
        queue=Queue.MAINTENANCE.value, expires=max(10.0, 5 * interval),
    )
    sender.add_periodic_task(
        settings.OCC_COMPUTE_MAINTENANCE_SECONDS, sender.signature(MAINTAIN_COMPUTE_TASK),
        name=MAINTAIN_COMPUTE_TASK, queue=Queue.MAINTENANCE.value,
        expires=settings.OCC_COMPUTE_MAINTENANCE_SECONDS,
    )
    # A pass that waited past its interval is stale: the next one collects the same days.
    sender.add_periodic_task(
        settings.OCC_USAGE_COLLECTION_SECONDS, sender.signature(COLLECT_USAGE_TASK), name=COLLECT_USAGE_TASK,
        queue=Queue.MAINTENANCE.value, expires=settings.OCC_USAGE_COLLECTION_SECONDS,
    )
    sender.add_periodic_task(
        settings.OCC_SESSION_INDEX_SECONDS, sender.signature(SESSION_INDEX_TASK), name=SESSION_INDEX_TASK,
        queue=Queue.MAINTENANCE.value, expires=settings.OCC_SESSION_INDEX_SECONDS,
    )


class RoutineTaskRecords(logging.Filter):
    """Lower Celery's own INFO lines about the routine tasks to DEBUG.

    The worker logs "Task … received", "Task … succeeded" (and "Discarding revoked task" for
    one that expired unrun) for every task and beat "Sending due task …" for every send, all
    at INFO and with no per-task setting. For the sweep and the compute maintenance, sent every
    few seconds, that was two thirds of the log and said only that nothing happened; those
    tasks log at INFO themselves when they did something. Attached to the loggers that write
    these lines (LOGGING in project/settings.py); other tasks, and every warning or error, pass
    unchanged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not _names_a_routine_task(record):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def _names_a_routine_task(record: logging.LogRecord) -> bool:
    data = getattr(record, "data", None)  # received/succeeded pass their context as extra "data"
    if isinstance(data, dict):
        return data.get("name") in ROUTINE_TASKS
    # "Sending due task %s (%s)" (entry, task) and "Discarding revoked task: %s[%s]" (task, id)
    args = record.args if isinstance(record.args, tuple) else ()
    return any(isinstance(arg, str) and arg in ROUTINE_TASKS for arg in args)
