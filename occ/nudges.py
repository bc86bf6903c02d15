"""Nudges: the Celery message "work key K is due", sent by task name.

The ``controller_work`` row is the truth; a nudge only wakes a worker (provisioning/tasks.py
``provisioning.run_work``). Services send one on commit and the queue sends one for work it
puts back with a delay, counted down to the row's due time; the beat sweep nudges whatever
a lost message left behind. Sending by name keeps services and the core free of the worker's
modules.
"""

from __future__ import annotations

import logging

from celery import current_app

log = logging.getLogger("provisioning.worker")

RUN_WORK_TASK = "provisioning.run_work"
# Publishing a nudge must never hold up the caller for long: the sweep is the safety net.
NUDGE_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


def nudge(key: str, *, countdown: float | None = None) -> bool:
    """Publish ``provisioning.run_work(key)``, delivered after ``countdown`` seconds when given;
    log and return False if the broker does not take it (the row is durable either way)."""
    try:
        current_app.send_task(RUN_WORK_TASK, args=(key,), countdown=countdown or None, retry=True,
                              retry_policy=NUDGE_RETRY_POLICY)
    except Exception as exc:
        log.warning("worker.nudge failed key=%s error=%s", key, type(exc).__name__)
        return False
    return True


BUDGET_WEBHOOK_TASK = "provisioning.send_budget_webhook"


def send_budget_webhook(event_id: str) -> bool:
    """Publish ``provisioning.send_budget_webhook(event_id)``: deliver the webhook of a budget's
    threshold event (its audit event). Best effort like the webhook itself: a broker that does
    not take it is logged and the webhook is not sent."""
    try:
        current_app.send_task(BUDGET_WEBHOOK_TASK, args=(event_id,), retry=True, retry_policy=NUDGE_RETRY_POLICY)
    except Exception as exc:
        log.warning("budgets.webhook not queued event=%s error=%s", event_id, type(exc).__name__)
        return False
    return True
