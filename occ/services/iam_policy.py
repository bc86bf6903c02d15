"""Writes to a Namespace's IAM policy (spec §2.13, §3.3).

Roles are immutable sets of ``action:kind`` permissions; access bindings made here bind a
Role of the Namespace to one subject on one exact resource of the Namespace. Installation-
and Namespace-wide grants, Groups and Restrictions are operator-only. A Namespace administrator
(``administer:namespace``, not ``installation:administer``) never grants more than they hold:
``_check_role_grantable`` and ``_check_binding_grantable`` (docs/access.md, "Managing a
Namespace's access"). Service principals are made and deleted here for both scopes: a
Namespace's, and the Installation's own (no Namespace, ``installation:administer``).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from occ.commands.iam import AccessBindingCreate, RoleCreate, ServicePrincipalCreate, split_permission
from occ.errors import Conflict, Denial, Forbidden, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import PARENT_KINDS, Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import (
    AccessBinding,
    Agent,
    AgentRevision,
    AgentStatus,
    Configuration,
    Namespace,
    Preset,
    Principal,
    PrincipalKind,
    Role,
    Secret,
)
from occ.selectors.iam import administers_installation, policy_namespace, role_grantable, service_principal_get
from occ.services.agent_secret_access import AGENT_SECRET_ACCESS_ROLE
from occ.services.audit import audit_record

SERVICE_PRINCIPAL_KIND = "service_principal"


def _refusal(actor: Actor, namespace: Namespace, value: str, where: str, target_id: str | None) -> Forbidden:
    action, kind = split_permission(value)
    return Forbidden(
        f"You cannot grant {value}: you do not hold it {where}. A Namespace administrator grants only "
        "what they hold; ask an Installation administrator.",
        denial=Denial(actor_id=actor.id, action=action, resource_kind=kind, namespace_id=namespace.id,
                      resource_id=target_id, reason="grant_beyond_own"))


def _check_role_grantable(actor: Actor, namespace: Namespace, permissions: list[str]) -> None:
    """A Role a Namespace administrator makes holds only what they hold throughout the Namespace."""
    grantable = set(role_grantable(actor, namespace.id, permissions))
    for value in permissions:
        if value not in grantable:
            raise _refusal(actor, namespace, value, "throughout this Namespace", None)


def _check_binding_grantable(actor: Actor, namespace: Namespace, role: Role, kind: Kind, resource_id: str) -> None:
    """Binding ``role`` on one resource: each of its permissions that would apply there (of the
    resource's kind on it; of a kind living inside it, such as an Agent's revisions, throughout
    the Namespace) must be held by a Namespace administrator."""
    if administers_installation(actor):
        return
    for value in role.permissions:
        action, role_kind = split_permission(value)
        if role_kind == kind:
            if not allowed(actor, Action(action), kind, namespace_id=namespace.id, resource_id=resource_id):
                raise _refusal(actor, namespace, value, "on this resource", resource_id)
        elif PARENT_KINDS.get(Kind(role_kind)) == kind:
            _check_role_grantable(actor, namespace, [value])


def role_create(*, actor: Actor, namespace_id: str, command: RoleCreate) -> Role:
    name, stored = command.name, command.stored_permissions
    if name == AGENT_SECRET_ACCESS_ROLE:
        raise command.refused("name", "That Role name is reserved for OCC's own use.")
    with transaction.atomic():
        namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
        _check_role_grantable(actor, namespace, stored)
        if Role.objects.filter(namespace=namespace, name=name).exists():
            raise Conflict("A Role with this name already exists in this Namespace.")
        try:
            with transaction.atomic():
                role = Role.objects.create(namespace=namespace, name=name, permissions=stored)
        except IntegrityError:
            raise Conflict("A Role with this name already exists in this Namespace.") from None
        audit_record(actor=actor, action="openclaw.iam.roles.create", namespace_id=namespace.id,
                     resource_kind="role", resource_id=role.id, details={"permissions": stored})
    return role


def role_delete(*, actor: Actor, namespace_id: str, role_id: str) -> None:
    with transaction.atomic():
        namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
        role = Role.objects.select_for_update().filter(namespace=namespace, id=role_id, system=False).first()
        if role is None:
            raise NotFound("The Role does not exist in this Namespace.")
        bound = list(role.bindings.order_by("created_at").values_list("id", flat=True)[:5])
        if bound:
            raise Conflict(f"The Role is still bound ({', '.join(bound)}). Delete those access bindings first.")
        role.delete()
        audit_record(actor=actor, action="openclaw.iam.roles.delete", namespace_id=namespace.id,
                     resource_kind="role", resource_id=role_id)


def _check_subject(namespace: Namespace, command: AccessBindingCreate) -> Principal:
    """A person, a service principal of this Namespace, or the principal of a live Agent here."""
    principal = Principal.objects.select_related("agent").filter(id=command.subject_id).first()
    if principal is None:
        raise command.refused("subject_id", "The subject does not exist.")
    if principal.kind == PrincipalKind.HUMAN:
        return principal
    if principal.namespace_id != namespace.id:
        raise command.refused("subject_id", "A service principal can be bound only inside its own Namespace.")
    if principal.agent is not None and principal.agent.status == AgentStatus.DELETING:
        raise command.refused("subject_id", "The subject's Agent is being deleted.")
    return principal


def _check_target(namespace: Namespace, command: AccessBindingCreate) -> None:
    kind, resource_id = command.kind, command.resource_id
    missing = command.refused("resource_id", "The target resource does not exist in this Namespace.")
    deleting = command.refused("resource_id", "The target Agent is being deleted.")
    if kind == Kind.NAMESPACE:
        if resource_id != namespace.id:
            raise command.refused("resource_id", "A namespace target must be the Namespace of the path.")
    elif kind == Kind.AGENT:
        agent = Agent.objects.filter(namespace=namespace, id=resource_id).first()
        if agent is None:
            raise missing
        if agent.status == AgentStatus.DELETING:
            raise deleting
    elif kind == Kind.AGENT_REVISION:
        revision = AgentRevision.objects.select_related("agent").filter(namespace=namespace, id=resource_id).first()
        if revision is None:
            raise missing
        if revision.agent.status == AgentStatus.DELETING:
            raise deleting
    elif kind == Kind.CONFIGURATION:
        if not Configuration.objects.filter(namespace=namespace, id=resource_id).exists():
            raise missing
    elif kind == Kind.SECRET:
        # Driver-owned runtime credentials are not Secrets of the API.
        if not Secret.objects.filter(namespace=namespace, id=resource_id, owner_agent__isnull=True).exists():
            raise missing
    elif kind == Kind.PRESET:
        if not Preset.objects.filter(namespace=namespace, id=resource_id).exists():
            raise missing
    else:  # credential sources, service accounts: none exist yet
        raise missing


def _check_role_for_target(role: Role, command: AccessBindingCreate) -> None:
    pairs = [split_permission(p) for p in role.permissions]
    if any(action == Action.CREATE for action, _ in pairs):
        raise command.refused("role_id", "A Role holding a create permission cannot be bound to an exact resource.")
    if not any(role_kind == command.resource_kind for _, role_kind in pairs):
        raise command.refused("role_id", "The Role has no permission for the target's resource kind.")


def access_binding_create(*, actor: Actor, namespace_id: str, command: AccessBindingCreate) -> AccessBinding:
    """Bind the command's Role to its subject on its exact resource; the caller must be able to
    read that resource."""
    resource_kind, resource_id = command.kind, command.resource_id
    with transaction.atomic():
        namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
        principal = _check_subject(namespace, command)
        # Locked so a concurrent Role delete cannot remove it under the new binding.
        role = Role.objects.select_for_update().filter(namespace=namespace, id=command.role_id, system=False).first()
        if role is None:
            raise command.refused("role_id", "roleId must name a Role of this Namespace.")
        _check_target(namespace, command)
        _check_role_for_target(role, command)
        authorize(actor, Action.READ, resource_kind, namespace_id=namespace.id, resource_id=resource_id)
        _check_binding_grantable(actor, namespace, role, resource_kind, resource_id)
        fields = {"principal": principal, "role": role, "namespace": namespace,
                  "resource_kind": resource_kind.value, "resource_id": resource_id}
        if AccessBinding.objects.filter(**fields).exists():
            raise Conflict("This subject already holds this Role on this resource.")
        try:
            with transaction.atomic():
                binding = AccessBinding.objects.create(**fields)
        except IntegrityError:
            raise Conflict("This subject already holds this Role on this resource.") from None
        audit_record(actor=actor, action="openclaw.iam.access_bindings.create", namespace_id=namespace.id,
                     resource_kind="access_binding", resource_id=binding.id,
                     details={"subjectId": principal.id, "roleId": role.id, "target": {
                         "resourceKind": resource_kind.value, "resourceId": resource_id}})
    return binding


def access_binding_delete(*, actor: Actor, namespace_id: str, binding_id: str) -> None:
    with transaction.atomic():
        namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
        binding = AccessBinding.objects.select_for_update().filter(namespace=namespace, id=binding_id).first()
        if binding is None:
            raise NotFound("The access binding does not exist in this Namespace.")
        if binding.resource_id is None:
            raise Conflict("Namespace-wide bindings are managed by operators, not through this API.")
        details = {"subjectId": binding.principal_id, "roleId": binding.role_id,
                   "target": {"resourceKind": binding.resource_kind, "resourceId": binding.resource_id}}
        binding.delete()
        audit_record(actor=actor, action="openclaw.iam.access_bindings.delete", namespace_id=namespace.id,
                     resource_kind="access_binding", resource_id=binding_id, details=details)


def service_principal_create(*, actor: Actor, namespace_id: str | None, command: ServicePrincipalCreate) -> Principal:
    """A service principal with no grants; keys are issued separately. ``namespace_id=None``
    makes an Installation service principal, which belongs to no Namespace
    (``installation:administer``, as issuing its keys asks)."""
    name = command.name
    with transaction.atomic():
        if namespace_id is None:
            authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
            namespace = None
        else:
            namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
        principal = Principal.objects.create(kind=PrincipalKind.SERVICE, name=name, namespace=namespace)
        audit_record(actor=actor, action="openclaw.iam.service_principals.create",
                     namespace_id=namespace.id if namespace else None,
                     resource_kind=SERVICE_PRINCIPAL_KIND, resource_id=principal.id)
    return principal


def service_principal_delete(*, actor: Actor, namespace_id: str | None, principal_id: str) -> Principal:
    """Delete a service principal of the scope (``namespace_id=None``: of the Installation) with
    its keys and role bindings: requests with its keys are refused from then on. The audit
    event names every key and binding that went with it. Nobody deletes the principal they act
    as (their own key would stop working mid-request)."""
    with transaction.atomic():
        found = service_principal_get(actor=actor, namespace_id=namespace_id, principal_id=principal_id)
        principal = Principal.objects.select_for_update().filter(id=found.id).first()
        if principal is None:
            raise NotFound("The service principal does not exist; it may have been deleted already.")
        if principal.id == actor.id:
            raise Conflict("This is the service principal you are acting as: delete it with another key "
                           "or while signed in as a person.")
        details = {"name": principal.name,
                   "revokedServiceKeys": sorted(principal.service_keys.values_list("id", flat=True)),
                   "removedAccessBindings": sorted(principal.bindings.values_list("id", flat=True))}
        principal.delete()
        audit_record(actor=actor, action="openclaw.iam.service_principals.delete", namespace_id=namespace_id,
                     resource_kind=SERVICE_PRINCIPAL_KIND, resource_id=principal_id, details=details)
    return found
