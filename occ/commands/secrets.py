"""Secret commands. A value goes in and never comes out."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from occ.commands.base import Command, problem
from occ.commands.common import Name
from occ.errors import DetailCode

VALUE_MAX_BYTES = 65_536


def secret_value_problem(value: str) -> tuple[str, str] | None:
    """``(detail code, message)`` when ``value`` cannot be a Secret value: it must be non-empty
    UTF-8 text without NUL, at most 65,536 bytes."""
    if value == "":
        return DetailCode.INVALID_VALUE, "The value must not be empty."
    if "\x00" in value:
        return DetailCode.INVALID_VALUE, "The value must not contain NUL characters."
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return DetailCode.INVALID_VALUE, "The value must be valid UTF-8 text."
    if size > VALUE_MAX_BYTES:
        return DetailCode.TOO_LONG, f"The value must be at most {VALUE_MAX_BYTES} bytes of UTF-8 text."
    return None


def _check_value(value: str) -> str:
    found = secret_value_problem(value)
    if found is not None:
        raise problem(*found)
    return value


SecretValue = Annotated[str, AfterValidator(_check_value),
                        Field(json_schema_extra={"writeOnly": True, "format": "password"})]


class SecretCreate(Command):
    name: Name
    value: SecretValue


class SecretValueUpdate(Command):
    value: SecretValue
