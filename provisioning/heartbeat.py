"""Keeping a claim alive while its job runs.

A thread with its own database connection renews the lease every
``OCC_WORKER_HEARTBEAT_SECONDS``, so a driver call that blocks the job's thread never
starves renewal. It never decides on its own that the claim is alive: a renewal that got
no answer extends nothing, and once the last confirmed lease has passed ``Claim.check()``
raises. When the database says the claim is gone (zero rows renewed) it marks the claim
lost and stops.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from django.db import DatabaseError, connections

from provisioning.outcomes import ClaimLost

if TYPE_CHECKING:
    from provisioning.queue import Claim

log = logging.getLogger("provisioning.worker")


class Heartbeat:
    """Renews ``claim`` in the background between ``start()`` and ``stop()``."""

    def __init__(self, claim: Claim, *, interval_seconds: float) -> None:
        self.claim = claim
        self.interval_seconds = interval_seconds
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {claim.key}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing. Waits at most one lease for a renewal in flight (it may block on the
        row lock of the job's own fenced transaction), then leaves the daemon thread behind."""
        self._stopping.set()
        self._thread.join(timeout=self.claim.lease_seconds)

    def __enter__(self) -> Heartbeat:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            while not self._stopping.wait(self.interval_seconds):
                try:
                    self.claim.renew()
                except ClaimLost:
                    log.warning("worker.heartbeat claim lost key=%s", self.claim.key)
                    return
                except DatabaseError as exc:
                    # No answer: the lease is not extended; check() fails once it passes.
                    log.warning("worker.heartbeat renewal failed key=%s error=%s", self.claim.key,
                                type(exc).__name__)
                    connections.close_all()
        finally:
            # This thread's own connections (Django keeps one per thread): close them.
            connections.close_all()
