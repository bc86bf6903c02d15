"""The provisioning command: create a Configuration and an Agent and deploy it, in one request.

It carries the Configuration inline and ordinary Secret references, never a value, and
names neither an existing Configuration nor an existing Agent.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from occ.commands.agents import HARNESS_NAMESPACE_MESSAGE, AgentChoices, HarnessAuth, WorkspaceFiles
from occ.commands.base import Command, problem
from occ.commands.common import INLINE_VALUE_MESSAGE, Name, SecretRef
from occ.commands.configurations import ConfigurationDocument, check_own_namespace
from occ.commands.secrets import SecretValue
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


RequestId = Annotated[str, AfterValidator(_request_id), Field(json_schema_extra={"pattern": REQUEST_ID.pattern})]


class _ProvisionedAgent(Command):
    request_id: RequestId
    name: Name
    configuration: ProvisionConfiguration


class ProvisionFields(AgentChoices, _ProvisionedAgent):
    """What every provisioning request holds; ``ProvisionCommand`` requires ``harness_auth``,
    ``ProvisionWithModelKey`` has the key's Secret made first and refuses one."""

    initial_workspace_files: WorkspaceFiles | None = None
    secrets: InlineValues = None
    configuration_id: ExistingId = None
    agent_id: ExistingId = None


class ProvisionCommand(ProvisionFields):
    """Inline configuration and ordinary Secret references; never a value."""

    harness_auth: Annotated[HarnessAuth, BeforeValidator(_harness_required)]  # type: ignore[assignment]

    def secret_refs(self) -> list[tuple[tuple[str | int, ...], SecretRef]]:
        """Every Secret the request references, with where it does."""
        return [*self.configuration.binding_refs(("configuration",)),
                (("harnessAuth", "source"), self.harness_auth.source)]

    def check_namespace(self, namespace_id: str) -> None:
        check_own_namespace(self.configuration.binding_refs(("configuration",)), namespace_id)
        check_own_namespace([(("harnessAuth", "source"), self.harness_auth.source)], namespace_id,
                            HARNESS_NAMESPACE_MESSAGE)


def _no_harness_auth(value: object) -> object:
    if value is not None:
        raise problem(DetailCode.UNKNOWN_FIELD, "The model key is given as modelKey here; send no harnessAuth.")
    return value


class ProvisionWithModelKey(ProvisionFields):
    """A provisioning request whose model API key is typed now rather than held in a Secret
    (the console's "Enter an API key"). The service saves it as the request's own Secret,
    named from ``request_id`` so that a retry of the request finds it, then admits the request
    with that Secret as ``harnessAuth``. ``model_key`` may be left out when an earlier attempt
    of the same request saved it."""

    harness_auth: Annotated[None, BeforeValidator(_no_harness_auth)] = None  # type: ignore[assignment]
    model_key: SecretValue | None = None

    def admitted(self, source: SecretRef) -> ProvisionCommand:
        """The request as ``provision_admit`` takes it, the saved key's Secret as ``harnessAuth``."""
        fields = self.model_dump(exclude={"harness_auth", "model_key"}, exclude_unset=True)
        return ProvisionCommand.model_validate(
            {**fields, "harness_auth": HarnessAuth(method="api_key", source=source)})
