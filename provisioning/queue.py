"""Claiming and running controller work: lease, heartbeat, fence, outcomes, recovery.

The ``controller_work`` row is the truth; Celery only says "look at key K" (tasks.py).

- ``claim(key)`` takes one due row (that key, or the oldest due row) for this worker:
  ``queued`` → ``claimed`` with a fresh random token, ``attempt_count + 1`` and a lease
  measured on the database clock. At most one row per resource
  (``COALESCE(agent_id, namespace_id)``) is claimed at a time: the claim skips rows whose
  resource is busy, and the partial unique index ``work_one_claim_per_resource`` settles
  races (an IntegrityError there means "not claimable now"). One claim statement serves
  both databases (``CLAIM_SQL``): PostgreSQL adds ``FOR UPDATE SKIP LOCKED``, SQLite's single
  writer makes it atomic as it stands.
- Every later write of the claim — heartbeat, job transaction, completion — is fenced by
  key + token + unexpired lease. Zero rows means the claim is lost: the worker logs
  ``worker.error CLAIM_LOST`` and writes nothing more.
- The hot path — the claim, heartbeats and completions without effects — runs fixed SQL
  statements with parameters only (one rendering per database) through Django's public
  cursor and raw-query APIs; the rest uses the ORM. The claim returns the columns jobs read
  and leaves the rest deferred.
- ``run_work(key)`` claims, runs ``job_for(work)(claim)`` under a heartbeat thread with no
  transaction open, and applies the returned Outcome in one fenced transaction together
  with the outcome's ``effects``.
- ``sweep()`` (Celery beat) requeues or fails rows whose lease expired, fails exhausted
  queued rows, marks a still-provisioning Namespace ``failed`` when its ``ready`` work
  fails, and nudges overdue rows (the safety net for a lost message: every row is nudged at
  its due time — on commit, or counted down by the worker or sweep that put it back — so the
  sweep nudges only rows due for longer than ``OCC_SWEEP_NUDGE_AFTER_SECONDS``).
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
    connection,
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
# Claim statements that lose a race (unique index, serialization, deadlock) are retried
# this many times; a race never marks work failed.
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

Job = Callable[["Claim"], Outcome]


# --- the hot path's fixed statements --------------------------------------------------------
#
# The claim, heartbeats and the common completions are fixed SQL strings run with parameters
# only (the claim through ``QuerySet.raw``, the rest on Django's cursor): compiling an ORM update
# for every job cost more CPU than the statement itself (docs/performance.md, "Controller
# worker"). The templates below are rendered once per database, because the two spell the
# clock differently (``_Clock``); both use the database clock, never the worker's.
#
# Every statement that writes under a claim carries FENCE: key + token + state 'claimed' +
# a lease still unexpired on the database clock. A worker that lost its claim (paused past
# its lease, requeued by the sweep, overtaken by a claim with another token) updates zero
# rows, learns it from the row count and writes nothing more.

FENCE = ("idempotency_key = %(key)s AND claim_token = %(token)s AND state = 'claimed'"
         " AND lease_expires_at > {now}")

# Heartbeat and Claim.renew(): extend the lease of a claim that is still ours, so a
# worker cannot stretch a lease that expired or now belongs to another token.
RENEW_SQL = "UPDATE {table} SET lease_expires_at = {lease_end}, updated_at = {now} WHERE {fence}"

# Complete: terminal success, claim released. Fenced, so a late worker cannot mark
# succeeded a row that was requeued or is being run by another worker.
SUCCEED_SQL = """
UPDATE {table}
   SET state = 'succeeded', claim_token = NULL, lease_expires_at = NULL,
       completed_at = {now}, updated_at = {now}, last_attempt_at = {now},
       reason_code = %(code)s, last_attempt_code = %(code)s, result_data = %(result_data)s
 WHERE {fence}"""

# Fail (not Namespace ready work, whose Namespace fails in the fenced transaction): terminal
# failure. Fenced like SUCCEED_SQL.
FAIL_SQL = """
UPDATE {table}
   SET state = 'failed_permanent', claim_token = NULL, lease_expires_at = NULL,
       completed_at = {now}, updated_at = {now}, last_attempt_at = {now},
       reason_code = %(code)s, last_attempt_code = %(code)s, result_data = %(result_data)s
 WHERE {fence}"""

# Defer: back to queued with the attempt refunded. Fenced, or a late worker would refund an
# attempt of another worker's claim; only before the convergence deadline (zero rows past
# it: the fenced transaction turns the outcome into a failure).
DEFER_SQL = """
UPDATE {table}
   SET state = 'queued', claim_token = NULL, lease_expires_at = NULL,
       attempt_count = attempt_count - 1, available_at = {available_at},
       updated_at = {now}, last_attempt_at = {now}, last_attempt_code = %(code)s
 WHERE {fence} AND created_at > {converging_since}"""

# Retry: back to queued after a backoff, the attempt consumed. Fenced and bounded by the
# convergence deadline like DEFER_SQL.
RETRY_SQL = """
UPDATE {table}
   SET state = 'queued', claim_token = NULL, lease_expires_at = NULL,
       available_at = {available_at},
       updated_at = {now}, last_attempt_at = {now}, last_attempt_code = %(code)s
 WHERE {fence} AND created_at > {converging_since}"""

_WORK_TABLE = f'"{ControllerWork._meta.db_table}"'
_RESULT_DATA = ControllerWork._meta.get_field("result_data")


@dataclass(frozen=True)
class _Clock:
    """How one database spells "now" and "now + or - a parameter in seconds"."""

    now: str
    shifted: str  # with {sign} and {seconds} (a parameter placeholder)
    skip_locked: str  # how the claim's row lock skips rows another claim holds
    due_by: str  # the latest due time a claim takes now

    def render(self, template: str) -> str:
        def shift(sign: str, parameter: str) -> str:
            return self.shifted.format(sign=sign, seconds=f"%({parameter})s")

        return " ".join(template.format(
            table=_WORK_TABLE, fence=FENCE.format(now=self.now), now=self.now,
            lease_end=shift("+", "lease"), available_at=shift("+", "delay"),
            converging_since=shift("-", "convergence"), skip_locked=self.skip_locked, due_by=self.due_by,
            columns=_RETURNING).split())


_CLOCKS = {
    # Django's Now() on PostgreSQL: the statement's start, one value for the whole statement.
    "postgresql": _Clock(now="statement_timestamp()",
                         shifted="(statement_timestamp() {sign} {seconds} * interval '1 second')",
                         skip_locked=" FOR UPDATE SKIP LOCKED", due_by="statement_timestamp()"),
    # Django's Now() on SQLite; 'now' is fixed for the whole statement there too. Shifting
    # with arithmetic on julianday() takes the seconds as a plain numeric parameter.
    "sqlite": _Clock(now="strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now')",
                     shifted="strftime('%%Y-%%m-%%d %%H:%%M:%%f', julianday('now') {sign} {seconds} / 86400.0)",
                     skip_locked="",
                     # SQLite's clock has milliseconds, the rows Django writes microseconds: a row
                     # due within the current millisecond is due ("…:00.123" sorts before
                     # "…:00.123456" as text).
                     due_by="strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now') || '999'"),
}


@functools.cache
def statement_for(template: str, vendor: str) -> str:
    """``template`` rendered for a database vendor (cached: rendered once per process)."""
    return _CLOCKS[vendor].render(template)


def _execute(template: str, params: dict[str, Any]) -> int:
    """Run one fixed statement on this thread's connection; returns the rows it updated."""
    with connection.cursor() as cursor:
        cursor.execute(statement_for(template, connection.vendor), params)
        return int(cursor.rowcount)


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
        """Extend the lease now (before each effect). Zero rows renewed: ClaimLost."""
        self.check()
        sent = time.monotonic()
        renewed = _execute(RENEW_SQL, {"key": self.key, "token": self.token, "lease": self.lease_seconds})
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
        ~Exists(busy), state=WorkState.QUEUED, available_at__lte=Now(), attempt_count__lt=F("max_attempts"))


def claim(key: str | None = None) -> Claim | None:
    """Claim ``key`` (or the oldest due row); None when nothing is claimable now."""
    lease = settings.OCC_WORKER_LEASE_SECONDS
    for _ in range(CLAIM_RACE_RETRIES):
        token = uuid.uuid4().hex
        sent = time.monotonic()
        try:
            work = _claim_once(key, token, lease)
        except IntegrityError:
            continue  # another row of the same resource was claimed at the same moment
        except OperationalError as exc:
            if _sqlstate(exc) in RACE_SQLSTATES:
                continue
            raise
        return None if work is None else Claim(work, lease_seconds=lease, confirmed_at=sent)
    return None


def _claim_once(key: str | None, token: str, lease: float) -> ControllerWork | None:
    if connection.in_atomic_block:
        with transaction.atomic():  # a savepoint: a lost race must not break the caller's transaction
            return _claimed(CLAIM_KEY_SQL if key else CLAIM_NEXT_SQL, key, token, lease)
    # One conditional statement needs no transaction around it (and saves two round trips).
    if connection.vendor == "postgresql":
        return _claimed(CLAIM_KEY_ASYNC_SQL if key else CLAIM_NEXT_ASYNC_SQL, key, token, lease)
    return _claimed(CLAIM_KEY_SQL if key else CLAIM_NEXT_SQL, key, token, lease)


def _claimed(template: str, key: str | None, token: str, lease: float) -> ControllerWork | None:
    """Run the claim; the row it returns is a ControllerWork with the columns jobs read loaded
    and the rest deferred (the ORM's raw query applies the database's own converters)."""
    rows = ControllerWork.objects.raw(statement_for(template, connection.vendor),
                                      {"token": token, "lease": lease, "key": key})
    return next(iter(rows), None)


# The claim, one statement on either database: the oldest due row whose resource has no
# claimed row (or the row ``key``), ``queued`` → ``claimed`` with the token and a lease on the
# database clock, ``attempt_count + 1``. PostgreSQL skips rows another claim is taking (``FOR
# UPDATE SKIP LOCKED``); SQLite has one writer at a time, so the statement is atomic there as
# it stands. The partial unique index work_one_claim_per_resource settles any remaining race.
CLAIM_SQL = """
UPDATE {table}
   SET state = 'claimed', claim_token = %(token)s, attempt_count = attempt_count + 1,
       lease_expires_at = {lease_end}, updated_at = {now}
 WHERE state = 'queued' AND idempotency_key = (
       SELECT c.idempotency_key FROM {table} AS c
        WHERE c.state = 'queued' AND c.available_at <= {due_by}
          AND c.attempt_count < c.max_attempts {key_clause}
          AND NOT EXISTS (SELECT 1 FROM {table} AS o
                           WHERE o.state = 'claimed'
                             AND COALESCE(o.agent_id, o.namespace_id) = COALESCE(c.agent_id, c.namespace_id))
        ORDER BY c.available_at
        LIMIT 1{skip_locked}) {commit_clause}
RETURNING {columns}
"""
# A claim that is its own transaction on PostgreSQL commits without waiting for its WAL flush
# (``set_config`` with is_local: for this statement's transaction only). Nothing outside the
# database acts on a claim alone: every write made under it is fenced on key + token + lease,
# and a durable fenced commit makes every earlier commit durable too (the WAL is flushed in
# order). If the server crashes before the claim reaches disk, the row is simply queued again
# and the worker's next fenced write fails, as after a lost lease. Saves one fsync wait per job
# (docs/performance.md). Inside a caller's transaction the setting would outlive the claim,
# so those claims use the plain statement.
ASYNC_COMMIT = "AND set_config('synchronous_commit', 'off', true) IS NOT NULL"
KEY_CLAUSE = "AND c.idempotency_key = %(key)s"

# What a claim returns: what jobs and outcomes read, and what the claim itself set. The rest
# (timestamps of the lease and of earlier attempts, their codes and result data) stay
# deferred and load on first access. Every column returned costs the claim a little on the
# server and in the driver; all 22 cost about 40 µs a job (docs/performance.md).
CLAIM_COLUMNS = ("idempotency_key", "job", "namespace_id", "agent_id", "revision_id", "actor_id",
                 "namespace_target", "agent_target", "attempt_count", "max_attempts", "created_at", "state",
                 "claim_token", "completed_at")
_COLUMNS = {field.attname: field.column for field in ControllerWork._meta.concrete_fields}
_RETURNING = ", ".join(f'"{_COLUMNS[name]}"' for name in CLAIM_COLUMNS)


def _claim_template(key_clause: str, commit_clause: str) -> str:
    return CLAIM_SQL.replace("{key_clause}", key_clause).replace("{commit_clause}", commit_clause)


CLAIM_NEXT_SQL = _claim_template("", "")
CLAIM_KEY_SQL = _claim_template(KEY_CLAUSE, "")
CLAIM_NEXT_ASYNC_SQL = _claim_template("", ASYNC_COMMIT)
CLAIM_KEY_ASYNC_SQL = _claim_template(KEY_CLAUSE, ASYNC_COMMIT)


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
    """Exception type and code locations only: a message may carry upstream text or values."""
    frames = traceback.extract_tb(exc.__traceback__)[-5:]
    where = " < ".join(f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}:{frame.name}" for frame in reversed(frames))
    log.error("worker.error UNKNOWN_FAILURE key=%s attempt=%d error=%s at=%s", claim.key,
              claim.work.attempt_count, type(exc).__name__, where)


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
    final = _apply_in_one_statement(claim, outcome, delay)
    if final is None:
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


def _apply_in_one_statement(claim: Claim, outcome: Outcome, delay: float) -> Outcome | None:
    """The common case — no effects, no Namespace to fail — as one fenced UPDATE on the
    database clock. None when the fenced transaction must decide (effects, a Namespace, or a
    row that may be past its convergence deadline)."""
    if outcome.effects is not None:
        return None
    work = claim.work
    final = outcome
    if isinstance(outcome, Retry) and work.attempt_count >= work.max_attempts:
        final = Fail(outcome.code)
    if isinstance(final, Fail) and work.namespace_target == NamespaceTarget.READY:
        return None
    claim.check()
    statement, params = _one_statement(work, final, delay)
    if _execute(statement, {"key": claim.key, "token": claim.token} | params) == 1:
        return final
    if isinstance(final, Defer | Retry):
        return None  # lost, or past the deadline: the fenced path tells which
    claim.mark_lost()
    raise ClaimLost(claim.key)


def _one_statement(work: ControllerWork, outcome: Outcome, delay: float) -> tuple[str, dict[str, Any]]:
    """The fixed statement for ``outcome`` and its parameters (besides key and token)."""
    if isinstance(outcome, Complete):
        return SUCCEED_SQL, _terminal_params(outcome.reason_code, outcome.result_data)
    if isinstance(outcome, Fail):
        return FAIL_SQL, _terminal_params(outcome.code, outcome.result_data)
    params = {"code": _safe_code(outcome.code), "convergence": float(settings.OCC_WORKER_CONVERGENCE_SECONDS)}
    return (DEFER_SQL if isinstance(outcome, Defer) else RETRY_SQL), params | {"delay": delay}


def _terminal_params(code: str, result_data: dict[str, Any] | None) -> dict[str, Any]:
    return {"code": _safe_code(code), "result_data": _RESULT_DATA.get_db_prep_save(result_data, connection)}


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


def _transition_fields(work: ControllerWork, outcome: Outcome, db_now: datetime, *,
                       delay: float) -> dict[str, Any]:
    """Column values for ``outcome`` in the fenced transaction and the sweep; ``db_now`` is the
    database clock read under the row lock, ``delay`` the seconds until requeued work is due.
    (The one-statement path has its own fixed SQL.)"""
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
