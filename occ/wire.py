"""Wire conventions shared by every entry point: timestamps and resource names."""

from __future__ import annotations

import re
from datetime import UTC, datetime

NAME_MAX_CODE_POINTS = 200
_CONTROL = re.compile(r"[\u0000-\u001f\u007f]")


def rfc3339(value: datetime | None) -> str | None:
    """RFC 3339 UTC with milliseconds: ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def name_problem(value: str) -> str | None:
    """Why ``value`` is not a valid resource name, or None. Names are never stripped."""
    if len(value) == 0:
        return "must not be empty"
    if len(value) > NAME_MAX_CODE_POINTS:
        return f"must be at most {NAME_MAX_CODE_POINTS} characters"
    if value != value.strip():
        return "must not start or end with whitespace"
    if _CONTROL.search(value):
        return "must not contain control characters"
    return None
