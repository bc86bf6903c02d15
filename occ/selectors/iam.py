"""Reads of a Namespace's IAM policy (spec §2.13).

Every policy route, read or write, requires ``read`` on the exact Namespace and either
``installation:administer`` (the anchor's rule) or ``administer:namespace`` on it (a Namespace
administrator, who never grants more than they hold: ``occ.services.iam_policy``). System Roles
(the built-in administrator, per-Namespace system Roles) are not part of the policy API and stay hidden.
"""

from __future__ import annotations

from collections.abc import Iterable

from occ.commands.iam import split_permission
from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, allowed_throughout, authorize
from occ.models import AccessBinding, Namespace, Principal, PrincipalKind, Role
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.paging import moment_page

PAGE_SIZE = 50


def _every(_row_id: str) -> bool:
    """The policy lists' per-row filter: managing the Namespace's policy reads all of it."""
    return True


def policy_namespace(*, actor: Actor, namespace_id: str, for_update: bool = False) -> Namespace:
    """The Namespace whose policy ``actor`` may manage, or Forbidden / NotFound. Decided on the
    id before the Namespace is looked up, so a made-up id and one the caller may not manage get
    the same 403."""
    if not manages_namespace_access(actor, namespace_id):
        authorize(actor, Action.ADMINISTER, Kind.NAMESPACE, namespace_id=namespace_id)  # the denial
    namespace = get_live_namespace(namespace_id, for_update=for_update)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    return namespace


def administers_installation(actor: Actor) -> bool:
    """Whether ``actor`` manages every Namespace's access without the limits a Namespace
    administrator has (``installation:administer``)."""
    return allowed(actor, Action.ADMINISTER, Kind.INSTALLATION)


def manages_namespace_access(actor: Actor, namespace_id: str) -> bool:
    """Whether ``actor`` may manage the Namespace's policy (beside ``read`` on it, which
    ``policy_namespace`` checks once the Namespace is found)."""
    return administers_installation(actor) or allowed(actor, Action.ADMINISTER, Kind.NAMESPACE,
                                                      namespace_id=namespace_id)


def role_grantable(actor: Actor, namespace_id: str, permissions: Iterable[str]) -> list[str]:
    """Those of ``permissions`` ("action:kind") ``actor`` may put in a Role of the Namespace: all
    for an Installation administrator; for a Namespace administrator those they hold on every
    resource of the kind there (a Role can be bound on any of them)."""
    if administers_installation(actor):
        return list(permissions)
    return [value for value in permissions
            if allowed_throughout(actor, *_pair(value), namespace_id=namespace_id)]


def _pair(value: str) -> tuple[Action, Kind]:
    action, kind = split_permission(value)
    return Action(action), Kind(kind)


def _roles(namespace: Namespace):
    return Role.objects.filter(namespace=namespace, system=False)


def role_page(*, actor: Actor, namespace_id: str, after: str = "",
              page_size: int = PAGE_SIZE) -> tuple[list[Role], str | None]:
    """One page of the Namespace's policy Roles, oldest first, keyset on ``(created_at, id)``,
    and the next page's cursor (None on the last page)."""
    namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
    return moment_page(_roles(namespace), field="created_at", after=after, readable=_every, page_size=page_size)


def role_get(*, actor: Actor, namespace_id: str, role_id: str) -> Role:
    namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
    role = _roles(namespace).filter(id=role_id).first()
    if role is None:
        raise NotFound("The Role does not exist in this Namespace.")
    return role


def access_binding_page(*, actor: Actor, namespace_id: str, after: str = "",
                        page_size: int = PAGE_SIZE) -> tuple[list[AccessBinding], str | None]:
    """One page of the bindings scoped to the Namespace (exact-resource and Namespace-wide ones),
    oldest first, keyset on ``(created_at, id)``, and the next page's cursor (None on the last)."""
    namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
    return moment_page(AccessBinding.objects.filter(namespace=namespace), field="created_at", after=after,
                       readable=_every, page_size=page_size)


def namespace_bindings(namespace: Namespace) -> list[AccessBinding]:
    """Every binding of a Namespace the caller has already read through ``policy_namespace``
    (``access_binding_page`` pages them), oldest first, without reading it again."""
    return list(AccessBinding.objects.filter(namespace=namespace).order_by("created_at", "id"))


def access_binding_get(*, actor: Actor, namespace_id: str, binding_id: str) -> AccessBinding:
    namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
    binding = AccessBinding.objects.filter(namespace=namespace, id=binding_id).first()
    if binding is None:
        raise NotFound("The access binding does not exist in this Namespace.")
    return binding


def _namespace_service_principals(namespace: Namespace):
    # Agent-owned service principals are exposed through their Agent, not here.
    return Principal.objects.filter(kind=PrincipalKind.SERVICE, namespace=namespace, agent__isnull=True)


def scoped_service_principals(*, actor: Actor, namespace_id: str | None):
    """The non-Agent service principals of one scope, for someone who may manage them: the
    Namespace's (``policy_namespace``), or with ``namespace_id=None`` the Installation's own,
    which belong to no Namespace (``installation:administer``; an Agent's always has one)."""
    if namespace_id is None:
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        return Principal.objects.filter(kind=PrincipalKind.SERVICE, namespace__isnull=True)
    return _namespace_service_principals(policy_namespace(actor=actor, namespace_id=namespace_id))


def service_principal_page(*, actor: Actor, namespace_id: str, after: str = "",
                           page_size: int = PAGE_SIZE) -> tuple[list[Principal], str | None]:
    """One page of the Namespace's own service principals (not its Agents'), oldest first,
    keyset on ``(created_at, id)``, and the next page's cursor (None on the last page)."""
    return moment_page(scoped_service_principals(actor=actor, namespace_id=namespace_id), field="created_at",
                       after=after, readable=_every, page_size=page_size)


def service_principal_get(*, actor: Actor, namespace_id: str | None, principal_id: str) -> Principal:
    """One service principal of the scope (``namespace_id=None``: of the Installation)."""
    principal = scoped_service_principals(actor=actor, namespace_id=namespace_id).filter(id=principal_id).first()
    if principal is None:
        raise NotFound("The service principal does not exist in this Namespace." if namespace_id else
                       "The Installation has no such service principal; it may have been deleted.")
    return principal
