"""The console's ``django.forms`` forms (the Create Agent form, ``AgentForm``, lives in
``console.agent_form`` with the rest of that page's rules)."""

from __future__ import annotations

import json
from typing import Any

from django import forms

INVALID_JSON = "Enter a valid JSON object."
LOST_GENERATION = "This form lost the Configuration generation it was opened at. Reload the page."


def _reject_constant(name: str) -> None:
    raise ValueError(name)


class ConfigurationForm(forms.Form):
    """The Agent's Configuration JSON, saved against the generation it was opened at."""

    configuration_json = forms.CharField(strip=False, max_length=500_000,
                                         error_messages={"required": INVALID_JSON, "max_length": INVALID_JSON})
    generation = forms.IntegerField(min_value=1, max_value=10**12, widget=forms.HiddenInput,
                                    error_messages={"required": LOST_GENERATION, "invalid": LOST_GENERATION,
                                                    "min_value": LOST_GENERATION, "max_value": LOST_GENERATION})

    @classmethod
    def of(cls, values: dict[str, Any], generation: int) -> ConfigurationForm:
        """The form as the saved Configuration fills it."""
        return cls(initial={"configuration_json": json.dumps(values, indent=2, ensure_ascii=False),
                            "generation": generation})

    def clean_configuration_json(self) -> dict[str, Any]:
        text = self.cleaned_data["configuration_json"]
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            raise forms.ValidationError(INVALID_JSON, code="invalid") from None
        if not isinstance(value, dict):
            raise forms.ValidationError(INVALID_JSON, code="invalid")
        return value

    def text(self) -> str:
        """What the textarea shows: what was typed, or the saved document."""
        return str(self["configuration_json"].value() or "")
