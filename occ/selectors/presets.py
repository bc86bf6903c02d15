"""Preset reads: one by id, the Namespace's Presets the actor may read (by name), and keyset
pages of them for the API (a name-ordered list: the shared text cursor of ``selectors.paging``,
as the Agents list's; ``moment_page`` is for lists ordered by a moment)."""

from __future__ import annotations

from dataclasses import dataclass

from occ.commands.configurations import check_own_namespace
from occ.commands.presets import PresetRender, render_refusal
from occ.documents.presets import LaunchRequest, PresetTemplate, TemplateRefused
from occ.errors import InvalidRequest, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in, authorize
from occ.models import Preset
from occ.selectors.agents import agent_get
from occ.selectors.configurations import configuration_get, configuration_secret_ids
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.paging import decode_text_cursor, encode_text_keys, past_keys, readable_page

PAGE_SIZE = 50


def preset_get(*, actor: Actor, namespace_id: str, preset_id: str) -> Preset:
    """The Preset under its exact Namespace (404 otherwise), if the actor may read it."""
    namespace = get_live_namespace(namespace_id)
    preset = Preset.objects.filter(namespace=namespace, id=preset_id).first()
    if preset is None:
        raise NotFound("The preset does not exist.")
    authorize(actor, Action.READ, Kind.PRESET, namespace_id=namespace.id, resource_id=preset.id)
    return preset


def preset_list(*, actor: Actor, namespace_id: str) -> list[Preset]:
    """Every Preset of the Namespace the actor may read exactly, by name."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    readable = allowed_in(actor, Action.READ, Kind.PRESET, namespace_id=namespace.id)
    return [preset for preset in Preset.objects.filter(namespace=namespace).order_by("name", "id")
            if readable(preset.id)]


@dataclass(frozen=True)
class PresetPage:
    rows: list[Preset]
    next_cursor: str | None


def preset_page(*, actor: Actor, namespace_id: str, after: str = "", page_size: int = PAGE_SIZE) -> PresetPage:
    """One page of :func:`preset_list`, keyset on ``(name, id)``; rows the actor may not read
    are skipped in SQL-ordered batches, so a page is full unless it is the last."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    keys = decode_text_cursor(after) if after else None
    if after and keys is None:
        raise InvalidRequest("cursor is not a cursor this API returned.")
    readable = allowed_in(actor, Action.READ, Kind.PRESET, namespace_id=namespace.id)
    chosen, more = readable_page(
        Preset.objects.filter(namespace=namespace).order_by("name", "id"),
        start=None if keys is None else past_keys("name", *keys),
        past=lambda preset: past_keys("name", preset.name, preset.id), readable=readable, page_size=page_size)
    return PresetPage(rows=chosen, next_cursor=encode_text_keys(chosen[-1].name, chosen[-1].id) if more else None)


def preset_render(*, actor: Actor, namespace_id: str, preset_id: str, command: PresetRender) -> LaunchRequest:
    """The Preset rendered for ``command``'s variables and credentials (the one renderer the
    API, the console and the CLI share): reading the Preset is all it needs; it creates nothing."""
    preset = preset_get(actor=actor, namespace_id=namespace_id, preset_id=preset_id)
    check_own_namespace([(("credentials", name), ref) for name, ref in sorted(command.credentials.items())],
                        namespace_id, "A credential must be a Secret of the Preset's Namespace.")
    return render_preset(preset.spec, namespace_id=namespace_id, command=command)


def render_preset(template: PresetTemplate, *, namespace_id: str, command: PresetRender) -> LaunchRequest:
    try:
        return template.render(namespace_id=namespace_id, inputs=command.variables,
                               credentials=command.credential_refs())
    except TemplateRefused as exc:
        raise render_refusal(exc) from None


def preset_template_of_agent(*, actor: Actor, namespace_id: str, agent_id: str) -> PresetTemplate:
    """A template of the Agent's current draft ("Save as preset"): its Configuration's values
    and Secret bindings, its model credential (the Secret binding is kept, never a value), its
    execution mode and plugins. No variables: the person names the new Agent when applying it.
    Reading needs the Agent and its Configuration."""
    agent = agent_get(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    configuration = configuration_get(actor=actor, namespace_id=namespace_id,
                                      configuration_id=agent.configuration_id)
    harness = ((agent.harness_auth_method, agent.harness_secret_id)
               if agent.harness_auth_method and agent.harness_secret_id else None)
    return PresetTemplate.of_draft(namespace_id=namespace_id, execution_mode=agent.execution_mode,
                                   plugins=agent.plugins, plugin_approvers=agent.plugin_approvers, harness=harness,
                                   values=configuration.values, bound=configuration_secret_ids(configuration))
