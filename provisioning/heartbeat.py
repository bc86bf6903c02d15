"""Keeping claims alive while their jobs run.

One renewer thread per process, with its own database connection, renews the lease of every
running claim every ``OCC_WORKER_HEARTBEAT_SECONDS``, so a driver call that blocks a job's
thread never starves renewal. One long-lived thread (rather than one per job) costs no thread
start and no new database connection per job: on the queue's no-op benchmark that was a
sixth of the time per job (docs/performance.md).

It never decides on its own that a claim is alive: a renewal that got no answer extends
nothing, and once the last confirmed lease has passed ``Claim.check()`` raises. When the
database says the claim is gone (zero rows renewed) it marks the claim lost and drops it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Protocol

from django.conf import settings
from django.db import DatabaseError, connections

from provisioning.outcomes import ClaimLost

log = logging.getLogger("provisioning.worker")


class Renewable(Protocol):
    """What a heartbeat needs of a claim (provisioning.queue.Claim)."""

    key: str
    lease_seconds: float

    def renew(self) -> None: ...


class Heartbeat:
    """Renews ``claim`` in the background between ``start()`` and ``stop()``."""

    def __init__(self, claim: Renewable, *, interval_seconds: float) -> None:
        self.claim = claim
        self.interval_seconds = interval_seconds
        self.next_at = 0.0
        self.active = False
        # Held while a renewal of this claim is in flight; stop() waits for it.
        self.renewing = threading.Lock()

    def start(self) -> None:
        self.next_at = time.monotonic() + self.interval_seconds
        self.active = True
        _renewer().add(self)

    def stop(self) -> None:
        """Stop renewing. Waits at most one lease for a renewal in flight (it may block on the
        row lock of the job's own fenced transaction), then lets it finish on its own."""
        self.active = False
        _renewer().remove(self)
        if self.renewing.acquire(timeout=self.claim.lease_seconds):
            self.renewing.release()

    def __enter__(self) -> Heartbeat:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def due(self, now: float) -> bool:
        return self.active and now >= self.next_at

    def renew_if_due(self, now: float) -> bool:
        """Renew once if due; False once this heartbeat is finished (stopped or claim lost)."""
        if not self.active:
            return False
        if now < self.next_at:
            return True
        with self.renewing:
            if not self.active:
                return False
            self.next_at = now + self.interval_seconds
            try:
                self.claim.renew()
            except ClaimLost:
                log.warning("worker.heartbeat claim lost key=%s", self.claim.key)
                return False
            except DatabaseError as exc:
                # No answer: the lease is not extended; check() fails once it passes.
                log.warning("worker.heartbeat renewal failed key=%s error=%s", self.claim.key, type(exc).__name__)
                connections.close_all()
        return True


class _Renewer:
    """The process's renewer thread and the heartbeats it serves."""

    TICK_SECONDS = 0.05

    def __init__(self) -> None:
        self.sleep_until = 0.0
        self.wake = threading.Event()
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.heartbeats: set[Heartbeat] = set()
        self.connected = False  # whether this thread may hold a database connection now
        self.thread = threading.Thread(target=self._run, name="heartbeat renewer", daemon=True)
        self.thread.start()

    def add(self, heartbeat: Heartbeat) -> None:
        # Wake the thread only if it would sleep past this claim's first renewal: with the
        # usual settings it never does, so a short job costs no thread switch.
        with self.lock:
            self.heartbeats.add(heartbeat)
            early = heartbeat.next_at < self.sleep_until
        if early:
            self.wake.set()

    def remove(self, heartbeat: Heartbeat) -> None:
        with self.lock:
            self.heartbeats.discard(heartbeat)

    def _run(self) -> None:
        while True:
            with self.lock:
                current = list(self.heartbeats)
            now = time.monotonic()
            for heartbeat in current:
                self.connected = self.connected or heartbeat.due(now)
                if not heartbeat.renew_if_due(now):
                    self.remove(heartbeat)
            with self.lock:
                due = [h.next_at for h in self.heartbeats]
            if not due and self.connected:
                # Idle: give the connection back rather than hold it until the next long job
                # (and a test database cannot be dropped while a session is connected).
                connections.close_all()
                self.connected = False
            idle_wait = settings.OCC_WORKER_HEARTBEAT_SECONDS / 2
            wait = max(self.TICK_SECONDS, min(min(due) - time.monotonic() if due else idle_wait, idle_wait))
            with self.lock:
                self.sleep_until = time.monotonic() + wait
            self.wake.wait(timeout=wait)
            self.wake.clear()


_instance: _Renewer | None = None
_instance_lock = threading.Lock()


def _renewer() -> _Renewer:
    """This process's renewer, started on first use (and again in a forked child)."""
    global _instance
    with _instance_lock:
        if _instance is None or _instance.pid != os.getpid() or not _instance.thread.is_alive():
            _instance = _Renewer()
        return _instance
