"""Account commands: an administrator provisions a person who signs in with a password."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Self

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from pydantic import AfterValidator, Field, model_validator

from occ.commands.base import Command, located, problem, refusal
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


NAMESPACES_MAX = 50


def _distinct(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise problem(DetailCode.INVALID_VALUE, "A Namespace is named twice.")
    return values


class AccountCreate(Command):
    """A person: ``username`` and ``password`` to sign in, ``name`` shown (the username when
    absent), and optionally an Installation Role ``role_id``: on each of ``namespace_ids``, or
    Installation-wide when there are none. Without a Role the person can sign in and do nothing
    until someone grants them access."""

    username: Username
    name: Name | None = None
    password: Password
    role_id: str | None = None
    namespace_ids: Annotated[list[str], Field(max_length=NAMESPACES_MAX), AfterValidator(_distinct)] = []

    @model_validator(mode="after")
    def _role_for_namespaces(self) -> Self:
        if self.namespace_ids and self.role_id is None:
            raise located(("roleId",), DetailCode.REQUIRED, "Choose the Role to give on those Namespaces.")
        return self

    @property
    def display_name(self) -> str:
        return self.username if self.name is None else self.name

    # Rules the service checks with the configuration and the database, refused at this
    # command's own fields.

    def weak_password(self, reasons: Iterable[str]) -> InvalidRequest:
        return _weak("password", reasons)

    def not_an_installation_role(self) -> InvalidRequest:
        return refusal(("roleId",), DetailCode.INVALID_VALUE, "roleId must name an existing Installation Role.")

    def unknown_namespaces(self) -> InvalidRequest:
        return refusal(("namespaceIds",), DetailCode.INVALID_VALUE, "namespaceIds must name existing Namespaces.")


def _weak(field: str, reasons: Iterable[str]) -> InvalidRequest:
    message = "Choose a stronger password. " + " ".join(reasons)
    return refusal((field,), DetailCode.INVALID_VALUE, message[:256])


class PasswordChange(Command):
    """A person's own new password; the current one proves it is them."""

    current_password: Annotated[str, Field(max_length=PASSWORD_MAX, json_schema_extra={"writeOnly": True})]
    new_password: Password

    def weak_password(self, reasons: Iterable[str]) -> InvalidRequest:
        return _weak("newPassword", reasons)

    def wrong_current_password(self) -> InvalidRequest:
        return refusal(("currentPassword",), DetailCode.INVALID_VALUE, "The current password is not right.")

    def same_password(self) -> InvalidRequest:
        return refusal(("newPassword",), DetailCode.INVALID_VALUE, "Choose a password different from the current one.")


class PasswordSet(Command):
    """A one-time password an administrator gives a person: it works for one sign-in, after
    which the person must choose their own before anything else."""

    password: Password

    def weak_password(self, reasons: Iterable[str]) -> InvalidRequest:
        return _weak("password", reasons)
