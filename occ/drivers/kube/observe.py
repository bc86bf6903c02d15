"""Observing a Kubernetes gateway for the console: its runtime state from the Deployment and its
Pod, and its log from the Pod log API (``GET .../pods/<name>/log``, which the API server proxies
to the Pod's kubelet), redacted with ``occ.drivers.compute.logs.Redactor`` like every driver's.

State: no Deployment, or one scaled to zero, is ``stopped``; a gateway container waiting after an
exit (``CrashLoopBackOff`` and the like) or terminated is ``crashed``, since the exit; a Pod whose
``Ready`` condition is true is ``running``, since that transition; anything else that should run
is ``starting``. ``restarts`` is the container's ``restartCount`` (a deploy or a start makes a new
Pod, which counts from zero). Memory and CPU are ``None`` (unknown): they would come from the
metrics API, which a cluster need not serve, and a number is never made up.

The log cursor ``k1:<pod uid>:<last timestamp, ns>:<lines already returned at it>`` asks the
kubelet with ``timestamps=true``: a follow asks for the lines since that timestamp (to the
second, with a margin for clock skew: ``sinceSeconds``; the client has no ``sinceTime``) and
drops what it returned already. Another Pod (a new revision, a restart by a deploy) is a fresh
tail with ``reset``; no Pod is an empty page whose cursor reads the next Pod from its start.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kubernetes import client

from occ.drivers.compute.base import LogPage, RuntimeObservation
from occ.drivers.compute.logs import Redactor

CONTAINER = "gateway"
CURSOR_VERSION = "k1"
# sinceSeconds is relative to the kubelet's clock: ask this much further back and drop by stamp.
SKEW_MARGIN_SECONDS = 30
# Each line's timestamp prefix, at most (RFC 3339 with nanoseconds and a space).
STAMP_BYTES = 32
CRASH_REASONS = frozenset({"CrashLoopBackOff", "Error", "RunContainerError", "CreateContainerError",
                           "CreateContainerConfigError", "ImagePullBackOff", "ErrImagePull", "OOMKilled"})


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def pick_pod(pods: Sequence[client.V1Pod], revision_id: str | None, revision_label: str) -> client.V1Pod | None:
    """The gateway Pod to look at: a live one of the serving revision, else the newest live one."""
    live = [pod for pod in pods if pod.metadata.deletion_timestamp is None]
    if not live:
        return None
    serving = [pod for pod in live if (pod.metadata.labels or {}).get(revision_label) == revision_id]
    candidates = serving or live
    return max(candidates, key=lambda pod: _utc(pod.metadata.creation_timestamp) or datetime.min.replace(tzinfo=UTC))


def runtime_state(*, now: datetime, replicas: int, revision_id: str | None, pod: client.V1Pod | None,
                  revision_label: str) -> RuntimeObservation:
    seen = RuntimeObservation(state="stopped", observed_at=now, revision_id=revision_id)
    if replicas < 1:
        return seen
    if pod is None:
        return RuntimeObservation(state="starting", observed_at=now, revision_id=revision_id)
    revision_id = (pod.metadata.labels or {}).get(revision_label) or revision_id
    status = pod.status or client.V1PodStatus()
    container = next((c for c in (status.container_statuses or []) if c.name == CONTAINER), None)
    restarts = int(container.restart_count or 0) if container is not None else 0
    base = RuntimeObservation(state="starting", observed_at=now, revision_id=revision_id, restarts=restarts)
    if container is not None and container.state is not None:
        waiting, terminated = container.state.waiting, container.state.terminated
        last = container.last_state.terminated if container.last_state is not None else None
        if terminated is not None or (waiting is not None and (waiting.reason in CRASH_REASONS or last is not None)):
            ended = (terminated.finished_at if terminated is not None else None) or (last.finished_at if last else None)
            return RuntimeObservation(state="crashed", observed_at=now, since=_utc(ended), revision_id=revision_id,
                                      restarts=restarts)
    if status.phase in ("Failed", "Succeeded"):
        return RuntimeObservation(state="crashed", observed_at=now, revision_id=revision_id, restarts=restarts)
    ready = next((c for c in (status.conditions or []) if c.type == "Ready"), None)
    if ready is not None and ready.status == "True":
        return RuntimeObservation(state="running", observed_at=now, since=_utc(ready.last_transition_time),
                                  revision_id=revision_id, restarts=restarts)
    running = container.state.running if container is not None and container.state is not None else None
    started = (running.started_at if running is not None else None) or status.start_time
    return RuntimeObservation(state=base.state, observed_at=now, since=_utc(started), revision_id=revision_id,
                              restarts=restarts)


# --- logs -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cursor:
    pod_uid: str  # "" : no Pod was there; the next one is read from its start
    stamp: int  # nanoseconds since the epoch of the last line returned (0: none)
    at_stamp: int  # lines with exactly that stamp already returned


def parse_cursor(cursor: str | None) -> Cursor | None:
    if not cursor:
        return None
    parts = cursor.split(":")
    if len(parts) != 4 or parts[0] != CURSOR_VERSION or not parts[2].isdigit() or not parts[3].isdigit():
        return None
    return Cursor(parts[1], int(parts[2]), int(parts[3]))


def make_cursor(position: Cursor) -> str:
    return f"{CURSOR_VERSION}:{position.pod_uid}:{position.stamp}:{position.at_stamp}"


def parse_stamp(text: bytes) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 timestamp as the kubelet writes it."""
    try:
        value = text.decode("ascii")
        whole, _, rest = value.partition(".")
        if rest:
            fraction, zone = rest[:-1], rest[-1]
        else:
            whole, fraction, zone = value[:-1], "", value[-1]
        if zone != "Z" or not (fraction.isdigit() or fraction == ""):
            return None
        seconds = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    except (UnicodeDecodeError, ValueError):
        return None
    return int(seconds) * 1_000_000_000 + int(fraction.ljust(9, "0")[:9] or "0")


def request_options(position: Cursor | None, *, max_lines: int, max_bytes: int) -> dict[str, int]:
    """The Pod log API's query for a tail (no position) or a follow from ``position``."""
    tail = max_lines + 1 + (position.at_stamp if position is not None else 0)
    options = {"tail_lines": tail, "limit_bytes": max_bytes + tail * STAMP_BYTES}
    if position is not None and position.stamp:
        behind = time.time() - position.stamp / 1_000_000_000
        options["since_seconds"] = max(1, math.ceil(behind)) + SKEW_MARGIN_SECONDS
    return options


def split_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(stamp, text) of each complete line; an unfinished last one (cut by ``limitBytes``) is
    left for the next page, a line without a readable stamp is dropped."""
    end = data.rfind(b"\n")
    found = []
    for raw in data[:end].split(b"\n") if end >= 0 else ():
        stamp_text, _, text = raw.partition(b" ")
        stamp = parse_stamp(stamp_text)
        if stamp is not None:
            found.append((stamp, text))
    return found


def page(*, pod_uid: str, data: bytes, position: Cursor | None, reset: bool, max_lines: int, requested_tail: int,
         redactor: Redactor, withhold: bool) -> LogPage:
    lines = split_lines(data)
    follow = position is not None
    if follow:
        assert position is not None
        fresh, equal = [], 0
        for stamp, text in lines:
            if stamp < position.stamp:
                continue
            if stamp == position.stamp and equal < position.at_stamp:
                equal += 1
                continue
            fresh.append((stamp, text))
        # The kubelet's tail cut lines we had not seen yet (the window's first is newer).
        skipped = len(lines) >= requested_tail and bool(lines) and lines[0][0] > position.stamp
    else:
        fresh, skipped = lines, False
    if len(fresh) > max_lines:
        fresh, skipped = fresh[-max_lines:], skipped or follow
    if fresh:
        last = fresh[-1][0]
        carried = position.at_stamp if position is not None and position.stamp == last else 0
        at_stamp = carried + sum(1 for stamp, _ in fresh if stamp == last)
        cursor = Cursor(pod_uid, last, at_stamp)
    else:
        cursor = position if position is not None else Cursor(pod_uid, 0, 0)
        cursor = Cursor(pod_uid, cursor.stamp, cursor.at_stamp)
    if withhold:
        return LogPage(lines=(), cursor=make_cursor(cursor), skipped=skipped, reset=reset, withheld=len(fresh))
    return LogPage(lines=tuple(redactor.line(text) for _, text in fresh), cursor=make_cursor(cursor),
                   skipped=skipped, reset=reset)
