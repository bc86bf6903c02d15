from __future__ import annotations

from django.db import transaction
from django.db.models import Count

from occ.commands.namespaces import NamespaceCreate
from occ.errors import Conflict, Denial, Forbidden, fit_message
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import ControllerWork, Namespace, NamespaceStatus, NamespaceTarget, WorkJob, WorkState
from occ.models.work import namespace_deleted_key, namespace_ready_key
from occ.selectors.namespaces import get_live_namespace
from occ.services.actors import actor_for_principal_id
from occ.services.audit import audit_record
from occ.services.presets import presets_remove_untouched_defaults, presets_seed_defaults, untouched_defaults
from occ.services.work import work_enqueue


def namespace_create(*, actor: Actor, command: NamespaceCreate) -> Namespace:
    name, existing_namespace = command.name, command.existing_namespace
    with transaction.atomic():
        authorize(actor, Action.CREATE, Kind.NAMESPACE)
        if existing_namespace is not None:
            authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        taken = Namespace.objects.filter(name=name).first()
        if taken is not None:
            message = ("The name belongs to a deleted Namespace and stays reserved."
                       if taken.is_tombstoned else "A Namespace with this name already exists.")
            raise Conflict(message)
        if existing_namespace is not None and Namespace.objects.live().filter(
                existing_namespace=existing_namespace).exists():
            raise Conflict("Another Namespace already uses that existing namespace.")
        namespace = Namespace.objects.create(name=name, existing_namespace=existing_namespace)
        work_enqueue(key=namespace_ready_key(namespace.id), job=WorkJob.NAMESPACE, namespace_id=namespace.id,
                     actor_id=actor.id, namespace_target=NamespaceTarget.READY)
        presets = presets_seed_defaults(actor=actor, namespace=namespace)
        audit_record(actor=actor, action="openclaw.namespaces.create", namespace_id=namespace.id,
                     resource_kind=Kind.NAMESPACE, resource_id=namespace.id,
                     details={"existingNamespace": existing_namespace is not None,
                              "presetIds": [preset.id for preset in presets]})
    return namespace


def _remaining_resources(namespace: Namespace) -> dict[str, list[str]]:
    """What blocks deletion: every resource but the untouched default Presets (which go with
    the Namespace)."""
    untouched = [preset.id for preset in untouched_defaults(namespace)]
    remaining = {
        "agents": list(namespace.agents.values_list("id", flat=True)[:5]),
        "configurations": list(namespace.configurations.values_list("id", flat=True)[:5]),
        "secrets": list(namespace.secrets.filter(owner_agent__isnull=True).values_list("id", flat=True)[:5]),
        "presets": list(namespace.presets.exclude(id__in=untouched).values_list("id", flat=True)[:5]),
    }
    return {kind: ids for kind, ids in remaining.items() if ids}


def _not_empty_message(remaining: dict[str, list[str]]) -> str:
    parts = [f"{kind} ({', '.join(ids)})" for kind, ids in remaining.items()]
    message = "The Namespace still holds " + "; ".join(parts) + ". Delete them first."
    return fit_message(message)


def namespace_delete(*, actor: Actor, namespace_id: str) -> Namespace:
    """Queue teardown of an empty Namespace (202 ``deleting``).

    Repeating while teardown runs changes nothing. After a terminal failure only the
    initiator may requeue, unless the initiator lost permission (takeover, audited).
    """
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id, for_update=True)
        authorize(actor, Action.DELETE, Kind.NAMESPACE, namespace_id=namespace.id)
        remaining = _remaining_resources(namespace)
        if remaining:
            raise Conflict(_not_empty_message(remaining), code="NAMESPACE_NOT_EMPTY")
        deletions = ControllerWork.objects.filter(namespace=namespace, namespace_target=NamespaceTarget.DELETED)
        latest = deletions.order_by("-created_at").first()
        if namespace.status == NamespaceStatus.DELETING and latest is not None and not latest.is_terminal:
            return namespace
        if namespace.status == NamespaceStatus.PROVISIONING:
            raise Conflict("The Namespace is still being prepared. Delete it once it is ready or failed.")
        if ControllerWork.objects.filter(namespace=namespace, state__in=[WorkState.QUEUED, WorkState.CLAIMED]).exists():
            raise Conflict("The Namespace still has work in progress. Try again when it has finished.")
        removed_presets = presets_remove_untouched_defaults(actor=actor, namespace=namespace)
        takeover = False
        if latest is not None and latest.state == WorkState.FAILED_PERMANENT and latest.actor_id != actor.id:
            initiator = actor_for_principal_id(latest.actor_id)
            if initiator is not None and allowed(initiator, Action.DELETE, Kind.NAMESPACE,
                                                 namespace_id=namespace.id):
                raise Forbidden(
                    "Only the person who started this deletion can retry it.",
                    denial=Denial(actor_id=actor.id, action=Action.DELETE, resource_kind=Kind.NAMESPACE,
                                  namespace_id=namespace.id, resource_id=namespace.id,
                                  reason="not_initiator"),
                )
            takeover = True
        sequence = deletions.aggregate(n=Count("idempotency_key"))["n"] + 1
        work_enqueue(key=namespace_deleted_key(namespace.id, sequence), job=WorkJob.NAMESPACE,
                     namespace_id=namespace.id, actor_id=actor.id, namespace_target=NamespaceTarget.DELETED)
        namespace.status = NamespaceStatus.DELETING
        namespace.save(update_fields=["status", "updated_at"])
        audit_record(actor=actor, action="openclaw.namespaces.delete", namespace_id=namespace.id,
                     resource_kind=Kind.NAMESPACE, resource_id=namespace.id,
                     details={"takeover": takeover, "attempt": sequence, "removedDefaultPresets": removed_presets})
    return namespace
