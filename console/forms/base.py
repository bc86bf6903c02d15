"""What the console's forms share: ``CommandForm``, a form whose cleaned data build a command, and
``TimeRangeMixin``, the From/Until rule of the list pages' filter forms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django import forms

from console.common import refusal_errors
from occ.commands.base import Command, Loc, place
from occ.errors import OccError


class CommandForm(forms.Form):
    """A form whose cleaned data build a typed command (``occ.commands``): a service's refusal
    of that command lands on the field that filled the place each detail names, as the form
    itself says (``field_of``, over Python names), anything else on the form as a whole.

    This is the console's one way from a refusal to a field: no table of JSON pointers. Most
    forms only say which field fills each field of their command (``places``, Python names)."""

    places: ClassVar[Mapping[str, str]] = {}
    """The form field that fills each field of the command (both by Python name)."""

    def field_of(self, at: Loc) -> str | None:
        """The field that filled place ``at`` of this form's commands; None: none of them.
        By default the field ``places`` names for the command's field the place is in."""
        return self.places.get(str(at[0])) if at else None

    def add_message(self, field_name: str | None, message: str) -> None:
        """``add_error`` once per message (two places may break the same rule)."""
        if message not in self.errors.get(field_name or "__all__", []):
            self.add_error(field_name, message)

    def refuse(self, exc: OccError, command: type[Command]) -> None:
        """Put a service's refusal of ``command`` (a command type this form built) on the form."""
        for name, messages in refusal_errors(exc, lambda path: self.field_of(place(command, path))).items():
            for message in messages:
                self.add_message(None if name == "__all__" else name, message)


class TimeRangeMixin(forms.Form):
    """A filter form with optional ``since`` and ``until`` fields (each form declares its own,
    with its labels): when both are given, Until must be later than From."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and until <= since:
            self.add_error("until", "Until must be later than From.")
        return cleaned
