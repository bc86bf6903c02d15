"""An Agent's plugin selections and the warnings their installs report.

A selection is what an Agent stores in its ``plugins`` map, what a provisioning plan carries and
what a revision freezes; the PluginDrivers read it by attribute. A warning is what a compute
driver observed of one selection at startup (a refused install, missing authentication); the
worker keeps it in the deployment's result and the API shows it.

The stored JSON of a selection names only what the person set: an unset policy field is
absent (it inherits), as is an empty ``tools`` map, exactly as the selections were always stored,
so the fingerprints of revisions written before these models existed do not change.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from occ.documents.base import Document, PluginApprover

ApprovalMode = Literal["provider_default", "all_actions", "write_actions", "none"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = ("provider_default", "all_actions", "write_actions", "none")
Reviewer = Literal["human", "auto"]
REVIEWERS: tuple[Reviewer, ...] = ("human", "auto")
WarningCode = Literal["PLUGIN_INSTALL_FAILED", "PLUGIN_AUTH_REQUIRED"]
WARNING_CODES: tuple[WarningCode, ...] = ("PLUGIN_INSTALL_FAILED", "PLUGIN_AUTH_REQUIRED")


class _Policy(Document):
    """Writes only what is set: ``None`` means "inherit" and is never stored."""

    @model_serializer(mode="wrap")
    def _set_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


class ToolPolicy(_Policy):
    """A selection's ``toolDefaults`` or one tool's override; ``None`` inherits."""

    enabled: bool | None = None
    approval: ApprovalMode | None = None
    reviewer: Reviewer | None = None
    approvers: tuple[PluginApprover, ...] | None = None


class PluginSelection(_Policy):
    """One entry of an Agent's ``plugins`` map. ``enabled: false`` beats every tool override."""

    enabled: bool
    tool_defaults: ToolPolicy | None = None
    tools: dict[str, ToolPolicy] = Field(default_factory=dict)
    driver_policy: dict[str, Any] | None = None
    approvers: tuple[PluginApprover, ...] | None = None

    @model_serializer(mode="wrap")
    def _set_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        tools = self.wire_name("tools")
        return {key: value for key, value in handler(self).items()
                if value is not None and not (key == tools and value == {})}


Selections = dict[str, PluginSelection]  # selection key -> selection

# A selection's JSON names where a pointer into a request body, or the plugin picker's copy of
# the Agent's plugins document, must name them.
TOOL_DEFAULTS = PluginSelection.wire_name("tool_defaults")
DRIVER_POLICY = PluginSelection.wire_name("driver_policy")


class PluginWarning(Document):
    """A selection that started without its plugin: ``plugin_id`` is the admitted selection key."""

    plugin_id: str
    code: WarningCode
