"""Exact-resource authorization (spec §3.4).

A Policy holds one principal's bindings and the restrictions that may apply to it, loaded
with two queries (rows, no model instances); every decision after that is in memory, so list
filtering costs no queries per item.

Two rules reach past a binding's exact target, both for what is shared with one person
(issue 26, docs/access.md):

- a resource inside another (a revision inside its Agent, ``PARENT_KINDS``) is covered by a
  binding on exactly its parent, with the Role's permissions of the inner kind: an Agent's owner
  or a Developer it was shared with reads its revisions;
- a binding on exactly one resource whose Role may ``read`` that resource also lets its holder
  ``read`` the Namespace it lives in (its name, and lists filtered to what they may read), so a
  person an Agent was shared with can find it. That derived read never opens what needs the
  Namespace as a whole (its audit log): :func:`reads_whole_namespace`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from django.db.models import Q

from occ.errors import Denial, Forbidden
from occ.iam.permissions import PARENT_KINDS, Action, Kind, permission
from occ.models import AccessBinding, Principal, Restriction

if TYPE_CHECKING:  # the Actor holds its Policy: a type-only import, the other way round
    from occ.iam.actor import Actor


@dataclass(frozen=True)
class _Grant:
    namespace_id: str | None
    resource_kind: str | None
    resource_id: str | None
    via_resource: bool = False  # read:namespace derived from a binding on one resource inside it

    def covers(self, kind: str, namespace_id: str | None, resource_id: str | None,
               parent_id: str | None = None) -> bool:
        if self.namespace_id is None:  # Installation-wide
            return True
        if kind == Kind.INSTALLATION or namespace_id != self.namespace_id:
            return False
        if self.resource_kind is None:  # Namespace-wide
            return True
        # Exact resource: only the Role's permissions of the target's own kind apply, or of a kind
        # that lives inside the target (a revision of the bound Agent).
        if self.resource_kind == kind:
            return resource_id is not None and self.resource_id == resource_id
        return PARENT_KINDS.get(Kind(kind)) == self.resource_kind and parent_id is not None \
            and self.resource_id == parent_id


@dataclass(frozen=True)
class _Deny:
    namespace_id: str | None
    resource_id: str | None

    def matches(self, namespace_id: str | None, resource_id: str | None) -> bool:
        return self.namespace_id in (None, namespace_id) and self.resource_id in (None, resource_id)


class Policy:
    """Grants and denies indexed by ``action:kind``, so a decision looks at only the
    bindings that could apply (list filtering calls this once per item)."""

    def __init__(self, grants: dict[str, list[_Grant]], denies: dict[str, list[_Deny]]) -> None:
        self._grants = grants
        self._denies = denies

    @classmethod
    def load(cls, principal: Principal) -> Policy:
        return _policies([principal.id])[principal.id]

    def allows(self, action: Action, kind: Kind, *, namespace_id: str | None, resource_id: str | None,
               parent_id: str | None = None, via_resources: bool = True) -> bool:
        """``parent_id``: the resource ``resource_id`` lives in (a revision's Agent), when its kind
        has one; ``via_resources`` False: a Namespace read derived from a shared resource does
        not count."""
        wanted = f"{action.value}:{kind.value}"
        grants = self._grants.get(wanted, ())
        if not any(g.covers(kind, namespace_id, resource_id, parent_id) for g in grants
                   if via_resources or not g.via_resource):
            return False
        return not any(d.matches(namespace_id, resource_id) for d in self._denies.get(wanted, ()))

    def restricts(self, action: Action, kind: Kind, *, namespace_id: str | None, resource_id: str | None) -> bool:
        """Whether a Restriction denies ``action`` on the resource, whatever the grants."""
        return any(d.matches(namespace_id, resource_id) for d in self._denies.get(f"{action.value}:{kind.value}", ()))

    def reaches(self, namespace_id: str) -> bool:
        """Whether any binding could grant anything inside the Namespace: Installation-wide,
        or bound in it (Namespace-wide or on one of its resources)."""
        return any(grant.namespace_id in (None, namespace_id) for grants in self._grants.values() for grant in grants)

    def allows_every(self, action: Action, kind: Kind, *, namespace_id: str) -> bool:
        """Whether ``allows`` is true for every resource of ``kind`` in the Namespace: an
        Installation- or Namespace-wide grant covers them and no restriction could deny one."""
        wanted = f"{action.value}:{kind.value}"
        if any(deny.namespace_id in (None, namespace_id) for deny in self._denies.get(wanted, ())):
            return False
        return any(grant.namespace_id is None or (grant.namespace_id == namespace_id and grant.resource_kind is None)
                   for grant in self._grants.get(wanted, ()))


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
            resource_id: str | None = None, parent_id: str | None = None) -> bool:
    """Whether ``actor`` may do ``action`` on the exact resource. ``resource_id`` None means
    the collection (``create``) or, for kind ``namespace``, use ``namespace_id``; ``parent_id``
    is the resource it lives in for a kind of ``PARENT_KINDS`` (a revision's Agent)."""
    resource_id = _target_id(action, kind, namespace_id, resource_id)
    if not _in_scope(actor, kind, namespace_id):
        return False
    return actor.policy.allows(action, kind, namespace_id=namespace_id, resource_id=resource_id,
                               parent_id=parent_id)


def allowed_throughout(actor: Actor, action: Action, kind: Kind, *, namespace_id: str) -> bool:
    """Whether ``actor`` may do ``action`` on every resource of ``kind`` in the Namespace, now
    and created later: a grant bound on the Namespace or Installation-wide, no Restriction."""
    return _in_scope(actor, kind, namespace_id) and actor.policy.allows_every(action, kind, namespace_id=namespace_id)


def reads_whole_namespace(actor: Actor, namespace_id: str) -> bool:
    """``read:namespace`` from a Role bound on the Namespace or Installation-wide: not merely
    seeing the Namespace because one resource inside it was shared (its audit log needs this)."""
    return _in_scope(actor, Kind.NAMESPACE, namespace_id) and actor.policy.allows(
        Action.READ, Kind.NAMESPACE, namespace_id=namespace_id, resource_id=namespace_id, via_resources=False)


def restricted(actor: Actor, action: Action, kind: Kind, *, namespace_id: str | None = None,
               resource_id: str | None = None) -> bool:
    """Whether a Restriction denies ``action`` on the exact resource (one action's Restriction
    may also bar another way to the same thing: a ``read_logs`` one bars ``administer``-based
    log reads)."""
    return actor.policy.restricts(action, kind, namespace_id=namespace_id,
                                  resource_id=_target_id(action, kind, namespace_id, resource_id))


class Decision(Protocol):
    """``allowed_in``'s answer for one resource (``parent_id``: as for ``allowed``)."""

    def __call__(self, resource_id: str, parent_id: str | None = None) -> bool: ...


def allowed_in(actor: Actor, action: Action, kind: Kind, *, namespace_id: str) -> Decision:
    """``allowed`` for many resources of one kind in one Namespace (filtering a list): the
    answer is decided once when a Namespace-wide grant settles it for every resource."""
    policy = actor.policy
    settled: bool | None = None
    if not _in_scope(actor, kind, namespace_id):
        settled = False
    elif policy.allows_every(action, kind, namespace_id=namespace_id):
        settled = True

    def decide(resource_id: str, parent_id: str | None = None) -> bool:
        if settled is not None:
            return settled
        return policy.allows(action, kind, namespace_id=namespace_id, resource_id=resource_id, parent_id=parent_id)

    return decide


def authorize(actor: Actor, action: Action, kind: Kind, *, namespace_id: str | None = None,
              resource_id: str | None = None, parent_id: str | None = None) -> None:
    """Raise Forbidden (carrying what the denial audit needs) unless allowed."""
    if allowed(actor, action, kind, namespace_id=namespace_id, resource_id=resource_id, parent_id=parent_id):
        return
    resource_id = _target_id(action, kind, namespace_id, resource_id)
    reason = "out_of_scope" if not _in_scope(actor, kind, namespace_id) else "no_matching_grant"
    raise Forbidden(denial=Denial(
        actor_id=actor.id, action=action.value, resource_kind=kind.value,
        namespace_id=namespace_id, resource_id=resource_id, reason=reason,
    ))


def authorize_namespace_reach(actor: Actor, namespace_id: str) -> None:
    """Raise Forbidden unless the actor could be allowed anything in the Namespace (its scope
    admits it and some binding covers it). Decided on the id alone, before anything in the
    Namespace is looked up: for a Namespace the caller cannot see, a real id and a made-up
    one get the same 403, so the answer never tells what exists there."""
    in_scope = _in_scope(actor, Kind.NAMESPACE, namespace_id)
    if in_scope and actor.policy.reaches(namespace_id):
        return
    raise Forbidden(denial=Denial(
        actor_id=actor.id, action="access", resource_kind=Kind.NAMESPACE.value, namespace_id=namespace_id,
        resource_id=namespace_id, reason="no_grant_in_namespace" if in_scope else "out_of_scope",
    ))


def _policies(principal_ids: list[str]) -> dict[str, Policy]:
    """Each principal's Policy: its bindings with their Roles' permissions, its own restrictions
    and those on everyone. Two queries, however many principals."""
    grants: dict[str, dict[str, list[_Grant]]] = {principal_id: {} for principal_id in principal_ids}
    denies: dict[str, dict[str, list[_Deny]]] = {principal_id: {} for principal_id in principal_ids}
    bindings = AccessBinding.objects.filter(principal_id__in=principal_ids).values_list(
        "principal_id", "role__permissions", "namespace_id", "resource_kind", "resource_id")
    namespace_read = permission(Action.READ, Kind.NAMESPACE)
    for owner, permissions, namespace_id, resource_kind, resource_id in bindings:
        grant = _Grant(namespace_id, resource_kind, resource_id)
        held = set(permissions)
        for granted in held:
            grants[owner].setdefault(granted, []).append(grant)
        if resource_kind not in (None, Kind.NAMESPACE) and f"read:{resource_kind}" in held:
            # Whoever may read one resource may see the Namespace it lives in (module docstring).
            grants[owner].setdefault(namespace_read, []).append(
                _Grant(namespace_id, Kind.NAMESPACE, namespace_id, via_resource=True))
    restrictions = Restriction.objects.filter(Q(principal_id__in=principal_ids) | Q(principal__isnull=True))
    for owner, action, namespace_id, resource_kind, resource_id in restrictions.values_list(
            "principal_id", "action", "namespace_id", "resource_kind", "resource_id"):
        deny = _Deny(namespace_id, resource_id)
        for principal_id in principal_ids if owner is None else [owner]:
            denies[principal_id].setdefault(f"{action}:{resource_kind}", []).append(deny)
    return {principal_id: Policy(grants[principal_id], denies[principal_id]) for principal_id in principal_ids}


def load_with_policies(principal_id: str | None, *, agent_id: str | None = None,
                       ) -> tuple[tuple[Principal, Policy] | None, tuple[Principal, Policy] | None]:
    """The principal ``principal_id`` and the service principal of Agent ``agent_id``, each
    with its freshly loaded policy (a worker re-authorizes both before every driver call and
    commit), in three queries; None for either that does not exist."""
    wanted = Principal.objects.none()
    if principal_id is not None:
        wanted |= Principal.objects.filter(pk=principal_id)
    if agent_id is not None:
        wanted |= Principal.objects.filter(agent_id=agent_id)
    principals = list(wanted)
    policies = _policies([principal.id for principal in principals]) if principals else {}

    def with_policy(principal: Principal | None) -> tuple[Principal, Policy] | None:
        return None if principal is None else (principal, policies[principal.id])

    by_id = next((p for p in principals if principal_id is not None and p.id == principal_id), None)
    of_agent = next((p for p in principals if agent_id is not None and p.agent_id == agent_id), None)
    return with_policy(by_id), with_policy(of_agent)
