"""Service API key commands. The plaintext key is made by the service, never sent in."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from occ.commands.base import Command, problem, refusal
from occ.commands.common import is_unicode_text, name_problem
from occ.errors import DetailCode, InvalidRequest

KEY_NAME_MAX = 32
EXPIRES_IN_MIN = 86_400  # 1 day
EXPIRES_IN_MAX = 31_536_000  # 365 days
EXPIRES_IN_DEFAULT = 30 * 86_400


def _check_key_name(value: str) -> str:
    if len(value) > KEY_NAME_MAX:
        raise problem(DetailCode.TOO_LONG, f"Key name must be at most {KEY_NAME_MAX} characters.")
    found = name_problem(value)
    if found is not None:
        raise problem(DetailCode.INVALID_FORMAT, f"Key name {found}.")
    if not is_unicode_text(value):
        raise problem(DetailCode.INVALID_VALUE, "Key name must be valid Unicode text.")
    return value


def _check_expires_in(value: int) -> int:
    if not EXPIRES_IN_MIN <= value <= EXPIRES_IN_MAX:
        raise problem(DetailCode.INVALID_VALUE,
                      "expiresIn must be between 86400 (1 day) and 31536000 (365 days) seconds.")
    return value


# 1..32 code points, no surrounding whitespace, no control characters.
KeyName = Annotated[str, AfterValidator(_check_key_name),
                    Field(json_schema_extra={"minLength": 1, "maxLength": KEY_NAME_MAX})]
ExpiresIn = Annotated[int, AfterValidator(_check_expires_in),
                      Field(json_schema_extra={"minimum": EXPIRES_IN_MIN, "maximum": EXPIRES_IN_MAX})]


class ServiceKeyCreate(Command):
    """A key for a non-Agent service principal; ``namespace_id`` is its scope (absent for an
    Installation service principal). ``expires_in`` seconds, 30 days when absent."""

    service_principal_id: str
    namespace_id: str | None = None
    name: KeyName
    expires_in: ExpiresIn | None = None

    @property
    def lifetime_seconds(self) -> int:
        return EXPIRES_IN_DEFAULT if self.expires_in is None else self.expires_in

    # Rules the service checks against the database, refused at this command's own fields.

    def not_a_key_principal(self) -> InvalidRequest:
        return refusal(("servicePrincipalId",), DetailCode.INVALID_VALUE,
                       "Keys can be issued only for Installation or Namespace service principals, "
                       "not for people or Agents.")

    def not_the_principal_scope(self) -> InvalidRequest:
        return refusal(("namespaceId",), DetailCode.INVALID_VALUE,
                       "namespaceId must match the service principal's scope: its Namespace, "
                       "or absent for an Installation service principal.")
