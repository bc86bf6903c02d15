"""Configuration writes: create, update (a full replacement of ``values``) and delete.

Editing a Configuration never touches Agents, revisions or running workloads: only a later
deploy reads the new generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from occ.commands.base import details_at
from occ.commands.common import SecretRef
from occ.commands.configurations import ConfigurationCreate, ConfigurationUpdate
from occ.errors import Conflict, DetailCode, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.ids import IdPrefix, new_id
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    Configuration,
    Namespace,
    NamespaceStatus,
    Secret,
    SecretBinding,
)
from occ.openclaw.validation import check_configuration_values
from occ.selectors.namespaces import get_live_namespace
from occ.services.audit import audit_record
from occ.services.checks import held_or_locked_namespace
from occ.services.locks import share_locked
from occ.services.provisioning_guards import refuse_configuration_edit_while_provisioning

CREATABLE_NAMESPACE_STATUSES = frozenset({NamespaceStatus.PROVISIONING, NamespaceStatus.READY})
NAME_TAKEN = "A Configuration of that name exists in this Namespace. Choose another name."


def configuration_default_name(namespace: Namespace, base: str) -> str:
    """``base``, or ``base (2)``, ``(3)``, ... : the first no Configuration of the Namespace holds."""
    taken = set(Configuration.objects.filter(namespace=namespace, name__startswith=base)
                .values_list("name", flat=True))
    name, copy = base, 1
    while name in taken:
        copy += 1
        name = f"{base} ({copy})"
    return name


def _refuse_taken_name(namespace: Namespace, name: str, *, other_than: str | None = None) -> None:
    if Configuration.objects.filter(namespace=namespace, name=name).exclude(id=other_than).exists():
        raise Conflict(NAME_TAKEN)


def configuration_create(*, actor: Actor, namespace_id: str, command: ConfigurationCreate,
                         configuration_id: str | None = None, namespace: Namespace | None = None,
                         default_name: str | None = None) -> Configuration:
    """Create a Configuration at generation 1, named ``command.name`` (a name taken in the
    Namespace is a 409), else ``default_name`` (e.g. "<agent> configuration") or
    "configuration <short id>", numbered when taken.

    ``configuration_id``: the id an Agent provisioning pre-allocated (never from a request).
    ``namespace``: the live Namespace, already locked by the caller's transaction (a fenced
    provisioning step); otherwise it is locked here.
    """
    command.check_namespace(namespace_id)
    check_configuration_values(command.values)
    bound = command.bound
    with transaction.atomic():
        # Locked so a concurrent Namespace delete sees this Configuration or runs first.
        namespace = held_or_locked_namespace(namespace_id, namespace)
        authorize(actor, Action.CREATE, Kind.CONFIGURATION, namespace_id=namespace.id)
        if namespace.status not in CREATABLE_NAMESPACE_STATUSES:
            raise Conflict("The Namespace has failed or is being deleted; it cannot take new configurations.")
        if namespace.existing_namespace and namespace.status != NamespaceStatus.READY:
            # An adopted external namespace holds nothing of ours until the worker has checked it.
            raise Conflict("The Namespace is still being adopted. Try again once it is ready.",
                           code="NAMESPACE_NOT_READY")
        _authorize_bound_secrets(actor, namespace, bound, command.binding_refs())
        configuration_id = configuration_id or new_id(IdPrefix.CONFIGURATION)
        if command.name is not None:
            _refuse_taken_name(namespace, command.name)
            name = command.name
        else:
            name = configuration_default_name(namespace, default_name or f"configuration {configuration_id[4:12]}")
        try:
            with transaction.atomic():
                configuration = Configuration.objects.create(id=configuration_id, namespace=namespace, name=name,
                                                             kind=command.kind, values=dict(command.values))
        except IntegrityError:  # the same name, committed meanwhile
            raise Conflict(NAME_TAKEN) from None
        _write_bindings(configuration, bound)
        audit_record(actor=actor, action="openclaw.configurations.create", namespace_id=namespace.id,
                     resource_kind=Kind.CONFIGURATION, resource_id=configuration.id,
                     details={"name": name, "generation": configuration.generation, **_bindings_evidence(bound)})
    return configuration


def configuration_update(*, actor: Actor, namespace_id: str, configuration_id: str,
                         command: ConfigurationUpdate, expected_generation: int | None = None) -> Configuration:
    """Replace ``values``; bindings omitted are kept, ``{}`` clears them, a map replaces them.

    ``expected_generation`` (the API's If-Match) refuses the edit when someone else saved first.
    """
    command.check_namespace(namespace_id)
    check_configuration_values(command.values)
    replacement = command.bound
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id)
        configuration = _locked_configuration(namespace, configuration_id)
        authorize(actor, Action.UPDATE, Kind.CONFIGURATION, namespace_id=namespace.id,
                  resource_id=configuration.id)
        if expected_generation is not None and expected_generation != configuration.generation:
            raise Conflict("The configuration was changed since you read it. Read it again and reapply your edit.")
        refuse_configuration_edit_while_provisioning(configuration.id)
        current = {b.env_name: b.secret_id for b in configuration.secret_bindings.all()}
        resulting = current if replacement is None else replacement
        # Retained bindings count too: saving a document that delivers a Secret is using it.
        _authorize_bound_secrets(actor, namespace, resulting, command.binding_refs())
        previous_generation, previous_name = configuration.generation, configuration.name
        if command.name is not None and command.name != previous_name:
            _refuse_taken_name(namespace, command.name, other_than=configuration.id)
            configuration.name = command.name
        configuration.values = dict(command.values)
        configuration.generation = previous_generation + 1
        try:
            with transaction.atomic():
                configuration.save(update_fields=["name", "values", "generation", "updated_at"])
        except IntegrityError:
            raise Conflict(NAME_TAKEN) from None
        if resulting != current:
            configuration.secret_bindings.all().delete()
            _write_bindings(configuration, resulting)
        audit_record(actor=actor, action="openclaw.configurations.update", namespace_id=namespace.id,
                     resource_kind=Kind.CONFIGURATION, resource_id=configuration.id,
                     details={"name": configuration.name, "generation": configuration.generation,
                              "previousGeneration": previous_generation,
                              **({"previousName": previous_name} if previous_name != configuration.name else {}),
                              "secretBindingsChanged": resulting != current, **_bindings_evidence(resulting)})
    return configuration


def configuration_delete(*, actor: Actor, namespace_id: str, configuration_id: str) -> None:
    """Delete an unreferenced Configuration with its bindings and the access bindings on it."""
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id)
        configuration = _locked_configuration(namespace, configuration_id)
        authorize(actor, Action.DELETE, Kind.CONFIGURATION, namespace_id=namespace.id,
                  resource_id=configuration.id)
        _refuse_if_referenced(configuration)
        targeting = AccessBinding.objects.filter(resource_kind=Kind.CONFIGURATION, resource_id=configuration.id)
        removed = sorted(targeting.values_list("id", flat=True))
        targeting.delete()
        generation = configuration.generation
        try:
            configuration.delete()
        except ProtectedError as exc:  # an Agent appeared after the check above
            raise Conflict(_referenced_message([])) from exc
        audit_record(actor=actor, action="openclaw.configurations.delete", namespace_id=namespace.id,
                     resource_kind=Kind.CONFIGURATION, resource_id=configuration_id,
                     details={"generation": generation, "removedAccessBindings": removed})


def _locked_configuration(namespace: Namespace, configuration_id: str) -> Configuration:
    configuration = (Configuration.objects.select_for_update()
                     .filter(namespace=namespace, id=configuration_id).first())
    if configuration is None:
        raise NotFound("The configuration does not exist.")
    return configuration


def _authorize_bound_secrets(actor: Actor, namespace: Namespace, bound: Mapping[str, str],
                             refs: list[tuple[tuple[str | int, ...], SecretRef]]) -> None:
    """Every bound Secret must be an ordinary Secret of this Namespace that the actor may operate
    (``refs``: where the command names each, for the 404's details).

    The rows are locked (shared) so a concurrent Secret delete waits for this binding to commit.
    """
    if not bound:
        return
    wanted = set(bound.values())
    held = {secret.id for secret in share_locked(
        Secret.objects.filter(namespace=namespace, id__in=wanted, owner_agent__isnull=True).only("id"))}
    missing = [(*loc, "id") for loc, ref in refs if ref.id not in held]
    if any(secret_id not in held for secret_id in wanted):
        raise NotFound("A bound Secret does not exist in this Namespace.",
                       details=details_at(missing, DetailCode.INVALID_VALUE))
    for secret_id in sorted(wanted):
        authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret_id)


def _write_bindings(configuration: Configuration, bound: Mapping[str, str]) -> None:
    SecretBinding.objects.bulk_create([
        SecretBinding(configuration=configuration, env_name=name, secret_id=secret_id)
        for name, secret_id in sorted(bound.items())
    ])


def _bindings_evidence(bound: Mapping[str, str]) -> dict[str, Any]:
    """Identifiers only: which variables receive which Secrets, never a value."""
    return {"secretBindings": {name: bound[name] for name in sorted(bound)}}


def _refuse_if_referenced(configuration: Configuration) -> None:
    agent_ids = list(Agent.objects.filter(configuration=configuration).order_by("id")
                     .values_list("id", flat=True)[:5])
    if agent_ids:
        raise Conflict(_referenced_message(agent_ids))
    # Guided provisioning owns its Configuration until the Agent it creates takes it over.
    if AgentProvisioningWork.objects.filter(AgentProvisioningWork.in_flight(),
                                            configuration_id=configuration.id).exists():
        raise Conflict("An Agent provisioning in progress uses this configuration. Wait for it to finish.")


def _referenced_message(agent_ids: list[str]) -> str:
    listed = f" ({', '.join(agent_ids)})" if agent_ids else ""
    return (f"Agents{listed} use this configuration. "
            "Point them at another configuration or delete them first.")[:256]
