"""Plugin selections: the ``plugins`` map of an Agent and its default ``pluginApprovers``.

The shape is checked here (closed objects, approval modes and reviewers by name, at least one
field in every policy, ids by pattern); what the installation's PluginDriver supports is
checked by the service (``occ.services.plugins``) through the driver's ``validate_policies``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from occ import documents
from occ.commands.base import Command, located, one_of, problem
from occ.commands.common import is_unicode_text
from occ.documents import APPROVAL_MODES, REVIEWERS, PluginSelection, ToolPolicy
from occ.errors import DetailCode

PLUGIN_APPROVERS_MAX = 64
PLUGIN_APPROVER_FIELD_MAX = 256
PLUGINS_MAX = 64
TOOLS_MAX = 256
TOOL_ID_MAX = 1024
DRIVER_POLICY_MAX = 32
PLUGIN_KEY = re.compile(r"^[A-Za-z0-9._~:@-]{1,253}$")


def _plain_token(value: str) -> str:
    if len(value) > PLUGIN_APPROVER_FIELD_MAX:
        raise problem(DetailCode.TOO_LONG, f"At most {PLUGIN_APPROVER_FIELD_MAX} characters.")
    if not value or not is_unicode_text(value) or any(
            ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise problem(DetailCode.INVALID_FORMAT,
                      "Expected a non-empty identifier without spaces or control characters.")
    return value


PlainToken = Annotated[str, AfterValidator(_plain_token)]


class PluginApprover(Command):
    """Who may approve a plugin's requests: a channel and the person's id on it."""

    channel: PlainToken
    id: PlainToken


def _distinct(approvers: list[PluginApprover]) -> list[PluginApprover]:
    seen: set[tuple[str, str]] = set()
    for index, approver in enumerate(approvers):
        pair = (approver.channel, approver.id)
        if pair in seen:
            raise located((index,), DetailCode.INVALID_VALUE, "Plugin approvers must not repeat.")
        seen.add(pair)
    return approvers


PluginApprovers = Annotated[list[PluginApprover], Field(max_length=PLUGIN_APPROVERS_MAX), AfterValidator(_distinct)]


def approvers_value(approvers: list[PluginApprover] | None) -> tuple[documents.PluginApprover, ...] | None:
    return None if approvers is None else tuple(documents.PluginApprover(channel=a.channel, id=a.id)
                                                for a in approvers)


def _plugin_key(value: str) -> str:
    if not PLUGIN_KEY.fullmatch(value):
        raise problem(DetailCode.INVALID_FORMAT, "Plugin keys must be qualified catalog ids.")
    return value


def _tool_id(value: str) -> str:
    if len(value) > TOOL_ID_MAX:
        raise problem(DetailCode.TOO_LONG, f"Tool ids are at most {TOOL_ID_MAX} characters.")
    if not value or not is_unicode_text(value) or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127
                                                      for ch in value):
        raise problem(DetailCode.INVALID_FORMAT, "Tool ids are non-empty, without spaces or control characters.")
    return value


Approval = Annotated[Literal["provider_default", "all_actions", "write_actions", "none"],
                     one_of(*APPROVAL_MODES,
                            message="approval must be provider_default, all_actions, write_actions or none.")]
ReviewerName = Annotated[Literal["human", "auto"], one_of(*REVIEWERS, message="reviewer must be human or auto.")]


class ToolPolicyCommand(Command):
    """``toolDefaults`` or one tool's override: at least one field, none of them null."""

    enabled: bool | None = None
    approval: Approval | None = None
    reviewer: ReviewerName | None = None
    approvers: PluginApprovers | None = None

    @model_validator(mode="after")
    def _some_field(self) -> ToolPolicyCommand:
        if not self.model_fields_set:
            raise problem(DetailCode.INVALID_VALUE, "A tool policy names at least one of enabled, approval, "
                                                    "reviewer or approvers.")
        for name in sorted(self.model_fields_set):
            if getattr(self, name) is None:
                raise located((type(self).model_fields[name].alias or name,), DetailCode.INVALID_TYPE,
                              "Omit a policy field to inherit it; null is not a value.")
        return self

    def value(self) -> ToolPolicy:
        return ToolPolicy(enabled=self.enabled, approval=self.approval, reviewer=self.reviewer,
                          approvers=approvers_value(self.approvers))


ToolId = Annotated[str, AfterValidator(_tool_id)]


class PluginSelectionCommand(Command):
    """One selected plugin. ``enabled`` is required; ``false`` beats every tool override."""

    enabled: bool
    tool_defaults: ToolPolicyCommand | None = None
    tools: Annotated[dict[ToolId, ToolPolicyCommand], Field(max_length=TOOLS_MAX)] | None = None
    driver_policy: Annotated[dict[str, Any], Field(max_length=DRIVER_POLICY_MAX)] | None = None
    approvers: PluginApprovers | None = None

    @model_validator(mode="after")
    def _no_nulls(self) -> PluginSelectionCommand:
        for name in sorted(self.model_fields_set):
            if getattr(self, name) is None:
                raise located((type(self).model_fields[name].alias or name,), DetailCode.INVALID_TYPE,
                              "Omit a selection field to leave it unset; null is not a value.")
        return self

    def value(self) -> PluginSelection:
        return PluginSelection(
            enabled=self.enabled, tool_defaults=self.tool_defaults.value() if self.tool_defaults else None,
            tools={tool: policy.value() for tool, policy in (self.tools or {}).items()},
            driver_policy=self.driver_policy, approvers=approvers_value(self.approvers))


PluginKey = Annotated[str, AfterValidator(_plugin_key)]
# The Agent's map: a plugin key -> its selection. ``null`` is refused (send ``{}`` for none).
PluginSelections = Annotated[dict[PluginKey, PluginSelectionCommand], Field(max_length=PLUGINS_MAX)]

