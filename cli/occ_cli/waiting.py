"""Waiting for OCC's work to finish: poll, show each change of state, stop at a bound.

A wait never decides anything itself: it reads what OCC answers and returns the last answer
once ``done`` says so. Running out of time is ``Exit.UNAVAILABLE`` (the work goes on; the
command can be run again, or the resource read later).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from occ_cli import output
from occ_cli.client import CliError, Exit

T = TypeVar("T")
DEFAULT_INTERVAL_SECONDS = 1.0


def wait_for(poll: Callable[[], T], *, done: Callable[[T], bool], describe: Callable[[T], str], what: str,
             timeout: float, interval: float = DEFAULT_INTERVAL_SECONDS,
             sleep: Callable[[float], Any] = time.sleep, clock: Callable[[], float] = time.monotonic) -> T:
    """Poll until ``done(answer)``; print ``describe(answer)`` each time it changes (stderr)."""
    deadline = clock() + timeout
    last = None
    with output.stderr.status(f"waiting for {what}…") as status:
        while True:
            answer = poll()
            text = describe(answer)
            if text != last:
                output.note(f"{what}: {text}")
                status.update(f"waiting for {what}: {text}")
                last = text
            if done(answer):
                return answer
            if clock() >= deadline:
                raise CliError(f"Gave up waiting for {what} after {timeout:.0f} s (last: {text}). The work goes on "
                               "in OCC; run the command again or read the resource later.", Exit.UNAVAILABLE,
                               code="WAIT_TIMEOUT")
            sleep(interval)
