"""The one timestamp format of the JSON documents OCC writes: API responses and stored progress."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(value: datetime | None) -> str | None:
    """RFC 3339 UTC with milliseconds: ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
