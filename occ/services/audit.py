"""Audit evidence. Mutations append inside their own transaction; denials commit alone."""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError, transaction

from occ.context import current_request_id
from occ.errors import Denial, DependencyUnavailable
from occ.iam.actor import Actor
from occ.models import AuditEvent, AuditKind, AuditOutcome

METADATA_KEY = "__occAuditMetadata"
SCHEMA_VERSION = 1


def _metadata(actor: Actor | None, source: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"schemaVersion": SCHEMA_VERSION}
    request_id = current_request_id.get()
    if request_id:
        meta["requestId"] = request_id
    if actor is not None:
        meta["source"] = actor.source.value
        meta["actor"] = {"id": actor.id, "kind": actor.principal.kind}
        if actor.key_id:
            meta["actor"]["serviceKeyId"] = actor.key_id
    elif source:
        meta["source"] = source
    return meta


def audit_record(
    *,
    actor: Actor | None,
    action: str,
    namespace_id: str | None = None,
    resource_kind: str | None = None,
    resource_id: str | None = None,
    details: dict[str, Any] | None = None,
    kind: AuditKind = AuditKind.MUTATION,
    outcome: AuditOutcome = AuditOutcome.SUCCEEDED,
    source: str | None = None,
) -> AuditEvent:
    """Append one event. Call inside the transaction of the change it records.

    ``details`` holds identifiers and safe facts only: never values, tokens or bodies.
    """
    details = dict(details or {})
    if METADATA_KEY in details:
        raise ValueError(f"{METADATA_KEY} is reserved")
    details[METADATA_KEY] = _metadata(actor, source)
    try:
        return AuditEvent.objects.create(
            kind=kind, actor_id=actor.id if actor else None, action=action,
            namespace_id=namespace_id, resource_kind=resource_kind, resource_id=resource_id,
            outcome=outcome, details=details,
        )
    except DatabaseError as exc:
        raise DependencyUnavailable("The audit log is unavailable; nothing was changed.") from exc


def audit_denial(denial: Denial, *, actor: Actor | None) -> None:
    """Commit one authorization_denial event on its own, before the 403 goes out.

    If it cannot be written the caller answers 503 instead of an unaudited 403.
    """
    details: dict[str, Any] = {"reason": denial.reason, "permission": f"{denial.action}:{denial.resource_kind}"}
    details.update(denial.extra)
    with transaction.atomic():
        audit_record(
            actor=actor, action=f"openclaw.authorization.{denial.resource_kind}.{denial.action}",
            namespace_id=denial.namespace_id, resource_kind=denial.resource_kind,
            resource_id=denial.resource_id, details=details,
            kind=AuditKind.AUTHORIZATION_DENIAL, outcome=AuditOutcome.DENIED,
        )
