"""Writing controller work rows; provisioning/queue.py claims and runs them.

After commit a nudge tells a worker the row is due (``occ.nudges``): like
``run_work.delay_on_commit(key)``, but a broker that does not answer is logged
(``worker.nudge failed``) instead of turning the committed request into an error: the row is
already durable and the beat sweep nudges it within one interval.
"""

from __future__ import annotations

from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from occ import nudges
from occ.models import ControllerWork, NamespaceTarget, WorkJob, WorkState


def work_enqueue(*, key: str, job: WorkJob, namespace_id: str, actor_id: str,
                 namespace_target: NamespaceTarget | None = None, agent_id: str | None = None,
                 agent_target: str | None = None, revision_id: str | None = None,
                 nudge: bool = True) -> ControllerWork:
    """Insert a queued work row in the caller's transaction.

    The key is the row's identity: enqueueing an existing key with the same owner returns
    the existing row; a different owner or target is a programming error. ``nudge=False``
    for a caller that holds the claim on the row's resource (a job): the row cannot be
    claimed before that claim is released, so the job names it in its outcome and the queue
    nudges it then (``Complete.next_work``).
    """
    assert transaction.get_connection().in_atomic_block, "work is written with its resource change"
    existing = ControllerWork.objects.filter(idempotency_key=key).first()
    if existing is not None:
        same = (existing.job, existing.namespace_id, existing.agent_id, existing.revision_id,
                existing.namespace_target, existing.agent_target) == (
            job, namespace_id, agent_id, revision_id, namespace_target, agent_target)
        if not same:
            raise ValueError(f"work key {key} already names a different target")
        return existing
    now = timezone.now()
    work = ControllerWork.objects.create(
        idempotency_key=key, job=job, namespace_id=namespace_id, actor_id=actor_id,
        namespace_target=namespace_target, agent_id=agent_id, agent_target=agent_target,
        revision_id=revision_id, state=WorkState.QUEUED, available_at=now,
        max_attempts=settings.OCC_WORK_MAX_ATTEMPTS, created_at=now, updated_at=now,
    )
    if nudge:
        transaction.on_commit(partial(nudges.nudge, key), robust=True)
    return work


def work_requeue(*, work: ControllerWork) -> ControllerWork:
    """Put a terminal row back in the queue in the caller's transaction, which holds its row
    lock (explicit retries only: terminal work is never requeued automatically).

    Attempts and the last outcome are cleared and the row is due now. ``created_at`` moves
    too: the convergence deadline counts from it, and a retry gets a fresh one.
    """
    assert transaction.get_connection().in_atomic_block, "work is requeued with its resource change"
    now = timezone.now()
    fields = {
        "state": WorkState.QUEUED, "attempt_count": 0, "max_attempts": settings.OCC_WORK_MAX_ATTEMPTS,
        "claim_token": None, "lease_expires_at": None, "completed_at": None, "reason_code": None,
        "result_data": None, "last_attempt_code": None, "last_attempt_at": None, "available_at": now,
        "created_at": now, "updated_at": now,
    }
    for name, value in fields.items():
        setattr(work, name, value)
    work.save(update_fields=list(fields))
    transaction.on_commit(partial(nudges.nudge, work.idempotency_key), robust=True)
    return work


