"""Request schemas are closed and strict: unknown fields are rejected, nothing is coerced."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Schema
from pydantic import ConfigDict, StringConstraints


class RequestSchema(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)


class ResponseSchema(Schema):
    model_config = ConfigDict(extra="forbid")


Name = Annotated[str, StringConstraints(max_length=800)]


class Meta(ResponseSchema):
    requestId: str


def envelope_of(model: Any, name: str) -> type[Schema]:
    """``{data: <model>, meta}`` for the OpenAPI document."""
    return type(name, (ResponseSchema,), {"__annotations__": {"data": model, "meta": Meta}})
