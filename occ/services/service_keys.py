"""Service API keys: issuance and revocation (spec §3.6).

Only callers holding ``installation:administer`` outside any Namespace scope (a human
session or an Installation-scoped key) manage keys. The plaintext token leaves this module
once, in the return value of ``service_key_create``; only its digest is stored and audit
events carry identifiers only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from occ.commands.service_keys import ServiceKeyCreate
from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.keys import create_key_record
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import Principal, PrincipalKind, ServiceKey
from occ.services.audit import audit_record

SERVICE_KEY_KIND = "service_key"


@dataclass(frozen=True)
class IssuedKey:
    record: ServiceKey
    token: str  # plaintext, shown once


def _key_principal(command: ServiceKeyCreate) -> Principal:
    """The non-Agent service principal a key may be issued for, matching the key's scope."""
    principal = (Principal.objects.select_related("namespace")
                 .filter(id=command.service_principal_id).first())
    if principal is None or (principal.namespace is not None and principal.namespace.is_tombstoned):
        raise NotFound("The service principal does not exist.")
    if principal.kind != PrincipalKind.SERVICE or principal.agent_id is not None:
        raise command.not_a_key_principal()
    if principal.namespace_id != command.namespace_id:
        raise command.not_the_principal_scope()
    return principal


def service_key_create(*, actor: Actor, command: ServiceKeyCreate) -> IssuedKey:
    """A key for the command's service principal; the plaintext token is returned once."""
    namespace_id, expires_in = command.namespace_id, command.lifetime_seconds
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        principal = _key_principal(command)
        expires_at: datetime = timezone.now() + timedelta(seconds=expires_in)
        record, token = create_key_record(principal_id=principal.id, namespace_id=namespace_id, name=command.name,
                                          expires_at=expires_at, created_by=actor.id)
        audit_record(actor=actor, action="openclaw.service_keys.create", namespace_id=namespace_id,
                     resource_kind=SERVICE_KEY_KIND, resource_id=record.id,
                     details={"servicePrincipalId": principal.id, "expiresInSeconds": expires_in})
    return IssuedKey(record=record, token=token)


def service_key_revoke(*, actor: Actor, key_id: str) -> str:
    """Delete the key record; later requests with it get 401. The principal and its bindings stay."""
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        record = ServiceKey.objects.select_for_update().filter(id=key_id).first()
        if record is None:
            raise NotFound("The service key does not exist or was already revoked.")
        namespace_id, principal_id = record.namespace_id, record.principal_id
        record.delete()
        audit_record(actor=actor, action="openclaw.service_keys.revoke", namespace_id=namespace_id,
                     resource_kind=SERVICE_KEY_KIND, resource_id=key_id,
                     details={"servicePrincipalId": principal_id})
    return key_id
