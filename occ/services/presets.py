"""Preset writes: create, update, delete, the Installation's defaults seeded into a Namespace,
and the removal of untouched defaults when a Namespace is deleted.

A Preset is a template only: writing one creates no Agent, Configuration, Secret or workload,
and changing or deleting one changes nothing made from it. Audit events name the Preset and
never its template or variables.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from occ.commands.presets import PresetCreate, PresetFromAgent, PresetUpdate
from occ.documents.presets import PresetTemplate
from occ.errors import Conflict, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import AccessBinding, Namespace, NamespaceStatus, Preset
from occ.openclaw.presets import bundled_presets, default_presets
from occ.openclaw.validation import check_configuration_values
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.presets import preset_template_of_agent
from occ.services.audit import audit_record

DUPLICATE_NAME = "A preset with this name already exists in the Namespace. Choose another name."
NOT_READY = "The Namespace is not ready; presets can be written once it is."


def preset_create(*, actor: Actor, namespace_id: str, command: PresetCreate) -> Preset:
    command.check_namespace(namespace_id)
    template = _normalized(command.template, namespace_id)
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id, for_update=True)
        authorize(actor, Action.CREATE, Kind.PRESET, namespace_id=namespace.id)
        if namespace.status != NamespaceStatus.READY:
            raise Conflict(NOT_READY, code="NAMESPACE_NOT_READY")
        if Preset.objects.filter(namespace=namespace, name=command.name).exists():
            raise Conflict(DUPLICATE_NAME)
        preset = _insert(namespace, command.name, template)
        audit_record(actor=actor, action="openclaw.presets.create", namespace_id=namespace.id,
                     resource_kind=Kind.PRESET, resource_id=preset.id)
    return preset


def preset_create_from_agent(*, actor: Actor, namespace_id: str, agent_id: str, command: PresetFromAgent) -> Preset:
    """"Save as preset" (the console's, the API's and the CLI's): a Preset whose template is the
    Agent's current draft, its Secret bindings kept and no variables. Needs read on the Agent and
    its Configuration and ``preset:create``; the Agent is not changed."""
    template = preset_template_of_agent(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    return preset_create(actor=actor, namespace_id=namespace_id,
                         command=PresetCreate(name=command.name, template=template))


def preset_update(*, actor: Actor, namespace_id: str, preset_id: str, command: PresetUpdate) -> Preset:
    command.check_namespace(namespace_id)
    template = _normalized(command.template, namespace_id) if command.template is not None else None
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id, for_update=True)
        preset = _locked_preset(namespace, preset_id)
        authorize(actor, Action.UPDATE, Kind.PRESET, namespace_id=namespace.id, resource_id=preset.id)
        if namespace.status != NamespaceStatus.READY:
            raise Conflict(NOT_READY, code="NAMESPACE_NOT_READY")
        changed = []
        if command.name is not None and command.name != preset.name:
            if Preset.objects.filter(namespace=namespace, name=command.name).exclude(id=preset.id).exists():
                raise Conflict(DUPLICATE_NAME)
            preset.name = command.name
            changed.append("name")
        if template is not None:
            preset.template = template
            changed.append("template")
        preset.save(update_fields=[*changed, "updated_at"])
        audit_record(actor=actor, action="openclaw.presets.update", namespace_id=namespace.id,
                     resource_kind=Kind.PRESET, resource_id=preset.id, details={"changed": changed})
    return preset


def preset_delete(*, actor: Actor, namespace_id: str, preset_id: str) -> None:
    """Delete a Preset and the access bindings on it; what was made from it stays."""
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id, for_update=True)
        preset = _locked_preset(namespace, preset_id)
        authorize(actor, Action.DELETE, Kind.PRESET, namespace_id=namespace.id, resource_id=preset.id)
        _delete(actor, preset, details={})


def presets_seed_defaults(*, actor: Actor | None, namespace: Namespace) -> list[Preset]:
    """Create the Installation's default Presets missing from ``namespace`` (locked by the
    caller's transaction); a same-name Preset is left as it is. The caller's one audit event
    (bootstrap's, the Namespace creation's) lists them. ``actor`` None: bootstrap, which
    creates the Installation and needs no grant. A creator who may not create Presets gets a
    Namespace without them (creating a Namespace does not need that grant)."""
    if actor is not None and not allowed(actor, Action.CREATE, Kind.PRESET, namespace_id=namespace.id):
        return []
    taken = set(Preset.objects.filter(namespace=namespace).values_list("name", flat=True))
    made = []
    for name, template in default_presets().items():
        if name in taken:
            continue
        made.append(_insert(namespace, name, template))
    return made


def untouched_defaults(namespace: Namespace) -> list[Preset]:
    """The seeded copies whose name and template still equal the bundled defaults."""
    defaults = bundled_presets()
    return [preset for preset in Preset.objects.filter(namespace=namespace, name__in=list(defaults))
            if preset.template == defaults[preset.name]]


def presets_remove_untouched_defaults(*, actor: Actor, namespace: Namespace) -> list[str]:
    """Namespace deletion's exception: untouched defaults go with the Namespace, each deletion
    audited; the caller holds the Namespace locked and was authorized to delete it. (The
    Installation seeded them, so ``namespace:delete`` covers them: a person who may delete an
    empty Namespace is not refused over Presets nobody wrote.)"""
    removed = []
    for preset in untouched_defaults(namespace):
        _delete(actor, preset, details={"withNamespace": True})
        removed.append(preset.id)
    return removed


def _normalized(template: PresetTemplate, namespace_id: str) -> dict[str, Any]:
    """The stored JSON (Secret Namespaces filled from the route); native values checked when
    they hold no variable (a variable's value is checked where the rendered Agent is)."""
    values = template.configuration.values if template.configuration is not None else None
    if values is not None and "vars." not in repr(values):
        check_configuration_values(values, path="/template/configuration/values")
    return template.stored(namespace_id)


def _insert(namespace: Namespace, name: str, template: dict[str, Any]) -> Preset:
    try:
        with transaction.atomic():
            return Preset.objects.create(namespace=namespace, name=name, template=template)
    except IntegrityError as exc:  # a concurrent writer took the name
        raise Conflict(DUPLICATE_NAME) from exc


def _locked_preset(namespace: Namespace, preset_id: str) -> Preset:
    preset = Preset.objects.select_for_update().filter(namespace=namespace, id=preset_id).first()
    if preset is None:
        raise NotFound("The preset does not exist.")
    return preset


def _delete(actor: Actor, preset: Preset, *, details: dict[str, Any]) -> None:
    targeting = AccessBinding.objects.filter(resource_kind=Kind.PRESET, resource_id=preset.id)
    removed = sorted(targeting.values_list("id", flat=True))
    targeting.delete()
    preset_id, namespace_id = preset.id, preset.namespace_id
    preset.delete()
    audit_record(actor=actor, action="openclaw.presets.delete", namespace_id=namespace_id,
                 resource_kind=Kind.PRESET, resource_id=preset_id,
                 details={**details, "removedAccessBindings": removed})
