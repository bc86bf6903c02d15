"""Celery tasks: thin. Each takes a key (or nothing), calls the queue, returns quietly.

Queues are routed by name in provisioning/queues.py (TASK_QUEUES)."""

from __future__ import annotations

from celery import Task, shared_task
from django.conf import settings

from occ.services.budgets import WebhookNotDelivered, budget_webhook_deliver
from occ.services.usage_collection import usage_collect
from provisioning import queue
from provisioning.jobs import sessions as session_jobs
from provisioning.jobs.maintenance import maintain_compute as maintain_compute_job

# A job still running after its convergence deadline (plus a lease) is hung: the pool child
# is killed, the message requeued, and the sweep recovers the row once its lease expires.
RUN_WORK_TIME_LIMIT = settings.OCC_WORKER_CONVERGENCE_SECONDS + settings.OCC_WORKER_LEASE_SECONDS


@shared_task(name="provisioning.run_work", ignore_result=True, time_limit=RUN_WORK_TIME_LIMIT)
def run_work(key: str) -> None:
    """Claim the row ``key`` and run it. A missing, terminal, not-yet-due or busy row is not
    claimable: the task returns quietly (the row is the truth, this message only a nudge)."""
    queue.run_work(key)


@shared_task(name="provisioning.sweep", ignore_result=True)
def sweep() -> None:
    """Recover expired leases and nudge due work (Celery beat, every OCC_SWEEP_INTERVAL_SECONDS)."""
    queue.sweep()


@shared_task(name="provisioning.maintain_compute", ignore_result=True)
def maintain_compute() -> None:
    """Let the compute driver repair what it supervises, e.g. restart a dead active gateway."""
    maintain_compute_job()


@shared_task(name="provisioning.collect_usage", ignore_result=True,
             time_limit=max(60.0, 4 * settings.OCC_USAGE_COLLECTION_SECONDS))
def collect_usage() -> None:
    """Collect every running gateway's usage and enforce the budgets (beat, every
    OCC_USAGE_COLLECTION_SECONDS)."""
    usage_collect()


# Declared retries: OCC_BUDGET_WEBHOOK_ATTEMPTS tries in all, waits doubling from the backoff
# (full jitter), never more than WEBHOOK_BACKOFF_MAX_SECONDS.
WEBHOOK_BACKOFF_MAX_SECONDS = 600


@shared_task(name="provisioning.send_budget_webhook", bind=True, ignore_result=True,
             autoretry_for=(WebhookNotDelivered,), max_retries=settings.OCC_BUDGET_WEBHOOK_ATTEMPTS - 1,
             retry_backoff=settings.OCC_BUDGET_WEBHOOK_BACKOFF_SECONDS, retry_backoff_max=WEBHOOK_BACKOFF_MAX_SECONDS,
             retry_jitter=True, time_limit=settings.OCC_BUDGET_WEBHOOK_TIMEOUT_SECONDS + 30)
def send_budget_webhook(self: Task, event_id: str) -> None:
    """One try of the webhook of budget threshold event ``event_id``; a failed try raises
    ``WebhookNotDelivered`` and Celery tries again later, as declared above."""
    budget_webhook_deliver(event_id=event_id, attempt=self.request.retries + 1,
                           final=self.request.retries >= (self.max_retries or 0))


@shared_task(name="provisioning.refresh_session_index", ignore_result=True)
def refresh_session_index() -> None:
    """One refresh of the session index (Celery beat, every OCC_SESSION_INDEX_SECONDS): a task
    per running Agent, so a gateway that is down delays nobody else."""
    for agent_id in session_jobs.running_agent_ids():
        refresh_agent_sessions.delay(agent_id)


@shared_task(name="provisioning.refresh_agent_sessions", ignore_result=True,
             time_limit=settings.OCC_GATEWAY_RPC_TIMEOUT_SECONDS + 30, expires=settings.OCC_SESSION_INDEX_SECONDS)
def refresh_agent_sessions(agent_id: str) -> None:
    """The Agent's sessions as its gateway lists them now (metadata only)."""
    session_jobs.refresh_agent_sessions(agent_id)
