"""Per-request context that services read without threading it through every call."""

from __future__ import annotations

from contextvars import ContextVar

current_request_id: ContextVar[str | None] = ContextVar("occ_request_id", default=None)
