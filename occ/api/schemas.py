"""Response schemas and the envelope. Request schemas are the typed commands (occ.commands)."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import ConfigDict


class ResponseSchema(Schema):
    model_config = ConfigDict(extra="forbid")


class Meta(ResponseSchema):
    requestId: str


def envelope_of(model: Any, name: str) -> type[Schema]:
    """``{data: <model>, meta}`` for the OpenAPI document."""
    return type(name, (ResponseSchema,), {"__annotations__": {"data": model, "meta": Meta}})
