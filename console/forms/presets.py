"""Presets in the console (django.forms): the variables of a Preset being applied
(``PresetVariablesForm``, one field per variable, built from the Preset's template), the name
of a Preset saved from an Agent (``SavePresetForm``), and the Create Agent choices a rendered
Preset starts from (``choices_from_launch``).
"""

from __future__ import annotations

import json
from typing import Any

from django import forms

from console.forms.agent_choices import (
    AUTH_EXISTING,
    AUTH_NEW_KEY,
    COMPATIBLE,
    MODE_LIST,
    MODE_MANUAL,
    PROVIDERS,
    WORKSPACE_DEFAULTS,
    AgentChoices,
    dump_configuration,
    regenerate_configuration,
)
from console.forms.base import CommandForm
from occ.commands.base import build
from occ.commands.common import NAME_MAX_CODE_POINTS
from occ.commands.presets import PresetFromAgent
from occ.documents.presets import LaunchRequest, PresetTemplate
from occ.openclaw.document import COMPATIBLE_PROVIDER_ID, primary_model_ref

ENTER_KEY = "__enter_key__"  # a password variable's choice: type the key in the Create Agent form


class PresetVariablesForm(forms.Form):
    """The inputs of one Preset: a field per variable (its description as the label, its
    default as the initial value); a password variable is a choice of Secret, or "enter a key
    in the form" (a credential is never typed on this page)."""

    def __init__(self, template: PresetTemplate, secrets: list[tuple[str, str]], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.template = template
        for name, variable in template.variables.items():
            label = variable.description or name
            if variable.type == "password":
                self.fields[name] = forms.ChoiceField(
                    label=label, choices=[(ENTER_KEY, "Enter an API key in the form"), *secrets],
                    help_text="Use an existing Secret, or type a new key on the next page (saved as a Secret).")
            elif variable.type == "number":
                self.fields[name] = forms.FloatField(label=label, required=variable.default is None,
                                                     initial=variable.default)
            elif variable.type == "boolean":
                self.fields[name] = forms.BooleanField(label=label, required=False, initial=variable.default)
            else:
                self.fields[name] = forms.CharField(label=label, required=variable.default is None,
                                                    initial=variable.default, max_length=NAME_MAX_CODE_POINTS * 20,
                                                    strip=False)

    def inputs(self) -> dict[str, Any]:
        """The variables' values as the renderer takes them (a whole number stays an integer)."""
        found: dict[str, Any] = {}
        for name, variable in self.template.variables.items():
            value = self.cleaned_data.get(name)
            if variable.type == "password" or value is None or (variable.type == "string" and value == ""
                                                                 and variable.default is not None):
                continue
            if variable.type == "number" and float(value).is_integer():
                value = int(value)
            found[name] = value
        return found

    def credentials(self) -> dict[str, str]:
        """Password variable -> the chosen Secret's id (those left to the form are absent)."""
        return {name: self.cleaned_data[name] for name in self.template.password_variables()
                if self.cleaned_data.get(name) not in (None, "", ENTER_KEY)}


class SavePresetForm(CommandForm):
    name = forms.CharField(max_length=NAME_MAX_CODE_POINTS, strip=False, label="Preset name")
    places = {"name": "name", "template": "name"}

    def command(self) -> PresetFromAgent:
        """The command (``InvalidRequest`` for a name the API refuses, in its words)."""
        return build(PresetFromAgent, name=self.cleaned_data["name"])


def _provider_and_model(values: dict[str, Any]) -> tuple[str, str]:
    ref = primary_model_ref(values) or ""
    provider, _, model = ref.partition("/")
    if provider == COMPATIBLE_PROVIDER_ID:
        return COMPATIBLE, model
    return (provider, model) if provider in PROVIDERS else ("openai", model if provider else "")


def choices_from_launch(launch: LaunchRequest, *, preset_name: str, bound_by_preset: bool) -> AgentChoices:
    """The Create Agent form a rendered Preset opens: its name, its Configuration as written
    (kept as edited JSON, so a provider change does not replace it), its credential, files and
    plugins. ``bound_by_preset``: the Preset itself names the credential, which is then locked."""
    values = launch.configuration.values
    provider, model = _provider_and_model(values)
    choices = AgentChoices(name=launch.name or "", provider=provider,
                           model_mode=MODE_MANUAL if provider == COMPATIBLE else MODE_LIST,
                           model=model, model_manual=model if provider == COMPATIBLE else "")
    if values:
        # Kept as the Preset wrote it: marked edited (no baseline), so no control replaces it.
        choices.configuration_json = dump_configuration(values)
    else:
        regenerate_configuration(choices)  # an empty template starts from the form's own
    auth = launch.harness_auth
    if auth is not None and auth.source is not None:
        choices.auth_choice, choices.model_secret_id = AUTH_EXISTING, auth.source.id
        choices.credential_lock = preset_name if bound_by_preset else ""
    else:
        choices.auth_choice = AUTH_NEW_KEY
    if launch.initial_workspace_files is not None:
        choices.files = {**WORKSPACE_DEFAULTS, **{k: str(v) for k, v in launch.initial_workspace_files.items()}}
    if isinstance(launch.plugins, dict):
        choices.plugins_json = json.dumps(launch.plugins)
    choices.secret_bindings = {env: binding["source"]["id"] for env, binding in
                               launch.configuration.secret_bindings.items()}
    return choices
