"""The base of every stored document, and the parts several documents share.

A stored document is frozen and typed: Python reads it by attribute, and its JSON (what the
database row holds and the fingerprints cover) uses the camelCase names the API has always
shown, generated from the field names. ``document()`` writes exactly the fields that were set,
so a document built by a writer holds every key it names, and one read from a row writes back
the keys the row had (an older row that lacks a key still lacks it).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Document(BaseModel):
    # extra="ignore": a key an older writer left (or a test row's stray one) is dropped on read,
    # so only the keys named here are ever read or shown.
    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def document(self) -> dict[str, Any]:
        """The stored JSON: wire names, only the fields that were set."""
        return self.model_dump(by_alias=True, mode="json", exclude_unset=True)

    def fingerprint(self) -> str:
        """SHA-256 of the canonical JSON (sorted keys, no spaces, ASCII): a replay of a request
        must admit exactly the same document."""
        canonical = json.dumps(self.document(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    @classmethod
    def wire_name(cls, field: str) -> str:
        """The JSON name of ``field`` (for a JSON pointer or a key a caller must name)."""
        return cls.model_fields[field].alias or field

    @classmethod
    def field_named(cls, wire_name: str) -> str:
        """The field whose JSON name is ``wire_name`` (``KeyError`` when none is)."""
        for name in cls.model_fields:
            if cls.wire_name(name) == wire_name:
                return name
        raise KeyError(wire_name)


class SecretRef(Document):
    """A reference to an ordinary Secret of a Namespace, never its value."""

    kind: Literal["secret"]
    namespace_id: str
    id: str

    @classmethod
    def to(cls, namespace_id: str, secret_id: str) -> Self:
        return cls(kind="secret", namespace_id=namespace_id, id=secret_id)


class Delivery(Document):
    """How a bound Secret reaches the runtime: as an environment variable."""

    type: Literal["env"]


class SecretBinding(Document):
    """One environment variable of a Configuration and the Secret it receives."""

    source: SecretRef
    delivery: Delivery

    @classmethod
    def env(cls, source: SecretRef) -> Self:
        return cls(source=source, delivery=Delivery(type="env"))


SecretBindings = dict[str, SecretBinding]  # ENV_NAME -> binding


def bindings_of(namespace_id: str, bound: dict[str, str]) -> SecretBindings:
    """``{ENV_NAME: binding}`` of ``bound`` (ENV_NAME -> Secret id), sorted by name."""
    return {env: SecretBinding.env(SecretRef.to(namespace_id, secret_id)) for env, secret_id in sorted(bound.items())}


def bound_secret_ids(bindings: SecretBindings) -> dict[str, str]:
    """ENV_NAME -> Secret id, sorted by name."""
    return {env: binding.source.id for env, binding in sorted(bindings.items())}


class HarnessAuth(Document):
    """How the runtime authenticates to its model provider: a method and the Secret it uses."""

    method: str
    source: SecretRef

    @classmethod
    def of(cls, method: str, namespace_id: str, secret_id: str) -> Self:
        return cls(method=method, source=SecretRef.to(namespace_id, secret_id))


class PluginApprover(Document):
    """Who may approve a plugin's requests: a channel and the person's id on it."""

    channel: str
    id: str
