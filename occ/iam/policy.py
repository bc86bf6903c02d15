"""Exact-resource authorization (spec §3.4).

A Policy holds one principal's bindings and the restrictions that may apply to it, loaded
with two queries; every decision after that is in memory, so list filtering costs no
queries per item.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from occ.errors import Denial, Forbidden
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind, permission
from occ.models import AccessBinding, Principal, Restriction


@dataclass(frozen=True)
class _Grant:
    permissions: frozenset[str]
    namespace_id: str | None
    resource_kind: str | None
    resource_id: str | None


@dataclass(frozen=True)
class _Deny:
    action: str
    resource_kind: str
    namespace_id: str | None
    resource_id: str | None


class Policy:
    def __init__(self, grants: list[_Grant], denies: list[_Deny]) -> None:
        self._grants = grants
        self._denies = denies

    @classmethod
    def load(cls, principal: Principal) -> Policy:
        bindings = AccessBinding.objects.filter(principal=principal).select_related("role")
        grants = [
            _Grant(frozenset(b.role.permissions), b.namespace_id, b.resource_kind, b.resource_id)
            for b in bindings
        ]
        restrictions = Restriction.objects.filter(Q(principal=principal) | Q(principal__isnull=True))
        denies = [
            _Deny(r.action, r.resource_kind, r.namespace_id, r.resource_id) for r in restrictions
        ]
        return cls(grants, denies)

    def allows(self, action: Action, kind: Kind, *, namespace_id: str | None,
               resource_id: str | None) -> bool:
        wanted = permission(action, kind)
        if not any(self._grant_covers(g, wanted, kind, namespace_id, resource_id) for g in self._grants):
            return False
        return not any(
            d.action == action and d.resource_kind == kind
            and d.namespace_id in (None, namespace_id)
            and d.resource_id in (None, resource_id)
            for d in self._denies
        )

    @staticmethod
    def _grant_covers(grant: _Grant, wanted: str, kind: Kind, namespace_id: str | None,
                      resource_id: str | None) -> bool:
        if wanted not in grant.permissions:
            return False
        if grant.namespace_id is None:  # Installation-wide
            return True
        if kind == Kind.INSTALLATION or namespace_id != grant.namespace_id:
            return False
        if grant.resource_kind is None:  # Namespace-wide
            return True
        # Exact resource: only the Role's permissions of the target's own kind apply.
        return grant.resource_kind == kind and resource_id is not None and grant.resource_id == resource_id


def _in_scope(actor: Actor, kind: Kind, namespace_id: str | None) -> bool:
    scope = actor.scope_namespace_id
    if scope is None:
        return True
    return kind != Kind.INSTALLATION and namespace_id == scope


def _target_id(action: Action, kind: Kind, namespace_id: str | None, resource_id: str | None) -> str | None:
    # A Namespace is its own exact resource.
    if kind == Kind.NAMESPACE and resource_id is None and action != Action.CREATE:
        return namespace_id
    return resource_id


def allowed(actor: Actor, action: Action, kind: Kind, *, namespace_id: str | None = None,
            resource_id: str | None = None) -> bool:
    """Whether ``actor`` may do ``action`` on the exact resource. ``resource_id`` None means
    the collection (``create``) or, for kind ``namespace``, use ``namespace_id``."""
    resource_id = _target_id(action, kind, namespace_id, resource_id)
    if not _in_scope(actor, kind, namespace_id):
        return False
    return actor.policy.allows(action, kind, namespace_id=namespace_id, resource_id=resource_id)


def authorize(actor: Actor, action: Action, kind: Kind, *, namespace_id: str | None = None,
              resource_id: str | None = None) -> None:
    """Raise Forbidden (carrying what the denial audit needs) unless allowed."""
    if allowed(actor, action, kind, namespace_id=namespace_id, resource_id=resource_id):
        return
    resource_id = _target_id(action, kind, namespace_id, resource_id)
    reason = "out_of_scope" if not _in_scope(actor, kind, namespace_id) else "no_matching_grant"
    raise Forbidden(denial=Denial(
        actor_id=actor.id, action=action.value, resource_kind=kind.value,
        namespace_id=namespace_id, resource_id=resource_id, reason=reason,
    ))
