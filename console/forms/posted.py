"""The forms of the Secrets and Namespaces pages. They read what was posted and build the
command; the command and the service judge it (nothing here refuses), and a refusal lands on
the field that fills the place it names (``CommandForm``)."""

from __future__ import annotations

from django import forms

from console.forms.base import CommandForm
from occ.commands.base import build
from occ.commands.namespaces import NamespaceCreate
from occ.commands.secrets import SecretCreate, SecretValueUpdate


class PostedForm(CommandForm):
    """A form of posted text only (``forms.Field``: no rule of its own), for the page to show
    each field's refusal; ``errors_by_field`` gives them as the page's templates read them."""

    def text(self, name: str) -> str:
        """What was posted as ``name`` ("" when nothing was)."""
        return str(self.cleaned_data.get(name) or "")

    def errors_by_field(self) -> dict[str, list[str]]:
        return {name: [str(message) for message in messages] for name, messages in self.errors.items()}


class SecretCreateForm(PostedForm):
    name = forms.Field(required=False)
    value = forms.Field(required=False)
    places = {"name": "name", "value": "value"}

    def command(self) -> SecretCreate:
        """``InvalidRequest`` when the typed name or value break the command's rules."""
        return build(SecretCreate, name=self.text("name").strip(), value=self.text("value"))


class SecretValueForm(PostedForm):
    value = forms.Field(required=False)
    places = {"value": "value"}

    def command(self) -> SecretValueUpdate:
        return build(SecretValueUpdate, value=self.text("value"))


class NamespaceForm(PostedForm):
    name = forms.Field(required=False)
    places = {"name": "name"}

    def command(self) -> NamespaceCreate:
        return build(NamespaceCreate, name=self.text("name").strip())
