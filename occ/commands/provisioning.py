"""The provisioning command: create a Configuration and an Agent and deploy it, in one request.

It carries the Configuration inline and ordinary Secret references, never a value, and
names neither an existing Configuration nor an existing Agent.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from occ.commands.agents import (
    HARNESS_NAMESPACE_MESSAGE,
    BackendId,
    ExecutionMode,
    HarnessAuth,
    PluginApprovers,
    Plugins,
    RepositoryBindings,
    WorkspaceFiles,
)
from occ.commands.base import Command, problem
from occ.commands.common import INLINE_VALUE_MESSAGE, Name, SecretRef
from occ.commands.configurations import ConfigurationDocument, check_own_namespace
from occ.errors import DetailCode

# ``req_`` + a client-chosen token; the column holds 64 characters.
REQUEST_ID = re.compile(r"^req_[A-Za-z0-9_-]{8,60}$")
EXISTING_ID_MESSAGE = ("Provisioning creates its own Configuration and Agent; existing ids are not accepted. "
                       "Use the Agents API to reuse an existing Configuration.")


def _request_id(value: str) -> str:
    if not REQUEST_ID.fullmatch(value):
        raise problem(DetailCode.INVALID_FORMAT, "requestId must be req_ followed by 8 to 60 letters, digits, - or _.")
    return value


def _refuse_existing_id(value: object) -> object:
    raise problem(DetailCode.UNKNOWN_FIELD, EXISTING_ID_MESSAGE)


def _refuse_inline_values(value: object) -> object:
    raise problem(DetailCode.UNKNOWN_FIELD, INLINE_VALUE_MESSAGE)


# Fields that are not part of the shape, named only to refuse them with the rule's own words.
ExistingId = Annotated[SkipJsonSchema[Any], BeforeValidator(_refuse_existing_id), Field(exclude=True)]
InlineValues = Annotated[SkipJsonSchema[Any], BeforeValidator(_refuse_inline_values), Field(exclude=True)]


class ProvisionConfiguration(ConfigurationDocument):
    id: ExistingId = None


def _harness_required(value: object) -> object:
    if value is None:
        raise problem(DetailCode.REQUIRED,
                      "Provisioning deploys the Agent: send harnessAuth with the model API key Secret.")
    return value


class ProvisionCommand(Command):
    """Inline configuration and ordinary Secret references; never a value."""

    request_id: Annotated[str, AfterValidator(_request_id), Field(json_schema_extra={"pattern": REQUEST_ID.pattern})]
    name: Name
    configuration: ProvisionConfiguration
    execution_mode: ExecutionMode = "embedded"  # omitted: embedded; null is refused
    harness_auth: Annotated[HarnessAuth, BeforeValidator(_harness_required)]
    backend_id: BackendId | None = None
    plugins: Plugins | None = None
    plugin_approvers: PluginApprovers | None = None
    repository_bindings: RepositoryBindings | None = None
    initial_workspace_files: WorkspaceFiles | None = None
    secrets: InlineValues = None
    configuration_id: ExistingId = None
    agent_id: ExistingId = None

    def secret_refs(self) -> list[tuple[tuple[str | int, ...], SecretRef]]:
        """Every Secret the request references, with where it does."""
        return [*self.configuration.binding_refs(("configuration",)),
                (("harnessAuth", "source"), self.harness_auth.source)]

    def check_namespace(self, namespace_id: str) -> None:
        check_own_namespace(self.configuration.binding_refs(("configuration",)), namespace_id)
        check_own_namespace([(("harnessAuth", "source"), self.harness_auth.source)], namespace_id,
                            HARNESS_NAMESPACE_MESSAGE)
