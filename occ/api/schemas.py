"""Response schemas and the envelope. Request schemas are the typed commands (occ.commands)."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from occ.errors import ERROR_CODES, MESSAGE_LIMIT, DetailCode


class ResponseSchema(Schema):
    model_config = ConfigDict(extra="forbid")


class Meta(ResponseSchema):
    requestId: str


def envelope_of(model: Any, name: str) -> type[Schema]:
    """``{data: <model>, meta}`` for the OpenAPI document."""
    return type(name, (ResponseSchema,), {"__annotations__": {"data": model, "meta": Meta}})


DETAIL_CODES = tuple(value for name, value in vars(DetailCode).items() if not name.startswith("_"))
# Every operation may answer these (the boundary, authentication, authorization, a missing
# resource, a conflict, a request line over the web server's limit, a refused outside service, a
# dependency down); a body adds 413 and 415.
ERROR_STATUSES = (400, 401, 403, 404, 405, 409, 414, 429, 501, 503)
BODY_ERROR_STATUSES = (413, 415)


class ErrorDetail(ResponseSchema):
    code: Literal[DETAIL_CODES]  # type: ignore[valid-type]
    path: str = Field(description="A JSON pointer into the request body.")


class ErrorBody(ResponseSchema):
    code: Literal[ERROR_CODES]  # type: ignore[valid-type]
    message: str = Field(max_length=MESSAGE_LIMIT)
    details: list[ErrorDetail] | None = Field(default=None, max_length=32)


class ErrorEnvelope(ResponseSchema):
    error: ErrorBody
    meta: Meta
