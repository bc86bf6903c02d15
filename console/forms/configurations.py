"""The ``django.forms`` forms of a Configuration: its JSON document, the generation it was
opened at, and its Secret bindings (the Configuration pages and the Agent page's Configuration tab)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from django import forms

from occ.commands.common import NAME_MAX_CODE_POINTS
from occ.commands.configurations import MAX_SECRET_BINDINGS, env_name_problem
from occ.openclaw.positions import parse_document

INVALID_JSON = "Enter a valid JSON object."
LOST_GENERATION = "This form lost the Configuration generation it was opened at. Reload the page."


class ConfigurationDocumentForm(forms.Form):
    """A Configuration's name and JSON document as typed (Create Configuration); a syntax error
    says where it is (line and column, as the editor shows it). A blank name: OCC names it
    (create) or keeps it (edit)."""

    name = forms.CharField(required=False, max_length=NAME_MAX_CODE_POINTS)
    configuration_json = forms.CharField(strip=False, max_length=500_000,
                                         error_messages={"required": INVALID_JSON, "max_length": INVALID_JSON})

    def clean_configuration_json(self) -> dict[str, Any]:
        values, problem = parse_document(self.cleaned_data["configuration_json"])
        if problem is not None:
            raise forms.ValidationError(f"{INVALID_JSON} {problem.where}: {problem.message}", code="invalid")
        assert values is not None
        return values

    def chosen_name(self) -> str | None:
        return self.cleaned_data.get("name") or None

    def text(self) -> str:
        """What the textarea shows: what was typed, or the saved document."""
        return str(self["configuration_json"].value() or "")


class OpenedAtForm(forms.Form):
    """The Configuration generation a form was opened at: a save is refused if someone saved since."""

    generation = forms.IntegerField(min_value=1, max_value=10**12, widget=forms.HiddenInput,
                                    error_messages={"required": LOST_GENERATION, "invalid": LOST_GENERATION,
                                                    "min_value": LOST_GENERATION, "max_value": LOST_GENERATION})


class ConfigurationForm(ConfigurationDocumentForm, OpenedAtForm):
    """The Configuration JSON, saved against the generation it was opened at."""

    @classmethod
    def of(cls, name: str, values: dict[str, Any], generation: int) -> ConfigurationForm:
        """The form as the saved Configuration fills it."""
        return cls(initial={"name": name, "configuration_json": document_text(values), "generation": generation})


def document_text(values: dict[str, Any]) -> str:
    """A saved document as the editor shows it."""
    return json.dumps(values, indent=2, ensure_ascii=False)


class SecretBindingForm(forms.Form):
    """One row of a Configuration's Secret bindings: an environment variable of the runtime and
    the Secret of the Namespace it receives (``secret_choices``: ``(id, label)``). A row left
    empty is no binding; the name follows the API's rule (``env_name_problem``)."""

    env_name = forms.CharField(label="Environment variable", required=False, max_length=128)
    secret = forms.ChoiceField(label="Secret", required=False, error_messages={
        "invalid_choice": "That Secret is not one of this Namespace's any more. Choose another."})

    def __init__(self, *args: Any, secret_choices: Sequence[tuple[str, str]] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["secret"].choices = [("", "Choose a Secret"), *secret_choices]  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        name, secret = cleaned.get("env_name", ""), cleaned.get("secret", "")
        if name and (problem := env_name_problem(name)) is not None:
            self.add_error("env_name", problem[1])
        elif secret and not name and "env_name" not in self.errors:
            self.add_error("env_name", "Name the environment variable that receives this Secret.")
        if name and not secret and "secret" not in self.errors:
            self.add_error("secret", f"Choose the Secret that {name} receives.")
        return cleaned


class BaseSecretBindingFormSet(forms.BaseFormSet):  # type: ignore[type-arg]
    def clean(self) -> None:
        if any(self.errors):
            return
        seen: set[str] = set()
        for form in self.forms:
            name = form.cleaned_data.get("env_name")
            if not name or form.cleaned_data.get("DELETE"):
                continue
            if name in seen:
                form.add_error("env_name", f"{name} is listed twice. Each variable receives one Secret.")
            seen.add(name)

    def bindings(self) -> dict[str, str]:
        """``{ENV_NAME: secret id}`` of the rows kept (a valid formset)."""
        return {form.cleaned_data["env_name"]: form.cleaned_data["secret"] for form in self.forms
                if form.cleaned_data.get("env_name") and not form.cleaned_data.get("DELETE")}


SecretBindingFormSet = cast("type[BaseSecretBindingFormSet]", forms.formset_factory(
    SecretBindingForm, formset=BaseSecretBindingFormSet, extra=1, can_delete=True, max_num=MAX_SECRET_BINDINGS,
    validate_max=True, absolute_max=MAX_SECRET_BINDINGS + 1))
