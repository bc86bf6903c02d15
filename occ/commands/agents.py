"""Agent commands: the draft a later deploy freezes into an AgentRevision.

Until the topologies and drivers that serve them exist, only the embedded execution mode and
API-key harness authentication are accepted. Plugin selections are ``occ.commands.plugins``',
repository bindings ``occ.commands.repositories``'.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from occ.commands.base import Command, located, problem
from occ.commands.common import ConfigurationId, Name, SecretId, SecretRef, is_unicode_text
from occ.commands.configurations import ConfigurationDocument, check_own_namespace
from occ.commands.plugins import PluginApprovers, PluginSelections
from occ.commands.repositories import RepositoryBindings
from occ.documents import SMOKE_MAX, SmokeConversation, pattern_problem, prompt_problem
from occ.documents.smoke import SMOKE_PATTERN_MAX, SMOKE_PROMPT_MAX
from occ.errors import DetailCode

WORKSPACE_FILE_NAMES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md")
WORKSPACE_FILE_MAX_BYTES = 16 * 1024
SECRET_IDS_MAX = 64
BACKEND_ID = re.compile(r"^[A-Za-z0-9._~:@-]+$")
BACKEND_ID_MAX = 200
# Documented harnessAuth methods whose topologies or drivers do not exist yet, and why: the 400
# names the field, what the method needs, and what to send instead.
UNSUPPORTED_HARNESS_METHODS = {
    "codex_pat": ("harnessAuth method codex_pat (a ChatGPT workspace's service account token) runs only on the "
                  "dedicated Codex harness, which this installation does not offer yet. Bind a Secret holding an "
                  "OpenAI API key with method api_key; the token can still list models (POST "
                  "/namespaces/{namespaceId}/agents/models with authMethod codex_pat)."),
    "oauth": ("harnessAuth method oauth (a personal ChatGPT login) runs only on the dedicated Codex harness, which "
              "this installation does not offer yet. Bind a Secret holding an API key with method api_key."),
    "credential_source": ("harnessAuth method credential_source needs a Credential Gateway, which this installation "
                          "does not run. Bind a Secret holding an API key with method api_key."),
    "runtime": ("harnessAuth method runtime uses the host's own credentials, which only an SSH runtime has; this "
                "installation's compute does not. Bind a Secret holding an API key with method api_key."),
}
HARNESS_NAMESPACE_MESSAGE = "The Secret must belong to the Agent's Namespace."


def _execution_mode(value: object) -> object:
    if not isinstance(value, str):
        raise problem(DetailCode.INVALID_TYPE, "executionMode must be a string.")
    if value == "dedicated":
        raise problem(DetailCode.INVALID_VALUE, "The dedicated execution mode is not supported yet; use embedded.")
    if value != "embedded":
        raise problem(DetailCode.INVALID_VALUE, "executionMode must be embedded.")
    return value


ExecutionMode = Annotated[Literal["embedded"], BeforeValidator(_execution_mode)]


def _backend_id(value: str) -> str:
    if len(value) > BACKEND_ID_MAX:
        raise problem(DetailCode.TOO_LONG, f"backendId must be at most {BACKEND_ID_MAX} characters.")
    if not BACKEND_ID.fullmatch(value):
        raise problem(DetailCode.INVALID_FORMAT, "backendId must be a non-empty Backend id.")
    return value


BackendId = Annotated[str, AfterValidator(_backend_id),
                      Field(json_schema_extra={"maxLength": BACKEND_ID_MAX, "pattern": BACKEND_ID.pattern})]


def _workspace_file_name(value: object) -> object:
    if value not in WORKSPACE_FILE_NAMES:
        raise problem(DetailCode.UNKNOWN_FIELD, "Only AGENTS.md, SOUL.md, IDENTITY.md and USER.md can be staged.")
    return value


def _workspace_file(value: str) -> str:
    if not is_unicode_text(value):
        raise problem(DetailCode.INVALID_VALUE, "A workspace file must be valid UTF-8 text.")
    if len(value.encode("utf-8")) > WORKSPACE_FILE_MAX_BYTES:
        raise problem(DetailCode.TOO_LONG, "A workspace file must be at most 16 KiB.")
    if "\x00" in value:
        raise problem(DetailCode.INVALID_VALUE, "A workspace file must not contain NUL.")
    return value


WorkspaceFileName = Annotated[Literal["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"],
                              BeforeValidator(_workspace_file_name)]
# A partial map of the four workspace files the first deployment writes.
WorkspaceFiles = dict[WorkspaceFileName, Annotated[str, AfterValidator(_workspace_file)]]


def _smoke_prompt(value: str) -> str:
    found = prompt_problem(value)
    if found is not None:
        raise problem(DetailCode.TOO_LONG if len(value) > SMOKE_PROMPT_MAX else DetailCode.INVALID_VALUE, found)
    return value


def _smoke_pattern(value: str) -> str:
    found = pattern_problem(value)
    if found is not None:
        raise problem(DetailCode.TOO_LONG if len(value) > SMOKE_PATTERN_MAX else DetailCode.INVALID_VALUE, found)
    return value


class SmokeConversationInput(Command):
    """One smoke conversation: a prompt, and the regular expression its reply must match."""

    prompt: Annotated[str, AfterValidator(_smoke_prompt), Field(json_schema_extra={"maxLength": SMOKE_PROMPT_MAX})]
    expect: Annotated[str, AfterValidator(_smoke_pattern), Field(json_schema_extra={"maxLength": SMOKE_PATTERN_MAX})]

    def document(self) -> SmokeConversation:
        return SmokeConversation(prompt=self.prompt, expect=self.expect)


SmokeConversationsInput = Annotated[list[SmokeConversationInput], Field(max_length=SMOKE_MAX)]


def smoke_documents(conversations: list[SmokeConversationInput] | None) -> list[SmokeConversation]:
    """The stored documents of ``conversations`` (``None``: none)."""
    return [conversation.document() for conversation in conversations or []]


class HarnessAuth(Command):
    """How the runtime authenticates to its model provider: an API key held in a Secret."""

    method: Literal["api_key"]
    source: SecretRef

    @model_validator(mode="before")
    @classmethod
    def _method_first(cls, data: object) -> object:
        # The method decides the shape: an unsupported one is the only problem worth naming.
        method = data.get("method") if isinstance(data, dict) else None
        if isinstance(data, dict) and "method" in data and not isinstance(method, str):
            raise located(("method",), DetailCode.INVALID_TYPE, "method must be a string.")
        if isinstance(method, str) and method in UNSUPPORTED_HARNESS_METHODS:
            raise located(("method",), DetailCode.INVALID_VALUE, UNSUPPORTED_HARNESS_METHODS[method])
        if isinstance(method, str) and method != "api_key":
            raise located(("method",), DetailCode.INVALID_VALUE, "harnessAuth method must be api_key.")
        return data

    @property
    def secret_id(self) -> str:
        return self.source.id


class AgentChoices(Command):
    """What an Agent runs with, besides its name and its Configuration: one definition for
    creating, editing and provisioning an Agent.

    The commands put their leading fields (name, Configuration, request id) in a base of their
    own listed after this one: pydantic orders fields from the last base to the first, so the
    body's fields, and the details of a refusal, keep the order clients have always seen."""

    execution_mode: ExecutionMode = "embedded"  # omitted: embedded; null is refused
    harness_auth: HarnessAuth | None = None
    backend_id: BackendId | None = None
    # null is refused; {} is none (an update: omitted keeps, {} clears)
    plugins: PluginSelections = Field(default_factory=dict)
    plugin_approvers: PluginApprovers | None = None
    # create: omitted or null is none; update: omitted keeps, [] clears, a list replaces
    repository_bindings: RepositoryBindings | None = None

    def check_namespace(self, namespace_id: str) -> None:
        if self.harness_auth is not None:
            check_own_namespace([(("harnessAuth", "source"), self.harness_auth.source)], namespace_id,
                                HARNESS_NAMESPACE_MESSAGE)


class _NamedAgent(Command):
    name: Name
    configuration_id: ConfigurationId


class AgentCreate(AgentChoices, _NamedAgent):
    """A stopped Agent: no revision, no workload until it is deployed."""

    initial_workspace_files: WorkspaceFiles | None = None
    smoke_conversations: SmokeConversationsInput | None = None
    rollback_on_failure: bool = True


class _AgentConfiguration(Command):
    configuration_id: ConfigurationId


class AgentUpdate(AgentChoices, _AgentConfiguration):
    """Edit the draft: an omitted field keeps its value, ``null`` clears it."""

    smoke_conversations: SmokeConversationsInput | None = None  # omitted keeps; null or [] clears
    rollback_on_failure: bool = True  # omitted keeps


class AgentDraftCreate(Command):
    """An Agent saved as a draft with a Configuration of its own, made together."""

    name: Name
    configuration: ConfigurationDocument
    execution_mode: ExecutionMode = "embedded"
    harness_auth: HarnessAuth
    initial_workspace_files: WorkspaceFiles | None = None
    plugins: PluginSelections = Field(default_factory=dict)  # the Create Agent picker's selections
    plugin_approvers: PluginApprovers | None = None  # and its Default plugin approvers

    def agent(self, configuration_id: str) -> AgentCreate:
        """The Agent part, once its Configuration exists."""
        return AgentCreate(name=self.name, configuration_id=configuration_id, execution_mode=self.execution_mode,
                           harness_auth=self.harness_auth, initial_workspace_files=self.initial_workspace_files,
                           plugins=self.plugins, plugin_approvers=self.plugin_approvers)


def _distinct_ids(secret_ids: list[str]) -> list[str]:
    seen: set[str] = set()
    for index, secret_id in enumerate(secret_ids):
        if secret_id in seen:
            raise located((index,), DetailCode.INVALID_VALUE, "Secret ids must not repeat.")
        seen.add(secret_id)
    return secret_ids


def _some(secret_ids: list[str]) -> list[str]:
    if not secret_ids:
        raise problem(DetailCode.INVALID_VALUE, "Name at least one Secret.")
    return secret_ids


class AgentSecretAccess(Command):
    """Let the Agent's own service principal use these Secrets (``secret:operate`` on each)."""

    secret_ids: Annotated[list[SecretId], Field(max_length=SECRET_IDS_MAX), AfterValidator(_some),
                          AfterValidator(_distinct_ids)]
