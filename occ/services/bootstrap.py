"""First start of an Installation: the singleton, the administrators, and ``default``."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from occ.iam.keys import create_key_record
from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS, Kind
from occ.iam.roles import ADMINISTRATOR, BUILTIN_ROLES
from occ.models import (
    AccessBinding,
    AuditKind,
    Installation,
    Namespace,
    NamespaceTarget,
    Principal,
    PrincipalKind,
    Role,
    ServiceKey,
    WorkJob,
)
from occ.models.work import namespace_ready_key
from occ.services.audit import audit_record
from occ.services.presets import presets_seed_defaults
from occ.services.work import work_enqueue

ADMINISTRATOR_ROLE_NAME = ADMINISTRATOR
BOOTSTRAP_KEY_NAME = "bootstrap-admin"
DEFAULT_NAMESPACE_NAME = "default"


@dataclass
class BootstrapResult:
    installation: Installation
    created: bool
    admin_username: str
    admin_password: str | None = None  # only when generated now
    key: ServiceKey | None = None
    key_token: str | None = None  # shown once


class BootstrapMismatch(Exception):
    """The stored Installation is not what bootstrap would have created."""


def installation_verify() -> Installation:
    installation = Installation.objects.get()
    role = Role.objects.filter(namespace__isnull=True, name=ADMINISTRATOR_ROLE_NAME, system=True).first()
    if role is None:
        raise BootstrapMismatch("The built-in administrator Role is missing.")
    humans = AccessBinding.objects.filter(role=role, namespace__isnull=True, principal__kind=PrincipalKind.HUMAN)
    if not humans.exists():
        raise BootstrapMismatch("No human administrator is bound to the administrator Role.")
    return installation


def installation_bootstrap(*, name: str, admin_username: str, admin_password: str | None,
                           key_days: int = 30) -> BootstrapResult:
    """Create everything once; on an existing Installation verify it and issue nothing."""
    if Installation.objects.exists():
        return BootstrapResult(installation=installation_verify(), created=False, admin_username=admin_username)
    generated = admin_password is None
    password = admin_password or secrets.token_urlsafe(18)
    with transaction.atomic():
        installation = Installation.objects.create(name=name)
        user = get_user_model().objects.create_user(username=admin_username, password=password)
        human = Principal.objects.create(kind=PrincipalKind.HUMAN, name=admin_username, user=user)
        service = Principal.objects.create(kind=PrincipalKind.SERVICE, name="installation-administrator")
        role = Role.objects.create(name=ADMINISTRATOR_ROLE_NAME, permissions=list(ADMINISTRATOR_PERMISSIONS),
                                   system=True)
        for principal in (human, service):
            AccessBinding.objects.create(principal=principal, role=role)
        team_roles = [Role.objects.create(name=role_name, permissions=list(permissions))
                      for role_name, (_, permissions) in BUILTIN_ROLES.items() if role_name != ADMINISTRATOR]
        namespace = Namespace.objects.create(name=DEFAULT_NAMESPACE_NAME)
        work_enqueue(key=namespace_ready_key(namespace.id), job=WorkJob.NAMESPACE, namespace_id=namespace.id,
                     actor_id=human.id, namespace_target=NamespaceTarget.READY)
        presets = presets_seed_defaults(actor=None, namespace=namespace)
        key, token = create_key_record(
            principal_id=service.id, namespace_id=None, name=BOOTSTRAP_KEY_NAME,
            expires_at=timezone.now() + timedelta(days=key_days), created_by=human.id,
        )
        audit_record(
            actor=None, source="bootstrap", kind=AuditKind.BOOTSTRAP, action="openclaw.installation.bootstrap",
            resource_kind=Kind.INSTALLATION, resource_id=installation.id,
            details={"humanPrincipalId": human.id, "servicePrincipalId": service.id, "roleId": role.id,
                     "builtinRoleIds": [r.id for r in team_roles],
                     "namespaceId": namespace.id, "serviceKeyId": key.id,
                     "presetIds": [preset.id for preset in presets]},
        )
    return BootstrapResult(installation=installation, created=True, admin_username=admin_username,
                           admin_password=password if generated else None, key=key, key_token=token)
