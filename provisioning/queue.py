"""Claiming and running controller work: lease, heartbeat, fence, outcomes, recovery.

The ``controller_work`` row is the truth; Celery only says "look at key K" (tasks.py).

- ``claim(key)`` takes one due row (that key, or the oldest due row) for this worker, in one
  transaction: it locks the row (``select_for_update(skip_locked=True)``: on PostgreSQL a row
  another claim is taking is skipped; SQLite's single writer serializes claims), then moves it
  ``queued`` → ``claimed`` with a compare-and-set ``update()``: a fresh random token,
  ``attempt_count + 1`` and a lease measured on the database clock. At most one row per
  resource (``COALESCE(agent_id, namespace_id)``) is claimed at a time: the claim skips rows
  whose resource is busy, and the partial unique index ``work_one_claim_per_resource`` settles
  races (an IntegrityError there means "not claimable now"). The claimed row holds the columns
  jobs read and leaves the rest deferred.
- Every later write of the claim — heartbeat, job transaction, completion — is fenced by
  key + token + unexpired lease (``Claim._live_row``). Zero rows means the claim is lost: the
  worker logs ``worker.error CLAIM_LOST`` and writes nothing more.
- ``run_work(key)`` claims, runs ``job_for(work)(claim)`` under a heartbeat thread with no
  transaction open, and applies the returned Outcome: a Complete, or a Fail that fails no
  Namespace, without effects, is one fenced ``update()``; every other outcome is decided and
  written in one fenced transaction together with the outcome's ``effects``.
- ``sweep()`` (Celery beat) requeues or fails rows whose lease expired, fails exhausted
  queued rows, marks a still-provisioning Namespace ``failed`` when its ``ready`` work
  fails, and nudges overdue rows (the safety net for a lost message: every row is nudged at
  its due time — on commit, or counted down by the worker or sweep that put it back — so the
  sweep nudges only rows due for longer than ``OCC_SWEEP_NUDGE_AFTER_SECONDS``).

One module of ~540 lines: the claim, the fenced outcomes and the sweep are one state machine of
the ``controller_work`` row; each section writes the transitions the next one reads, and
splitting them would spread one row's rules over several files.
"""

from __future__ import annotations

import functools
import logging
import random
import re
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import (
    DatabaseError,
    IntegrityError,
    OperationalError,
    transaction,
)
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from occ import nudges
from occ.drivers.compute.base import ComputeError
from occ.models import AuditKind, AuditOutcome, ControllerWork, Namespace, NamespaceStatus, NamespaceTarget, WorkState
from occ.services.actors import actor_for_principal_id
from occ.services.audit import audit_record
from provisioning.heartbeat import Heartbeat
from provisioning.jobs import job_for
from provisioning.outcomes import ClaimLost, Complete, Defer, Fail, Outcome, Retry

log = logging.getLogger("provisioning.worker")

SAFE_CODE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
# Claims that lose a race (unique index, serialization, deadlock) are retried this many
# times; a race never marks work failed.
CLAIM_RACE_RETRIES = 3
# Dependencies that clear without a new revision: past the deadline the work fails with
# that code rather than CONVERGENCE_DEADLINE_EXCEEDED (spec §4.6).
TRANSIENT_DEPENDENCY_CODES = frozenset({
    "AGENT_GATEWAY_UNAVAILABLE", "KUBERNETES_API_UNAVAILABLE", "SANDBOX_ADMISSION_LIMIT_REACHED",
})
RACE_SQLSTATES = frozenset({"40001", "40P01"})  # serialization failure, deadlock
# A countdown nudge arrives this much after the row's due time: early, the claim would find
# the row not yet due and the work would wait for the sweep.
NUDGE_SLACK_SECONDS = 0.05
# A row is due when its time is before the database clock plus this. SQLite's clock (Django's
# Now()) has milliseconds, the times Django writes microseconds: a row due within the current
# millisecond is due. On PostgreSQL it makes a row due one millisecond early.
DUE_SLACK = timedelta(milliseconds=1)

# What a claim loads: what jobs and outcomes read, and what the claim itself sets. The rest
# (timestamps of the lease and of earlier attempts, their codes and result data) stay
# deferred and load on first access.
CLAIM_COLUMNS = ("idempotency_key", "job", "namespace_id", "agent_id", "revision_id", "actor_id",
                 "namespace_target", "agent_target", "attempt_count", "max_attempts", "created_at", "state",
                 "claim_token", "completed_at")

Job = Callable[["Claim"], Outcome]


# --- Claim ---------------------------------------------------------------------------------

class Claim:
    """A live claim on one work row. Jobs use only ``check``, ``renew`` and ``fenced``."""

    def __init__(self, work: ControllerWork, *, lease_seconds: float, confirmed_at: float) -> None:
        assert work.claim_token is not None
        self.key: str = work.idempotency_key
        self.token: str = work.claim_token
        self.work = work
        self.lease_seconds = lease_seconds
        self._lock = threading.Lock()
        self._lost = threading.Event()
        # Monotonic time until which the last confirmed lease certainly holds: measured from
        # when that renewal (or the claim) was *sent*, never from when its answer came.
        self._valid_until = confirmed_at + lease_seconds
        self._db_now: datetime | None = None

    def __repr__(self) -> str:
        return f"<Claim {self.key} attempt={self.work.attempt_count}>"

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def mark_lost(self) -> None:
        self._lost.set()

    def check(self) -> None:
        """Raise ClaimLost if the heartbeat saw the claim lost or the confirmed lease passed."""
        if self._lost.is_set():
            raise ClaimLost(self.key)
        with self._lock:
            expired = time.monotonic() >= self._valid_until
        if expired:
            self._lost.set()
            raise ClaimLost(self.key)

    def renew(self) -> None:
        """Extend the lease now (before each effect). Zero rows renewed: ClaimLost. Fenced, so
        a worker cannot stretch a lease that expired or now belongs to another token."""
        self.check()
        sent = time.monotonic()
        renewed = self._live_row().update(lease_expires_at=Now() + timedelta(seconds=self.lease_seconds),
                                          updated_at=Now())
        if renewed != 1:
            self._lost.set()
            raise ClaimLost(self.key)
        with self._lock:
            self._valid_until = max(self._valid_until, sent + self.lease_seconds)

    @contextmanager
    def fenced(self) -> Iterator[None]:
        """A transaction that first locks the row and re-verifies key + token + unexpired
        lease on the database clock. Everything written inside commits only with a live
        claim; another worker cannot take the row while the lock is held."""
        self.check()
        with transaction.atomic():
            row = (self._live_row().select_for_update().annotate(db_now=Now())
                   .values_list("db_now", flat=True).first())
            if row is None:
                self._lost.set()
                raise ClaimLost(self.key)
            self._db_now = row
            yield

    def _live_row(self) -> QuerySet[ControllerWork]:
        """The fence: this claim's row while it is claimed with this token and its lease has
        not expired on the database clock. A worker that lost its claim (paused past its
        lease, requeued by the sweep, overtaken by a claim with another token) matches
        nothing."""
        return ControllerWork.objects.filter(
            idempotency_key=self.key, claim_token=self.token, state=WorkState.CLAIMED, lease_expires_at__gt=Now())

    def _own_row(self) -> QuerySet[ControllerWork]:
        """The row under this claim's lock (inside ``fenced``): token and state only."""
        return ControllerWork.objects.filter(idempotency_key=self.key, claim_token=self.token,
                                             state=WorkState.CLAIMED)


# --- claiming ------------------------------------------------------------------------------

def due_work() -> QuerySet[ControllerWork]:
    """Rows a worker may claim now: queued, due, attempts left, resource not busy."""
    busy = ControllerWork.objects.filter(state=WorkState.CLAIMED).annotate(
        resource=Coalesce("agent_id", "namespace_id")
    ).filter(resource=Coalesce(OuterRef("agent_id"), OuterRef("namespace_id")))
    return ControllerWork.objects.filter(
        ~Exists(busy), state=WorkState.QUEUED, available_at__lt=Now() + DUE_SLACK,
        attempt_count__lt=F("max_attempts"))


def claim(key: str | None = None) -> Claim | None:
    """Claim ``key`` (or the oldest due row); None when nothing is claimable now."""
    lease = settings.OCC_WORKER_LEASE_SECONDS
    for _ in range(CLAIM_RACE_RETRIES):
        token = uuid.uuid4().hex
        sent = time.monotonic()
        try:
            with transaction.atomic():  # a savepoint inside a caller's: a lost race leaves it intact
                work = _lock_due(key)
                if work is None:
                    return None
                if not _take(work, token, lease):
                    continue  # cannot happen under the lock; a claim is never taken blind
        except IntegrityError:
            continue  # another row of the same resource was claimed at the same moment
        except OperationalError as exc:
            if _sqlstate(exc) in RACE_SQLSTATES:
                continue
            raise
        return Claim(work, lease_seconds=lease, confirmed_at=sent)
    return None


def _lock_due(key: str | None) -> ControllerWork | None:
    """The oldest due row (or the row ``key`` if it is due), locked; rows another claim has
    locked are skipped."""
    due = due_work().select_for_update(skip_locked=True).only(*CLAIM_COLUMNS).order_by("available_at")
    if key is not None:
        due = due.filter(idempotency_key=key)
    return due.first()


def _take(work: ControllerWork, token: str, lease: float) -> bool:
    """``queued`` → ``claimed`` (compare-and-set on the state) with ``token``, one more attempt
    and a lease on the database clock; ``work`` then shows what the claim set."""
    taken = ControllerWork.objects.filter(pk=work.pk, state=WorkState.QUEUED).update(
        state=WorkState.CLAIMED, claim_token=token, attempt_count=F("attempt_count") + 1,
        lease_expires_at=Now() + timedelta(seconds=lease), updated_at=Now())
    if taken != 1:
        return False
    work.state, work.claim_token, work.attempt_count = WorkState.CLAIMED, token, work.attempt_count + 1
    return True


def _sqlstate(exc: BaseException) -> str | None:
    cause = exc.__cause__
    return getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)


# --- running -------------------------------------------------------------------------------

def resolve_job(work: ControllerWork) -> Job:
    """The job the row names. Tests replace this function to run test jobs."""
    return job_for(work)


def run_work(key: str | None = None) -> Outcome | None:
    """Claim ``key`` (or the oldest due row), run its job, apply the outcome.

    Returns the outcome as applied, or None when nothing was claimed or the claim was lost.
    """
    claimed = claim(key)
    if claimed is None:
        return None
    return run_claimed(claimed)


def run_claimed(claim: Claim) -> Outcome | None:
    started = time.monotonic()
    heartbeat = Heartbeat(claim, interval_seconds=settings.OCC_WORKER_HEARTBEAT_SECONDS)
    heartbeat.start()
    try:
        outcome = _run_job(claim)
    except ClaimLost:
        _log_claim_lost(claim)
        return None
    finally:
        heartbeat.stop()
    try:
        applied = apply_outcome(claim, outcome)
    except ClaimLost:
        _log_claim_lost(claim)
        return None
    except DatabaseError as exc:
        # The lease runs out and the sweep requeues the row; nothing half-written.
        log.error("worker.error WORKER_UNAVAILABLE key=%s error=%s", claim.key, type(exc).__name__)
        return None
    log.info("worker.completed key=%s namespaceId=%s attempt=%d outcome=%s code=%s durationMs=%d",
             claim.key, claim.work.namespace_id, claim.work.attempt_count, type(applied).__name__.lower(),
             _outcome_code(applied), (time.monotonic() - started) * 1000)
    return applied


def _run_job(claim: Claim) -> Outcome:
    try:
        outcome = resolve_job(claim.work)(claim)
    except ClaimLost:
        raise
    except ComputeError as exc:
        code = _safe_code(exc.code)
        return Retry(code) if exc.retryable else Fail(code)
    except Exception as exc:
        _log_unknown_failure(claim, exc)
        return Retry("UNKNOWN_FAILURE")
    if not isinstance(outcome, Complete | Defer | Retry | Fail):
        log.error("worker.error UNKNOWN_FAILURE key=%s job returned %s", claim.key, type(outcome).__name__)
        return Retry("UNKNOWN_FAILURE")
    return outcome


def _log_unknown_failure(claim: Claim, exc: BaseException) -> None:
    """Exception type and code locations only: a message may carry upstream text or values.
    The locations are the innermost frames of OCC's own code (a library's frames say little
    of where it was called from), and a database error adds its SQLSTATE, a code."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if "site-packages" not in frame.filename and "/lib/python" not in frame.filename][-5:]
    where = " < ".join(f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}:{frame.name}" for frame in reversed(frames))
    sqlstate = getattr(exc.__cause__, "sqlstate", None) or getattr(exc, "sqlstate", None)
    log.error("worker.error UNKNOWN_FAILURE key=%s attempt=%d error=%s%s at=%s", claim.key,
              claim.work.attempt_count, type(exc).__name__,
              f" sqlstate={sqlstate}" if isinstance(sqlstate, str) else "", where)


def _log_claim_lost(claim: Claim) -> None:
    log.warning("worker.error CLAIM_LOST key=%s attempt=%d", claim.key, claim.work.attempt_count)


def apply_outcome(claim: Claim, outcome: Outcome) -> Outcome:
    """Write the outcome under the fence, with its effects, in one transaction.

    Returns what was applied: a Defer or Retry past the convergence deadline, or a Retry
    with no attempts left, becomes a Fail. Effects that raise roll everything back and the
    work is retried (``UNKNOWN_FAILURE``) without them.
    """
    try:
        return _apply(claim, outcome)
    except ClaimLost:
        raise
    except Exception as exc:
        if outcome.effects is None:
            raise  # the database itself failed: the lease runs out and the sweep requeues
        _log_unknown_failure(claim, exc)
        return _apply(claim, Retry("UNKNOWN_FAILURE"))


def _apply(claim: Claim, outcome: Outcome) -> Outcome:
    delay = _requeue_delay(claim.work, outcome)
    if _settled_without_the_clock(claim.work, outcome):
        claim.check()
        fields = _transition_fields(claim.work, outcome, Now(), delay=delay)
        if claim._live_row().update(**fields) != 1:
            claim.mark_lost()
            raise ClaimLost(claim.key)
        final = outcome
    else:
        with claim.fenced():
            assert claim._db_now is not None
            final = _final_outcome(claim.work, outcome, claim._db_now)
            if final.effects is not None:
                final.effects()
            fields = _transition_fields(claim.work, final, claim._db_now, delay=delay)
            if claim._own_row().update(**fields) != 1:
                raise ClaimLost(claim.key)  # cannot happen under the row lock; never write blind
            if isinstance(final, Fail) and claim.work.namespace_target == NamespaceTarget.READY:
                _fail_provisioning_namespace(claim.work, final.code)
    if isinstance(final, Defer | Retry):
        _nudge_when_due(claim.key, delay)
    if isinstance(final, Complete):
        for key in final.next_work:  # claimable now that this claim released their resource
            nudges.nudge(key)
    return final


def _settled_without_the_clock(work: ControllerWork, outcome: Outcome) -> bool:
    """A Complete, or a Fail that fails no Namespace, without effects: one fenced ``update()``
    writes it. A Defer or a Retry becomes a Fail past the convergence deadline or the last
    attempt, which the fenced transaction decides on the database clock."""
    if outcome.effects is not None:
        return False
    if isinstance(outcome, Fail):
        return work.namespace_target != NamespaceTarget.READY
    return isinstance(outcome, Complete)


def _requeue_delay(work: ControllerWork, outcome: Outcome) -> float:
    """Seconds until work put back in the queue is due again (chosen once: the backoff is random)."""
    if isinstance(outcome, Defer):
        return _defer_delay(outcome)
    if isinstance(outcome, Retry):
        return retry_backoff(work.attempt_count).total_seconds()
    return 0.0


def _nudge_when_due(key: str, delay: float) -> None:
    """After the requeue commits, a nudge counted down to the row's due time: the worker comes
    back when the work is due, not at the next sweep."""
    transaction.on_commit(functools.partial(nudges.nudge, key, countdown=delay + NUDGE_SLACK_SECONDS),
                          robust=True)


def _final_outcome(work: ControllerWork, outcome: Outcome, db_now: datetime) -> Outcome:
    if isinstance(outcome, Complete | Fail):
        return outcome
    convergence = settings.OCC_WORKER_CONVERGENCE_SECONDS
    if db_now >= work.created_at + timedelta(seconds=convergence):
        if isinstance(outcome, Defer) and outcome.code in TRANSIENT_DEPENDENCY_CODES:
            return Fail(outcome.code, effects=outcome.effects)
        return Fail("CONVERGENCE_DEADLINE_EXCEEDED", result_data={"timeoutMs": int(convergence * 1000)},
                    effects=outcome.effects)
    if isinstance(outcome, Retry) and work.attempt_count >= work.max_attempts:
        return Fail(outcome.code, effects=outcome.effects)
    return outcome


def _transition_fields(work: ControllerWork, outcome: Outcome, db_now: datetime | Now, *,
                       delay: float) -> dict[str, Any]:
    """Column values for ``outcome``; ``db_now`` is the database clock, read under the row lock
    (the fenced transaction and the sweep) or ``Now()`` in the statement itself (a Complete or
    Fail applied in one ``update()``); ``delay`` is the seconds until requeued work is due."""
    released = {"claim_token": None, "lease_expires_at": None, "updated_at": db_now, "last_attempt_at": db_now}
    if isinstance(outcome, Complete):
        return released | {"state": WorkState.SUCCEEDED, "completed_at": db_now,
                           "reason_code": _safe_code(outcome.reason_code), "result_data": outcome.result_data,
                           "last_attempt_code": _safe_code(outcome.reason_code)}
    if isinstance(outcome, Fail):
        code = _safe_code(outcome.code)
        return released | {"state": WorkState.FAILED_PERMANENT, "completed_at": db_now, "reason_code": code,
                           "result_data": outcome.result_data, "last_attempt_code": code}
    if isinstance(outcome, Defer):
        return released | {"state": WorkState.QUEUED, "attempt_count": F("attempt_count") - 1,
                           "available_at": db_now + timedelta(seconds=delay),
                           "last_attempt_code": _safe_code(outcome.code)}
    return released | {"state": WorkState.QUEUED, "available_at": db_now + timedelta(seconds=delay),
                       "last_attempt_code": _safe_code(outcome.code)}


def _defer_delay(outcome: Defer) -> float:
    delay = settings.OCC_WORKER_DEFER_SECONDS if outcome.delay_seconds is None else outcome.delay_seconds
    return float(min(max(delay, 0.0), settings.OCC_WORKER_RETRY_MAX_SECONDS))


def retry_backoff(attempt: int) -> timedelta:
    """Capped full jitter: random(0, min(retry max, 2^(attempt-1) s))."""
    ceiling = min(settings.OCC_WORKER_RETRY_MAX_SECONDS, 2.0 ** max(attempt - 1, 0))
    return timedelta(seconds=random.uniform(0, ceiling))  # noqa: S311 (jitter, not a secret)


def _safe_code(code: str) -> str:
    if isinstance(code, str) and SAFE_CODE.fullmatch(code):
        return code
    log.error("worker.error invalid outcome code %r replaced by UNKNOWN_FAILURE", str(code)[:80])
    return "UNKNOWN_FAILURE"


def _outcome_code(outcome: Outcome) -> str:
    return outcome.reason_code if isinstance(outcome, Complete) else outcome.code


def _fail_provisioning_namespace(work: ControllerWork, code: str) -> None:
    """In the caller's transaction: a Namespace still provisioning whose ready work failed
    becomes ``failed``, with one lifecycle audit event. A job that already moved it on
    (its own effects) makes this a no-op."""
    moved = Namespace.objects.filter(pk=work.namespace_id, status=NamespaceStatus.PROVISIONING).update(
        status=NamespaceStatus.FAILED, updated_at=timezone.now())
    if moved:
        audit_record(actor=actor_for_principal_id(work.actor_id), source="worker",
                     action="openclaw.namespaces.ready", namespace_id=work.namespace_id,
                     resource_kind="namespace", resource_id=work.namespace_id,
                     kind=AuditKind.LIFECYCLE, outcome=AuditOutcome.FAILED,
                     details={"reasonCode": code, "workKey": work.idempotency_key})


# --- recovery and nudges (the beat sweep) --------------------------------------------------

@dataclass
class SweepResult:
    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    nudged: int = 0


def sweep(*, batch: int | None = None, nudge: bool = True) -> SweepResult:
    """Recover stale claims, then nudge overdue work. Safe with concurrent sweepers."""
    result = recover_stale(batch=batch)
    if nudge:
        result.nudged = nudge_due(limit=batch)
    # The INFO log says what happened: a sweep that found nothing (most of them) is DEBUG.
    found = bool(result.requeued or result.failed or result.nudged)
    log.log(logging.INFO if found else logging.DEBUG, "worker.sweep requeued=%d failed=%d nudged=%d",
            len(result.requeued), len(result.failed), result.nudged)
    return result


def recover_stale(*, batch: int | None = None) -> SweepResult:
    """Expired claims → queued with backoff (``LEASE_EXPIRED``) or ``failed_permanent`` when
    attempts or the convergence deadline are spent; exhausted queued rows → failed. One
    transaction; rows another sweeper holds are skipped."""
    limit = batch or settings.OCC_SWEEP_BATCH
    result = SweepResult()
    with transaction.atomic():
        stale = list(
            ControllerWork.objects.select_for_update(skip_locked=True)
            .filter(Q(state=WorkState.CLAIMED, lease_expires_at__lt=Now())
                    | Q(state=WorkState.QUEUED, attempt_count__gte=F("max_attempts")))
            .annotate(db_now=Now()).order_by("updated_at")[:limit]
        )
        for work in stale:
            outcome = _recovery_outcome(work, work.db_now)  # type: ignore[attr-defined]
            delay = _requeue_delay(work, outcome)
            fields = _transition_fields(work, outcome, work.db_now, delay=delay)  # type: ignore[attr-defined]
            if isinstance(outcome, Retry):
                fields["last_attempt_code"] = "LEASE_EXPIRED"
            # Compare-and-set on what was read: on SQLite (no row locks) a concurrent sweeper
            # or a late completion makes this a no-op instead of a double transition.
            unchanged = ControllerWork.objects.filter(
                pk=work.pk, state=work.state, claim_token=work.claim_token, attempt_count=work.attempt_count)
            if work.state == WorkState.CLAIMED:
                unchanged = unchanged.filter(lease_expires_at__lt=Now())
            if not unchanged.update(**fields):
                continue
            if isinstance(outcome, Fail):
                result.failed.append(work.pk)
                log.warning("worker.recovered key=%s state=failed_permanent code=%s", work.pk, outcome.code)
                if work.namespace_target == NamespaceTarget.READY:
                    _fail_provisioning_namespace(work, outcome.code)
            else:
                result.requeued.append(work.pk)
                _nudge_when_due(work.pk, delay)
                log.warning("worker.recovered key=%s state=queued code=LEASE_EXPIRED attempt=%d",
                            work.pk, work.attempt_count)
    return result


def _recovery_outcome(work: ControllerWork, db_now: datetime) -> Outcome:
    if work.state == WorkState.QUEUED:
        return Fail(work.last_attempt_code or "UNKNOWN_FAILURE")
    if work.attempt_count >= work.max_attempts:
        return Fail("LEASE_EXPIRED")
    return _final_outcome(work, Retry("LEASE_EXPIRED"), db_now)


def nudge_due(*, limit: int | None = None) -> int:
    """Send ``provisioning.run_work`` for overdue rows (oldest first, bounded). Returns how
    many were sent; stops at the first publish failure (the next sweep tries again).

    Overdue: due for longer than ``OCC_SWEEP_NUDGE_AFTER_SECONDS``. Every row is nudged at its
    due time (on commit, or counted down), and that message waits in the broker behind the
    ones before it; a second message joins the back of the same line, so it helps only when
    the first was lost, and otherwise makes a worker claim nothing (docs/performance.md,
    "Provisioning": tasks that claimed nothing)."""
    overdue = Now() - timedelta(seconds=settings.OCC_SWEEP_NUDGE_AFTER_SECONDS)
    overdue_rows = due_work().filter(available_at__lte=overdue).order_by("available_at")
    keys = list(overdue_rows.values_list("pk", flat=True)[:limit or settings.OCC_SWEEP_BATCH])
    sent = 0
    for key in keys:
        if not nudges.nudge(key):
            break
        sent += 1
    return sent
