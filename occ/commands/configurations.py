"""Configuration commands: the document wrapper (kind, values, secret bindings).

``values`` is the native OpenClaw document; its contents are checked by the configuration
module's ``check_configuration_values`` where the services call it, not here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator

from occ.commands.base import Command, one_of, problem, refusal
from occ.commands.common import Name, SecretRef
from occ.errors import DetailCode
from occ.openclaw.validation import ENV_NAME, reserved_env_name_problem

MAX_SECRET_BINDINGS = 64
OWN_NAMESPACE_MESSAGE = "A configuration may bind only Secrets of its own Namespace."


def env_name_problem(name: str) -> tuple[str, str] | None:
    """``(detail code, message)`` when ``name`` cannot receive a Secret."""
    reserved = reserved_env_name_problem(name)
    if reserved is not None:
        return DetailCode.INVALID_VALUE, reserved
    if not ENV_NAME.fullmatch(name):
        return DetailCode.INVALID_FORMAT, ("A binding name must be an environment variable name: "
                                           "A-Z, 0-9 and _, not starting with a digit, at most 128 characters.")
    return None


def _check_env_name(name: str) -> str:
    found = env_name_problem(name)
    if found is not None:
        raise problem(*found)
    return name


EnvName = Annotated[str, AfterValidator(_check_env_name), Field(json_schema_extra={"pattern": ENV_NAME.pattern})]


class SecretDelivery(Command):
    type: Annotated[Literal["env"], one_of("env", message='delivery.type must be "env".')]


class SecretBinding(Command):
    """One environment variable of the runtime receiving a Secret's value."""

    source: SecretRef
    delivery: SecretDelivery = SecretDelivery(type="env")


SecretBindings = Annotated[dict[EnvName, SecretBinding], Field(max_length=MAX_SECRET_BINDINGS)]


def bound_secret_ids(bindings: dict[str, SecretBinding]) -> dict[str, str]:
    """``{ENV_NAME: secret id}``."""
    return {name: binding.source.id for name, binding in bindings.items()}


def check_own_namespace(refs: list[tuple[tuple[str | int, ...], SecretRef]], namespace_id: str,
                        message: str = OWN_NAMESPACE_MESSAGE) -> None:
    """Every reference must name the route's Namespace (a rule against the route, so it runs
    after parsing); ``refs`` pairs each reference with its place in the body."""
    for loc, ref in refs:
        if ref.namespace_id != namespace_id:
            raise refusal((*loc, "namespaceId"), DetailCode.INVALID_VALUE, message)


def _refuse_null(value: object) -> object:
    if value is None:
        raise problem(DetailCode.INVALID_TYPE, "secretBindings must be an object.")
    return value


def _object_not_null(schema: dict[str, Any]) -> None:
    """The JSON schema of an optional field that refuses null: its non-null option only."""
    options = [option for option in schema.pop("anyOf", []) if option.get("type") != "null"]
    if len(options) == 1:
        schema.update(options[0])
    schema.pop("default", None)


class ConfigurationDocument(Command):
    """A Configuration as sent: its name (unique in the Namespace; left out, OCC names it), its
    kind, the native document and the Secrets it receives."""

    name: Name | None = Field(default=None, json_schema_extra=_object_not_null)
    kind: Annotated[Literal["agent"], one_of("agent", message='kind must be "agent".')]
    values: dict[str, Any]
    secret_bindings: SecretBindings = Field(default_factory=dict)

    _no_null_bindings = field_validator("secret_bindings", mode="before")(_refuse_null)

    @property
    def bound(self) -> dict[str, str]:
        return bound_secret_ids(self.secret_bindings)

    def binding_refs(self, at: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], SecretRef]]:
        return [((*at, "secretBindings", name, "source"), binding.source)
                for name, binding in sorted(self.secret_bindings.items())]

    def check_namespace(self, namespace_id: str) -> None:
        check_own_namespace(self.binding_refs(), namespace_id)


ConfigurationCreate = ConfigurationDocument


class ConfigurationUpdate(Command):
    """A full replacement of ``values``; bindings omitted are kept, ``{}`` clears them; a
    ``name`` renames it (omitted: kept)."""

    name: Name | None = Field(default=None, json_schema_extra=_object_not_null)
    values: dict[str, Any]
    # Omitted (None) keeps the bindings; an explicit null is refused, so the schema shows no null.
    secret_bindings: SecretBindings | None = Field(default=None, json_schema_extra=_object_not_null)

    _no_null_bindings = field_validator("secret_bindings", mode="before")(_refuse_null)

    @property
    def bound(self) -> dict[str, str] | None:
        """The replacement bindings, or None to keep the current ones."""
        return None if self.secret_bindings is None else bound_secret_ids(self.secret_bindings)

    def check_namespace(self, namespace_id: str) -> None:
        check_own_namespace(self.binding_refs(), namespace_id)

    def binding_refs(self) -> list[tuple[tuple[str | int, ...], SecretRef]]:
        return [(("secretBindings", name, "source"), binding.source)
                for name, binding in sorted((self.secret_bindings or {}).items())]

