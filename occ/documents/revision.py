"""The revision spec: everything one deployment needs, frozen into ``AgentRevision.snapshot``.

References and ids only, never a Secret value. The deploy service writes it; the worker, the
compute drivers, the selectors, the API and the console read it by attribute, and ask it the
questions it answers once for all of them (is it pinned to this compute driver, which Secrets
does it deliver, what is its configuration document).

Rows written before a key existed still load: every field a row may lack has a default, and
``document()`` writes back only the keys the row had. ``PublicRevision`` is the part the API
shows and the revision diff compares.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from pydantic import Field

from occ.documents.base import Document, HarnessAuth, PluginApprover, SecretBindings, bound_secret_ids
from occ.documents.plugins import Selections
from occ.documents.repositories import RepositoryCredentials
from occ.documents.smoke import SmokeConversation


class DriverPin(Document):
    """Which driver (``id``, its setting's name) and which implementation of it: a revision
    records the compute driver it was admitted for and the PluginDriver of its selections."""

    id: str
    implementation: str


class HarnessPin(Document):
    """The runtime the revision runs: ``openclaw`` at a version, embedded."""

    id: str
    version: str
    mode: str


class PluginSnapshot(Document):
    """The revision's plugins: the PluginDriver that admitted them and the policy-only map."""

    driver: DriverPin | None = None  # absent in the first snapshots, which had only the map
    plugins: Selections


class RevisionSpec(Document):
    """The admitted spec of one AgentRevision (spec §1.8)."""

    configuration_kind: str = "agent"
    configuration: dict[str, Any] = Field(default_factory=dict)  # the native OpenClaw document
    harness: HarnessPin | None = None
    compute: DriverPin | None = None
    harness_auth: HarnessAuth | None = None
    backend_id: str | None = None
    secret_bindings: SecretBindings = Field(default_factory=dict)
    secret_driver_id: str | None = None
    plugins: PluginSnapshot | None = None
    plugin_approvers: list[PluginApprover] | None = None
    repository_credentials: RepositoryCredentials | None = None  # bindings, never a token
    # What a candidate must answer before it replaces the serving revision (absent: none).
    smoke_conversations: list[SmokeConversation] | None = None
    # Internal: never part of the public revision.
    execution_mode: str | None = None
    service_principal_id: str | None = None
    # Where a redeploy took it from (public, but not something it deploys).
    source_revision_id: str | None = None

    @classmethod
    def from_stored(cls, stored: object) -> Self:
        """The spec of a stored snapshot, whichever code wrote it."""
        return cls.model_validate(stored if isinstance(stored, dict) else {})

    # --- the questions every reader asks ----------------------------------------------------
    def pinned_to(self, compute: DriverPin) -> bool:
        """Whether the revision was admitted for this compute driver (its id and implementation)."""
        return self.compute is not None and (self.compute.id, self.compute.implementation) == (
            compute.id, compute.implementation)

    @property
    def compute_driver_id(self) -> str | None:
        return None if self.compute is None else self.compute.id

    @property
    def harness_auth_method(self) -> str | None:
        return None if self.harness_auth is None else self.harness_auth.method

    @property
    def harness_secret_id(self) -> str | None:
        return None if self.harness_auth is None else self.harness_auth.source.id

    @property
    def bound_secret_ids(self) -> dict[str, str]:
        """ENV_NAME -> Secret id of the Configuration's bindings, sorted by name."""
        return bound_secret_ids(self.secret_bindings)

    @property
    def delivered_secret_ids(self) -> list[str]:
        """Every Secret the revision delivers to its runtime: the harness Secret, then the
        Configuration's bindings (each once, in snapshot order)."""
        ids = [self.harness_secret_id] if self.harness_secret_id else []
        for binding in self.secret_bindings.values():
            if binding.source.id not in ids:
                ids.append(binding.source.id)
        return ids

    def bindings_using(self, secret_id: str) -> list[str]:
        """The variables bound to ``secret_id``, sorted."""
        return [env for env, secret in self.bound_secret_ids.items() if secret == secret_id]

    def configuration_document(self) -> dict[str, Any]:
        """A copy of the native document, for a driver to render from."""
        return copy.deepcopy(self.configuration)

    @property
    def plugin_driver(self) -> DriverPin | None:
        return None if self.plugins is None else self.plugins.driver

    @property
    def plugin_selections(self) -> Selections:
        return {} if self.plugins is None else self.plugins.plugins

    def public(self, *, configuration_id: str, configuration_generation: int) -> PublicRevision:
        """What the revision deploys, as the API shows it: every public field (null when the
        row has none) and each optional one the row holds."""
        fields = {name: getattr(self, name) if name in self.model_fields_set else None for name in PUBLIC_FIELDS}
        fields |= {name: getattr(self, name) for name in OPTIONAL_PUBLIC_FIELDS if getattr(self, name) is not None}
        return PublicRevision(configuration_id=configuration_id, configuration_generation=configuration_generation,
                              configuration_kind=self.configuration_kind, **fields)


# The public fields (spec §1.8): always shown, null when unset; then those shown only when set.
PUBLIC_FIELDS = ("configuration", "harness", "compute", "harness_auth", "backend_id", "secret_bindings",
                 "plugin_approvers")
OPTIONAL_PUBLIC_FIELDS = ("secret_driver_id", "plugins", "repository_credentials", "smoke_conversations")


class PublicRevision(Document):
    """The public fields of a revision that say what it deploys (metadata and references only)."""

    configuration_id: str
    configuration_generation: int
    configuration_kind: str
    configuration: dict[str, Any] | None
    harness: HarnessPin | None
    compute: DriverPin | None
    harness_auth: HarnessAuth | None
    backend_id: str | None
    secret_bindings: SecretBindings | None
    plugin_approvers: list[PluginApprover] | None
    secret_driver_id: str | None = None
    plugins: PluginSnapshot | None = None
    repository_credentials: RepositoryCredentials | None = None
    smoke_conversations: list[SmokeConversation] | None = None
