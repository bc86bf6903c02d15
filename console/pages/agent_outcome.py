"""What happens to a write on the Agent page: its outcome, and the page's writes after one
nobody can vouch for.

``attempt`` makes one service call and classifies a failure: a known rejection (a documented
code; a 403 is audited) or an unknown outcome (an uncertain error or a database error). An
unknown outcome is never repeated by the page: it marks the Agent in the session and every write
button renders disabled until the person presses Refresh (``?reread=1``), which reads the Agent
back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.db import DatabaseError

from console.common import ConsoleRequest, current, error_title, is_known_failure, known_failure_message
from occ.errors import OccError, UnknownOutcome
from occ.services.audit import audit_denial

logger = logging.getLogger(__name__)

T = TypeVar("T")

OUTCOME_UNKNOWN_KEY = "occ.console.agent-outcome-unknown"


def mark_outcome_unknown(request: ConsoleRequest, agent_id: str) -> None:
    marked = set(request.session.get(OUTCOME_UNKNOWN_KEY, []))
    request.session[OUTCOME_UNKNOWN_KEY] = sorted(marked | {agent_id})
    # Saved now: SessionMiddleware does not save the session of a 5xx answer, and this one is.
    try:
        request.session.save()
    except DatabaseError:
        logger.warning("could not remember an unknown outcome for agent %s", agent_id)


def clear_outcome_unknown(request: ConsoleRequest, agent_id: str) -> None:
    marked = set(request.session.get(OUTCOME_UNKNOWN_KEY, []))
    if agent_id in marked:
        request.session[OUTCOME_UNKNOWN_KEY] = sorted(marked - {agent_id})


def reread(request: ConsoleRequest, agent_id: str) -> None:
    """Refresh (``?reread=1``) is the read-back that re-enables writes after an unknown outcome."""
    if request.GET.get("reread") == "1":
        clear_outcome_unknown(request, agent_id)


# --- writes: one service call, its outcome classified ------------------------------------------

@dataclass(frozen=True)
class Failure:
    """A write that did not succeed: a known rejection, or an outcome nobody can vouch for."""

    error: OccError
    unknown: bool
    request_id: str

    @property
    def status(self) -> int:
        return 503 if self.unknown else self.error.status

    @property
    def title(self) -> str:
        return "Outcome unknown" if self.unknown else error_title(self.error)

    @property
    def message(self) -> str:
        if self.unknown:
            return ("OCC could not confirm whether this change was recorded. It was not repeated. "
                    "Press Refresh to read the current state before trying again.")
        return known_failure_message(self.error)


def audit_refusal(request: ConsoleRequest, exc: OccError) -> None:
    denial = getattr(exc, "denial", None)
    if denial is not None:
        audit_denial(denial, actor=current(request).actor)


def attempt(request: ConsoleRequest, agent_id: str, write: Callable[[], T]) -> tuple[T | None, Failure | None]:
    request_id = getattr(request, "occ_request_id", "")
    try:
        return write(), None
    except OccError as exc:
        if is_known_failure(exc):
            audit_refusal(request, exc)
            return None, Failure(exc, unknown=False, request_id=request_id)
        failure = Failure(exc, unknown=True, request_id=request_id)
    except DatabaseError:
        logger.exception("console agent write failed in the database")
        failure = Failure(UnknownOutcome(), unknown=True, request_id=request_id)
    mark_outcome_unknown(request, agent_id)
    return None, failure
