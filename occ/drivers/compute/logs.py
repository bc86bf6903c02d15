"""Reading a gateway's log for ``ComputeDriver.read_logs``, filtered of secrets by construction.

``with_redactor`` reads every secret value a driver was handed (through the SecretDriver's
``with_value``, held for that one call) into a ``Redactor``; ``read_log_file`` reads a bounded
window of an append-only log file at line boundaries and passes every byte it returns through
the redactor first, so no code path returns an unredacted line. Shared by the ``local`` and
``fake`` drivers; the Kubernetes driver redacts the Pod log API's answer with the same class.

Why a window only ever starts and ends at a line boundary: a secret split across two answers
(the end of one page, the start of the next) would match in neither. A window that has to start
inside a line (a tail, or a follower that fell behind) drops the rest of that line; a line longer
than the whole window is dropped entirely (its cursor says "mid-line" until its end is passed),
and a long line is cut for display only after it was redacted whole.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from occ.drivers.compute.base import (
    LOG_LINE_CUT,
    LOG_MAX_LINE_CHARS,
    LOG_REDACTED,
    ComputeError,
    LogPage,
    SecretReference,
)
from occ.drivers.secrets import SecretDriverError, SecretValueMissing, get_secret_driver

T = TypeVar("T")

# ANSI escape sequences (colours, cursor moves) and every other control character but tab.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# A line of a multi-line secret (a PEM key) long enough to be redacted on its own.
MIN_SECRET_PART = 8
# The smallest window worth reading: a whole cut line plus any secret that overlaps its end.
MIN_WINDOW_BYTES = 64 * 1024
CURSOR_VERSION = "v1"


class Redactor:
    """Replaces every given secret value, and the forms a program is likely to print it in
    (JSON-escaped, percent-encoded; each line of a multi-line value), with ``LOG_REDACTED``."""

    def __init__(self, values: Iterable[str]) -> None:
        self._values = tuple(value for value in values if value)
        forms: set[str] = set()
        for value in self._values:
            forms.update({value, json.dumps(value)[1:-1], quote(value, safe="")})
            if "\n" in value:
                forms.update(part.strip() for part in value.splitlines() if len(part.strip()) >= MIN_SECRET_PART)
        ordered = sorted((f for f in forms if f), key=len, reverse=True)
        self.longest = len(ordered[0].encode()) if ordered else 0
        self._text = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._bytes = re.compile(b"|".join(re.escape(f.encode()) for f in ordered)) if ordered else None

    def fingerprints(self, key: bytes) -> frozenset[str]:
        """Keyed fingerprints of the values this redactor knows (see ``fingerprint``)."""
        return frozenset(fingerprint(key, value) for value in self._values)

    def redact_bytes(self, data: bytes) -> bytes:
        return self._bytes.sub(LOG_REDACTED.encode(), data) if self._bytes else data

    def redact_text(self, text: str) -> str:
        return self._text.sub(LOG_REDACTED, text) if self._text else text

    def line(self, raw: bytes) -> str:
        """One displayable line: redacted as bytes, decoded, stripped of escapes and control
        characters, redacted again as text (a value an escape sequence had split), then cut."""
        text = self.redact_bytes(raw).decode("utf-8", errors="replace")
        text = self.redact_text(_CONTROLS.sub("", _ESCAPES.sub("", text)).rstrip("\r"))
        if len(text) > LOG_MAX_LINE_CHARS:
            text = text[:LOG_MAX_LINE_CHARS] + LOG_LINE_CUT
        return text


def fingerprint(key: bytes, value: str) -> str:
    """An HMAC of a secret value under a key the driver keeps beside the log: recorded when the
    value is delivered, compared when the log is read, to tell whether a reader still holds every
    value a stretch of the log may contain (a replaced or deleted Secret's old value is gone)."""
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()


def with_redactor(secrets: Sequence[SecretReference], consumer: Callable[[Redactor, frozenset[str]], T], *,
                  extra: Iterable[str] = ()) -> T:
    """Call ``consumer`` with a Redactor of every value in ``secrets`` (plus ``extra`` values the
    driver holds itself) and the ids of the Secrets whose value is gone (nothing to redact with).
    Each value is read by ``with_value`` and held only for the duration of the call."""
    unique = list({reference.secret_id: reference for reference in secrets}.values())
    fixed = [value for value in extra if value]

    def step(index: int, values: list[str], missing: frozenset[str]) -> T:
        if index == len(unique):
            return consumer(Redactor([*fixed, *values]), missing)
        reference = unique[index]
        try:
            return get_secret_driver(reference.driver_id).with_value(
                reference.backend_name, lambda value: step(index + 1, [*values, value], missing))
        except SecretValueMissing:
            return step(index + 1, values, missing | {reference.secret_id})

    try:
        return step(0, [], frozenset())
    except SecretDriverError:
        raise ComputeError("SECRET_STORE_UNAVAILABLE", retryable=True) from None


def _parse_cursor(cursor: str | None) -> tuple[int, int, bool] | None:
    if not cursor:
        return None
    parts = cursor.split(":")
    if len(parts) != 4 or parts[0] != CURSOR_VERSION or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return int(parts[1]), int(parts[2]), parts[3] == "m"


def make_cursor(identity: int, offset: int, *, mid_line: bool = False) -> str:
    return f"{CURSOR_VERSION}:{identity}:{offset}:{'m' if mid_line else 'l'}"


def _after_newline(data: bytes) -> tuple[bytes, int]:
    """``data`` from just after its first newline, and how many bytes were dropped."""
    index = data.find(b"\n")
    return (b"", len(data)) if index < 0 else (data[index + 1:], index + 1)


def read_log_file(path: Path, *, redactor: Redactor, cursor: str | None, max_lines: int,
                  max_bytes: int, vouch: Callable[[int], bool] | None = None) -> LogPage:
    """A bounded page of the append-only log at ``path`` (see ``ComputeDriver.read_logs``).

    The cursor names the file (inode) and a byte offset; a cursor for another file, or past its
    end (replaced or truncated), gives a fresh tail with ``reset``. ``vouch(offset)`` says whether
    the line starting at that byte offset may be returned (else it is counted as withheld). An
    unfinished last line is left for the next page.
    """
    max_bytes = max(int(max_bytes), MIN_WINDOW_BYTES)
    max_lines = max(int(max_lines), 1)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        parsed = _parse_cursor(cursor)
        return LogPage(lines=(), cursor=make_cursor(0, 0), reset=parsed is not None and parsed[0] != 0)
    try:
        stat = os.fstat(fd)
        size, identity = stat.st_size, stat.st_ino
        parsed = _parse_cursor(cursor)
        if parsed is not None and parsed[0] == 0:  # the log did not exist yet: it starts now
            parsed = (identity, 0, False)
        reset = cursor is not None and (parsed is None or parsed[0] != identity or parsed[1] > size)
        follow = parsed is not None and not reset
        skipped = False
        if follow:
            assert parsed is not None
            begin, mid_line = parsed[1], parsed[2]
            if size - begin > max_bytes:
                begin, mid_line, skipped = size - max_bytes, True, True
        else:
            begin = max(0, size - max_bytes)
            mid_line = begin > 0
        data = os.pread(fd, size - begin, begin) if size > begin else b""
    finally:
        os.close(fd)
    still_mid_line = False
    if mid_line:
        still_mid_line = b"\n" not in data
        data, dropped = _after_newline(data)
        begin += dropped
    end = begin
    raws: list[tuple[int, bytes]] = []
    position = begin
    last_newline = data.rfind(b"\n")
    if last_newline >= 0:
        for raw in data[:last_newline].split(b"\n"):
            raws.append((position, raw))
            position += len(raw) + 1
        end = begin + last_newline + 1
    if len(raws) > max_lines:
        raws, skipped = raws[-max_lines:], skipped or follow
    lines, withheld = [], 0
    for offset, raw in raws:
        if vouch is not None and not vouch(offset):
            withheld += 1
            continue
        lines.append(redactor.line(raw))
    return LogPage(lines=tuple(lines), cursor=make_cursor(identity, end, mid_line=still_mid_line),
                   skipped=skipped, reset=reset, withheld=withheld)
