"""What a gateway's ``sessions.usage`` method says about one UTC day, per model (runtime 2026.9).

The runtime prices every assistant message of its transcripts with the Configuration's model
prices and answers ``sessions.usage`` (scope ``operator.read``) with ``aggregates.byModel``:
per provider and model, ``totals`` of tokens (``input``, ``output``, ``cacheRead``,
``cacheWrite``) and ``totalCost`` in USD over the asked range. Asked for one day
(``startDate == endDate``, ``mode: "utc"``), that is the day's figure per model, recomputed
from the transcripts on every call: cumulative for the day, never a delta. ``usage.cost`` has
the same per-day totals but no per-model split, so OCC asks ``sessions.usage``.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

METHOD = "sessions.usage"
UNKNOWN = "unknown"


def usage_params(day: date) -> dict[str, Any]:
    """One UTC day, every agent of the gateway; one session row is enough (the aggregates
    cover every session of the range, whatever the limit)."""
    text = day.isoformat()
    return {"startDate": text, "endDate": text, "mode": "utc", "agentScope": "all", "limit": 1}


class _Totals(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    input: int = Field(0, ge=0)
    output: int = Field(0, ge=0)
    cacheRead: int = Field(0, ge=0)
    cacheWrite: int = Field(0, ge=0)
    totalCost: Decimal = Field(Decimal(0), ge=0)


class _ModelUsage(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    provider: str | None = None
    model: str | None = None
    totals: _Totals = _Totals()


class _Aggregates(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    byModel: list[_ModelUsage] = []


class _SessionsUsage(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    aggregates: _Aggregates = _Aggregates()


class ModelDay(BaseModel):
    """One model's usage on one day, as the gateway computed it."""

    model_config = ConfigDict(frozen=True)
    day: date
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: Decimal


class UsageShapeError(ValueError):
    """The answer is not the shape the runtime documents."""


def model_days(day: date, payload: object) -> list[ModelDay]:
    """The per-model figures of ``payload`` (a ``sessions.usage`` answer for ``day``); the same
    provider and model twice (the runtime keys them apart by letter case) are added."""
    try:
        usage = _SessionsUsage.model_validate(payload)
    except ValidationError:
        raise UsageShapeError("sessions.usage answered an unexpected shape") from None
    merged: dict[tuple[str, str], ModelDay] = {}
    for entry in usage.aggregates.byModel:
        key = ((entry.provider or UNKNOWN)[:200], (entry.model or UNKNOWN)[:200])
        totals, seen = entry.totals, merged.get(key)
        merged[key] = ModelDay(
            day=day, provider=key[0], model=key[1],
            input_tokens=totals.input + (seen.input_tokens if seen else 0),
            output_tokens=totals.output + (seen.output_tokens if seen else 0),
            cache_read_tokens=totals.cacheRead + (seen.cache_read_tokens if seen else 0),
            cache_write_tokens=totals.cacheWrite + (seen.cache_write_tokens if seen else 0),
            cost=totals.totalCost + (seen.cost if seen else Decimal(0)))
    return list(merged.values())
