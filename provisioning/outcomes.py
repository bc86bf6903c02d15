"""What a job tells the queue when it returns, and the errors that end a claim.

A job never writes the work row itself: it returns one of these and the queue applies it
with the claim fence (key + token + unexpired lease). ``effects`` run inside that same
fenced transaction, so a resource change (a Namespace becoming ready, an audit event)
commits together with the completion or not at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Effects = Callable[[], None]


class ClaimLost(Exception):
    """The lease expired or another worker holds the row: stop writing at once."""


@dataclass(frozen=True)
class Complete:
    """Terminal success (state ``succeeded``) with a reason code such as
    ``NAMESPACE_READY``, ``REVISION_ACTIVATED``, ``REVISION_SUPERSEDED``.

    ``next_work``: keys of work the job queued for its own resource (un-nudged, since this
    claim kept the resource busy); the queue nudges them once the completion is written."""

    reason_code: str
    result_data: dict[str, Any] | None = None
    effects: Effects | None = None
    next_work: tuple[str, ...] = ()


@dataclass(frozen=True)
class Defer:
    """Pending convergence: back to ``queued``, attempt refunded, short backoff."""

    code: str = "RECONCILIATION_PENDING"
    delay_seconds: float | None = None
    effects: Effects | None = None


@dataclass(frozen=True)
class Retry:
    """A dependency failure: back to ``queued``, attempt consumed, jittered backoff."""

    code: str = "DEPENDENCY_UNAVAILABLE"
    effects: Effects | None = None


@dataclass(frozen=True)
class Fail:
    """Permanent failure (state ``failed_permanent``)."""

    code: str
    result_data: dict[str, Any] | None = None
    effects: Effects | None = None


Outcome = Complete | Defer | Retry | Fail
