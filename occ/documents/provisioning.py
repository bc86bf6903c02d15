"""The provisioning plan: an admitted provisioning request, stored on its work row.

References and ids only, never a value; its fingerprint tells a replay of the request from a
different request under the same ``requestId``. The worker creates the Configuration and the
Agent it describes, then deploys them.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import Field

from occ.documents.base import Document, HarnessAuth, PluginApprover, SecretBindings, bound_secret_ids
from occ.documents.plugins import Selections
from occ.documents.repositories import RepositoryBinding


class PlannedConfiguration(Document):
    """The Configuration the plan creates: its name (None: named after the Agent), its kind,
    the native document, its bindings."""

    name: str | None = None
    kind: str
    values: dict[str, Any]
    secret_bindings: SecretBindings


class ProvisionPlan(Document):
    """An admitted provisioning request. The Agent's choices have the Agent's own defaults
    when a plan lacks them."""

    name: str
    configuration: PlannedConfiguration
    execution_mode: str = "embedded"
    harness_auth: HarnessAuth | None = None
    backend_id: str | None = None
    plugins: Selections = Field(default_factory=dict)
    plugin_approvers: list[PluginApprover] | None = None
    repository_bindings: list[RepositoryBinding] | None = None
    initial_workspace_files: dict[str, str] | None = None
    secret_ids: list[str] = Field(default_factory=list)  # every Secret it uses, sorted

    @classmethod
    def from_stored(cls, stored: object) -> Self:
        return cls.model_validate(stored)

    @property
    def bound_secret_ids(self) -> dict[str, str]:
        """ENV_NAME -> Secret id of the planned Configuration's bindings, sorted by name."""
        return bound_secret_ids(self.configuration.secret_bindings)

    @property
    def harness_secret_id(self) -> str | None:
        return None if self.harness_auth is None else self.harness_auth.source.id
