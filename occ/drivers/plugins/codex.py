"""The ``codex`` PluginDriver: the hosted Codex catalog of a ChatGPT workspace.

Discovery needs a Codex service account token (``codex_pat``): the caller resolves it (a
transient token at create time, the Agent's bound Secret afterwards) and hands its value in
for the one call; ``occ.drivers.plugins.codex_catalog`` does the HTTP. Selections are keyed
``codex-plugin:<slug>@openai-curated-remote``; tool ids are ``<app id>/<tool name>``, each
part percent-encoded.

Policy (static checks): every approval mode at both scopes, a reviewer only in
``toolDefaults``, no per-plugin or per-tool approvers (only the Agent's ``pluginApprovers``),
and one driver policy, ``destructiveEnabled``, which cannot be combined with an explicit
``toolDefaults.enabled``.

Startup: each selection resolves to a ``hosted`` native plugin (``<slug>@openai-curated-remote``,
nothing for OCC to install). The pinned runtime runs native Codex plugins only inside its
native Codex harness signed in to a ChatGPT account (docs/plugins/codex-native-plugins.md,
"Requirements": the Codex harness, ``plugins.entries.codex.config.codexPlugins.enabled``, and
"``codexPlugins`` has no effect on OpenClaw-provider runs"). OCC's Agents run their configured
model provider with an API key, the only harness credential the Agent API accepts, so a compute
driver reports every hosted selection ``auth_required``: the deployment succeeds with one
``PLUGIN_AUTH_REQUIRED`` warning per selection and the selection disabled (the reference's
"Codex + API key" case). ``translate`` writes the gateway's Codex bridge
(``plugins.entries.codex.config.codexPlugins``, only the selected plugins,
``allow_all_plugins: false``) only when a selection is left enabled; with every selection
failed or disabled it writes nothing, so the gateway's config names no Codex plugin it lacks.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from occ.documents import (
    APPROVAL_MODES,
    DRIVER_POLICY,
    REVIEWERS,
    TOOL_DEFAULTS,
    PluginApprover,
    PluginWarning,
    Selections,
)
from occ.drivers.plugins import codex_catalog
from occ.drivers.plugins.base import (
    ApproverCapabilities,
    CatalogEntry,
    CatalogPage,
    DiscoveryCredential,
    DiscoveryQuery,
    DriverIdentity,
    InstallOutcome,
    NativePlugin,
    PluginDiscoveryCredentialsRejected,
    PluginDriver,
    PluginRuntimeSpec,
    PluginStartupFailure,
    PolicyCapabilities,
    PolicyProblem,
    ScopeCapabilities,
)

SELECTION_KEY = re.compile(r"^codex-plugin:([A-Za-z0-9._~-]{1,200})@openai-curated-remote$")
TOOL_PART = re.compile(r"^[^\s/\x00-\x1f\x7f]{1,512}$")
DRIVER_POLICY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"destructiveEnabled": {"type": "boolean", "title": "Destructive tools"}},
}
NO_CREDENTIAL = "The Codex plugin catalog needs a service account token (codex_pat)."
DEPLOYMENT_NOTE = ("Codex plugins need a ChatGPT login. With an OpenAI API key, each selected plugin is disabled "
                   "when the Agent deploys (PLUGIN_AUTH_REQUIRED): OCC's Agents do not run the Codex harness that "
                   "Codex plugins run in. You can still browse the catalog and save selections.")


class CodexPluginDriver(PluginDriver):
    identity = DriverIdentity(id="codex", implementation="occ/codex-plugin")

    def capabilities(self) -> PolicyCapabilities:
        return PolicyCapabilities(
            driver=self.identity,
            approvers=ApproverCapabilities(agent=True, plugin=False, tools=False),
            tool_defaults=ScopeCapabilities(enabled=True, approval=APPROVAL_MODES, reviewer=REVIEWERS),
            tools=ScopeCapabilities(enabled=True, approval=APPROVAL_MODES, reviewer=()),
            driver_policy_schema=DRIVER_POLICY_SCHEMA,
            discovery_credential="required",
            deployment_note=DEPLOYMENT_NOTE,
        )

    # --- discovery ------------------------------------------------------------------------------

    def discover(self, query: DiscoveryQuery, credential: DiscoveryCredential | None = None) -> CatalogPage:
        if credential is None:
            raise PluginDiscoveryCredentialsRejected(NO_CREDENTIAL)
        return codex_catalog.list_plugins(credential.reveal(), query=query.q, cursor=query.cursor)

    def details(self, remote_id: str, credential: DiscoveryCredential | None = None) -> CatalogEntry:
        if credential is None:
            raise PluginDiscoveryCredentialsRejected(NO_CREDENTIAL)
        return codex_catalog.plugin_details(credential.reveal(), remote_id)

    # --- validation -----------------------------------------------------------------------------

    def validate_policies(self, selections: Selections,
                          plugin_approvers: Sequence[PluginApprover] | None = None) -> list[PolicyProblem]:
        problems: list[PolicyProblem] = []
        for key, selection in selections.items():
            at = ("plugins", key)
            if not SELECTION_KEY.match(key):
                problems.append(PolicyProblem(at, "Codex plugin ids look like "
                                              "codex-plugin:<name>@openai-curated-remote.", "INVALID_FORMAT"))
                continue
            if selection.approvers is not None:
                problems.append(PolicyProblem((*at, "approvers"), "Codex plugins take approvers only from the "
                                              "Agent's pluginApprovers.", "UNKNOWN_FIELD"))
            defaults = selection.tool_defaults
            if defaults is not None and defaults.approvers is not None:
                problems.append(PolicyProblem((*at, TOOL_DEFAULTS, "approvers"), "Codex plugins take approvers "
                                              "only from the Agent's pluginApprovers.", "UNKNOWN_FIELD"))
            problems.extend(self._driver_policy_problems(at, selection.driver_policy,
                                                         defaults is not None and defaults.enabled is not None))
            for tool_id, policy in selection.tools.items():
                tool_at = (*at, "tools", tool_id)
                if not _is_tool_id(tool_id):
                    problems.append(PolicyProblem(tool_at, "Codex tool ids look like <app>/<tool>, each part "
                                                  "percent-encoded.", "INVALID_FORMAT"))
                if policy.reviewer is not None:
                    problems.append(PolicyProblem((*tool_at, "reviewer"), "Codex sets a reviewer only for all of a "
                                                  "plugin's tools (toolDefaults.reviewer)."))
                if policy.approvers is not None:
                    problems.append(PolicyProblem((*tool_at, "approvers"), "Codex plugins take approvers only "
                                                  "from the Agent's pluginApprovers.", "UNKNOWN_FIELD"))
        return problems

    @staticmethod
    def _driver_policy_problems(at: tuple[str, ...], policy: Mapping[str, Any] | None,
                                explicit_enabled: bool) -> list[PolicyProblem]:
        if policy is None:
            return []
        problems = [PolicyProblem((*at, DRIVER_POLICY, name), "Codex's driver policy has only destructiveEnabled.",
                                  "UNKNOWN_FIELD") for name in policy if name != "destructiveEnabled"]
        if "destructiveEnabled" in policy:
            if not isinstance(policy["destructiveEnabled"], bool):
                problems.append(PolicyProblem((*at, DRIVER_POLICY, "destructiveEnabled"),
                                              "destructiveEnabled must be true or false.", "INVALID_TYPE"))
            elif explicit_enabled:
                problems.append(PolicyProblem((*at, DRIVER_POLICY, "destructiveEnabled"),
                                              "destructiveEnabled cannot be combined with toolDefaults.enabled."))
        return problems

    # --- startup --------------------------------------------------------------------------------

    def resolve(self, selections: Selections) -> PluginRuntimeSpec:
        natives = {}
        for key in selections:
            match = SELECTION_KEY.match(key)
            if match is None:
                raise PluginStartupFailure("PLUGIN_SELECTION_INVALID")
            natives[key] = NativePlugin(selection_id=key, native_id=f"{match.group(1)}@openai-curated-remote",
                                        source="hosted")
        return PluginRuntimeSpec(driver=self.identity, selections=dict(selections), natives=natives)

    def translate(self, spec: PluginRuntimeSpec, config: Mapping[str, Any], *,
                  failed: frozenset[str] = frozenset()) -> dict[str, Any]:
        document = copy.deepcopy(dict(config))
        if not any(selection.enabled and key not in failed for key, selection in spec.selections.items()):
            return document  # nothing left to run: no bridge entry naming a plugin the gateway lacks
        entries = document.setdefault("plugins", {}).setdefault("entries", {})
        codex = entries.setdefault("codex", {})
        bridge_config = codex.setdefault("config", {})
        selected: dict[str, Any] = {}
        for key, selection in spec.selections.items():
            match = SELECTION_KEY.match(key)
            if match is None:
                raise PluginStartupFailure("PLUGIN_SELECTION_INVALID")
            destructive = (selection.driver_policy or {}).get("destructiveEnabled")
            entry: dict[str, Any] = {"enabled": selection.enabled and key not in failed,
                                     "marketplaceName": "openai-curated-remote", "pluginName": match.group(1)}
            if isinstance(destructive, bool):
                entry["allow_destructive_actions"] = destructive
            selected[f"{match.group(1)}@openai-curated-remote"] = entry
        bridge_config["codexPlugins"] = {"enabled": bool(selected), "allow_all_plugins": False, "plugins": selected}
        return document

    def evaluate_installs(self, spec: PluginRuntimeSpec,
                          outcomes: Sequence[InstallOutcome]) -> tuple[PluginWarning, ...]:
        warnings: list[PluginWarning] = []
        for outcome in outcomes:
            if outcome.selection_id not in spec.selections:
                raise PluginStartupFailure("PLUGIN_INSTALL_UNEXPECTED")
            if outcome.status == "rejected":
                warnings.append(PluginWarning(plugin_id=outcome.selection_id, code="PLUGIN_INSTALL_FAILED"))
            elif outcome.status == "auth_required":
                warnings.append(PluginWarning(plugin_id=outcome.selection_id, code="PLUGIN_AUTH_REQUIRED"))
        return tuple(warnings)


def _is_tool_id(tool_id: str) -> bool:
    parts = tool_id.split("/")
    return len(parts) == 2 and all(TOOL_PART.match(part) and TOOL_PART.match(unquote(part)) for part in parts)
