"""The console's ``django.forms`` forms (the Create Agent form, ``AgentForm``, lives in
``console.agent_form`` with the rest of that page's rules)."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from occ.openclaw.positions import parse_document

INVALID_JSON = "Enter a valid JSON object."
LOST_GENERATION = "This form lost the Configuration generation it was opened at. Reload the page."


class ConfigurationDocumentForm(forms.Form):
    """A Configuration's JSON document as typed (Create Configuration); a syntax error says
    where it is (line and column, as the editor shows it)."""

    configuration_json = forms.CharField(strip=False, max_length=500_000,
                                         error_messages={"required": INVALID_JSON, "max_length": INVALID_JSON})

    def clean_configuration_json(self) -> dict[str, Any]:
        values, problem = parse_document(self.cleaned_data["configuration_json"])
        if problem is not None:
            raise forms.ValidationError(f"{INVALID_JSON} {problem.where}: {problem.message}", code="invalid")
        assert values is not None
        return values

    def text(self) -> str:
        """What the textarea shows: what was typed, or the saved document."""
        return str(self["configuration_json"].value() or "")


class ConfigurationForm(ConfigurationDocumentForm):
    """The Configuration JSON, saved against the generation it was opened at."""

    generation = forms.IntegerField(min_value=1, max_value=10**12, widget=forms.HiddenInput,
                                    error_messages={"required": LOST_GENERATION, "invalid": LOST_GENERATION,
                                                    "min_value": LOST_GENERATION, "max_value": LOST_GENERATION})

    @classmethod
    def of(cls, values: dict[str, Any], generation: int) -> ConfigurationForm:
        """The form as the saved Configuration fills it."""
        return cls(initial={"configuration_json": document_text(values), "generation": generation})


def document_text(values: dict[str, Any]) -> str:
    """A saved document as the editor shows it."""
    return json.dumps(values, indent=2, ensure_ascii=False)
