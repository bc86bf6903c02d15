"""Preset commands: create, update (a supplied template replaces the whole template) and render.

The template is the stored document itself (``occ.documents.presets.PresetTemplate``): closed
and strict like a command. The rules that compare it with the route (Secrets of another
Namespace) run in ``check_namespace``, after parsing, like the other commands'.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator

from occ.commands.base import Command, invalid_request, problem
from occ.commands.common import Name, SecretRef
from occ.documents import SecretRef as SecretRefDocument
from occ.documents.presets import PresetTemplate, TemplateProblem, TemplateRefused
from occ.errors import DetailCode, InvalidRequest

MAX_INPUTS = 64


def template_refusal(problems: list[TemplateProblem], at: tuple[str | int, ...] = ()) -> InvalidRequest:
    """The documented 400 for template problems, each at its place under ``at``."""
    return invalid_request([{"type": p.code, "loc": (*at, *p.loc), "msg": p.message} for p in problems])


def check_template(template: PresetTemplate, namespace_id: str, at: tuple[str | int, ...] = ("template",)) -> None:
    problems = template.size_problems() or template.problems(namespace_id)
    if problems:
        raise template_refusal(problems, at)


class PresetCreate(Command):
    name: Name
    template: PresetTemplate = Field(default_factory=PresetTemplate)

    def check_namespace(self, namespace_id: str) -> None:
        check_template(self.template, namespace_id)


class PresetFromAgent(Command):
    """"Save as preset": the new Preset's name; its template is the Agent's current draft."""

    name: Name


class PresetUpdate(Command):
    """An omitted field keeps its value; a supplied template replaces the whole template."""

    name: Name | None = None
    template: PresetTemplate | None = None

    @field_validator("name", "template", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        if value is None:
            raise problem(DetailCode.INVALID_TYPE, "name and template must not be null; leave one out to keep it.")
        return value

    def check_namespace(self, namespace_id: str) -> None:
        if self.template is not None:
            check_template(self.template, namespace_id)


Scalar = Annotated[Any, Field(json_schema_extra={"type": ["string", "number", "boolean"]})]


class PresetRender(Command):
    """The values of the Preset's variables, and the Secrets that fill its password variables."""

    variables: Annotated[dict[str, Scalar], Field(max_length=MAX_INPUTS)] = Field(default_factory=dict)
    credentials: Annotated[dict[str, SecretRef], Field(max_length=MAX_INPUTS)] = Field(default_factory=dict)

    def credential_refs(self) -> dict[str, SecretRefDocument]:
        return {name: SecretRefDocument.to(ref.namespace_id, ref.id) for name, ref in self.credentials.items()}


def render_refusal(exc: TemplateRefused) -> InvalidRequest:
    return template_refusal(exc.problems)
