"""Account commands: an administrator provisions a person who signs in with a password."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from pydantic import AfterValidator, Field

from occ.commands.base import Command, problem, refusal
from occ.commands.common import Name
from occ.errors import DetailCode, InvalidRequest

USERNAME_MAX = 150
PASSWORD_MIN = 12
PASSWORD_MAX = 128
_USERNAME = UnicodeUsernameValidator()


def _check_username(value: str) -> str:
    if len(value) > USERNAME_MAX:
        raise problem(DetailCode.TOO_LONG, f"Username must be at most {USERNAME_MAX} characters.")
    try:
        _USERNAME(value)
    except ValidationError:
        raise problem(DetailCode.INVALID_FORMAT,
                      "Username must be non-empty and contain only letters, digits and @ . + - _.") from None
    return value


def _check_password(value: str) -> str:
    """The length bounds; the configured strength validators are the service's. Never repeats it."""
    if len(value) > PASSWORD_MAX:
        raise problem(DetailCode.TOO_LONG, f"Password must be at most {PASSWORD_MAX} characters.")
    if len(value) < PASSWORD_MIN:
        raise problem(DetailCode.INVALID_VALUE, f"Password must be at least {PASSWORD_MIN} characters.")
    return value


Username = Annotated[str, AfterValidator(_check_username),
                     Field(json_schema_extra={"minLength": 1, "maxLength": USERNAME_MAX})]
Password = Annotated[str, AfterValidator(_check_password),
                     Field(json_schema_extra={"minLength": PASSWORD_MIN, "maxLength": PASSWORD_MAX,
                                              "writeOnly": True, "format": "password"})]


class AccountCreate(Command):
    """A person: ``username`` and ``password`` to sign in, ``name`` shown (the username when
    absent), one Installation Role ``role_id``."""

    username: Username
    name: Name | None = None
    password: Password
    role_id: str

    @property
    def display_name(self) -> str:
        return self.username if self.name is None else self.name

    # Rules the service checks with the configuration and the database, refused at this
    # command's own fields.

    def weak_password(self, reasons: Iterable[str]) -> InvalidRequest:
        message = "Choose a stronger password. " + " ".join(reasons)
        return refusal(("password",), DetailCode.INVALID_VALUE, message[:256])

    def not_an_installation_role(self) -> InvalidRequest:
        return refusal(("roleId",), DetailCode.INVALID_VALUE, "roleId must name an existing Installation Role.")
