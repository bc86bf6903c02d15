"""Namespace work: ``ready`` (ensure the tenant infrastructure) and ``deleted`` (tear it
down, tombstone the Namespace and remove its IAM policy)."""

from __future__ import annotations

from django.utils import timezone

from occ.drivers.compute import ComputeError
from occ.iam.permissions import Action, Kind
from occ.models import (
    AccessBinding,
    AuditOutcome,
    ControllerWork,
    Namespace,
    NamespaceStatus,
    NamespaceTarget,
    Principal,
    Restriction,
    Role,
    ServiceKey,
)
from provisioning.jobs.context import Claim, Need, compute_driver, lifecycle_audit, namespace_ref, reauthorize
from provisioning.outcomes import Complete, Defer, Fail, Outcome

SUPERSEDED_TARGET = "SUPERSEDED_TARGET"


def run(claim: Claim) -> Outcome:
    if claim.work.namespace_target == NamespaceTarget.DELETED:
        return run_delete(claim)
    return run_ready(claim)


# --- ready ------------------------------------------------------------------------------------


def _ready_needs(namespace: Namespace) -> list[Need]:
    needs = [
        Need(Action.CREATE, Kind.NAMESPACE),
        # The same grant, with deny Restrictions on this exact Namespace applied.
        Need(Action.CREATE, Kind.NAMESPACE, namespace.id, namespace.id),
    ]
    if namespace.existing_namespace:
        needs.append(Need(Action.ADMINISTER, Kind.INSTALLATION))
    return needs


def run_ready(claim: Claim) -> Outcome:
    work = claim.work
    namespace = Namespace.objects.filter(id=work.namespace_id).first()
    if namespace is None or namespace.is_tombstoned or namespace.status != NamespaceStatus.PROVISIONING:
        return Complete(SUPERSEDED_TARGET)
    if denial := reauthorize(work, _ready_needs(namespace)):
        return denial
    claim.renew()
    try:
        result = compute_driver().ensure_namespace(namespace_ref(namespace))
    except ComputeError as exc:
        if exc.retryable:
            raise
        code = exc.code
        return Fail(code, effects=lambda: _finish_ready(work, NamespaceStatus.FAILED, code))
    if not result.done:
        return Defer(result.pending_reason or "RECONCILIATION_PENDING")
    if denial := reauthorize(work, _ready_needs(namespace)):
        return denial
    return Complete("NAMESPACE_READY", effects=lambda: _finish_ready(work, NamespaceStatus.READY, "NAMESPACE_READY"))


def _finish_ready(work: ControllerWork, status: NamespaceStatus, code: str) -> None:
    """Inside the fenced completion: flip a still-provisioning Namespace and audit it."""
    namespace = Namespace.objects.select_for_update().filter(id=work.namespace_id).first()
    if namespace is None or namespace.is_tombstoned or namespace.status != NamespaceStatus.PROVISIONING:
        return
    namespace.status = status
    namespace.save(update_fields=["status", "updated_at"])
    failed = status == NamespaceStatus.FAILED
    lifecycle_audit(work, action="openclaw.namespaces.failed" if failed else "openclaw.namespaces.ready",
                    resource_kind=Kind.NAMESPACE, resource_id=namespace.id, details={"reasonCode": code},
                    outcome=AuditOutcome.FAILED if failed else AuditOutcome.SUCCEEDED)


# --- deleted ----------------------------------------------------------------------------------


def run_delete(claim: Claim) -> Outcome:
    work = claim.work
    namespace = Namespace.objects.filter(id=work.namespace_id).first()
    if namespace is None or namespace.is_tombstoned:
        return Complete("NAMESPACE_DELETED")  # already done: nothing left to tear down
    if namespace.status != NamespaceStatus.DELETING:
        return Complete(SUPERSEDED_TARGET)
    needs = [Need(Action.DELETE, Kind.NAMESPACE, namespace.id)]
    if denial := reauthorize(work, needs):
        return denial
    claim.renew()
    result = compute_driver().delete_namespace(namespace_ref(namespace))
    if not result.done:
        return Defer(result.pending_reason or "RECONCILIATION_PENDING")
    if denial := reauthorize(work, needs):
        return denial
    return Complete("NAMESPACE_DELETED", effects=lambda: _tombstone(work))


def _tombstone(work: ControllerWork) -> None:
    """Inside the fenced completion: tombstone the Namespace and remove its IAM policy.

    The Namespace keeps its row (its name stays reserved) and status; reads stop finding it.
    Removed: every access binding and Restriction scoped to it, its Roles, its service
    principals with their keys and bindings anywhere, and service keys scoped to it.
    """
    namespace = Namespace.objects.select_for_update().filter(id=work.namespace_id).first()
    if namespace is None or namespace.is_tombstoned or namespace.status != NamespaceStatus.DELETING:
        return
    principals = Principal.objects.filter(namespace=namespace, agent__isnull=True)
    principal_ids = sorted(principals.values_list("id", flat=True))
    bindings = (AccessBinding.objects.filter(namespace=namespace)
                | AccessBinding.objects.filter(principal_id__in=principal_ids)
                | AccessBinding.objects.filter(role__namespace=namespace))
    binding_ids = sorted(bindings.values_list("id", flat=True))
    restrictions = Restriction.objects.filter(namespace=namespace) | Restriction.objects.filter(
        principal_id__in=principal_ids)
    restriction_ids = sorted(restrictions.values_list("id", flat=True))
    keys = ServiceKey.objects.filter(namespace=namespace) | ServiceKey.objects.filter(principal_id__in=principal_ids)
    key_ids = sorted(keys.values_list("id", flat=True))
    role_ids = sorted(Role.objects.filter(namespace=namespace).values_list("id", flat=True))

    AccessBinding.objects.filter(id__in=binding_ids).delete()
    Restriction.objects.filter(id__in=restriction_ids).delete()
    ServiceKey.objects.filter(id__in=key_ids).delete()
    Role.objects.filter(id__in=role_ids).delete()
    Principal.objects.filter(id__in=principal_ids).delete()
    namespace.deleted_at = timezone.now()
    namespace.save(update_fields=["deleted_at", "updated_at"])
    lifecycle_audit(work, action="openclaw.namespaces.deleted", resource_kind=Kind.NAMESPACE,
                    resource_id=namespace.id,
                    details={"removedAccessBindings": binding_ids, "removedRoles": role_ids,
                             "removedRestrictions": restriction_ids, "removedServicePrincipals": principal_ids,
                             "removedServiceKeys": key_ids})
