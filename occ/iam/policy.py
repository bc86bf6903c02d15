"""Exact-resource authorization (spec §3.4).

A Policy holds one principal's bindings and the restrictions that may apply to it, loaded
with one query (no model instances); every decision after that is in memory, so list filtering costs no
queries per item.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connection

from occ.errors import Denial, Forbidden
from occ.iam.permissions import Action, Kind
from occ.models import Principal

if TYPE_CHECKING:  # the Actor holds its Policy: a type-only import, the other way round
    from occ.iam.actor import Actor

# One round trip for the whole policy (it is loaded on every request): the principal's
# bindings with their Roles' permissions, then the restrictions that apply to it.
_POLICY_SQL = """
SELECT CAST(r.permissions AS text), NULL, b.namespace_id, b.resource_kind, b.resource_id
  FROM occ_accessbinding b JOIN occ_role r ON r.id = b.role_id
 WHERE b.principal_id = %s
UNION ALL
SELECT NULL, x.action, x.namespace_id, x.resource_kind, x.resource_id
  FROM occ_restriction x
 WHERE x.principal_id = %s OR x.principal_id IS NULL
"""


# The same in one round trip for a principal named by id and the service principal of an
# Agent (a worker re-authorizes both before every driver call and commit): the principal
# rows, their bindings, then the restrictions. Columns: what the row is, the principal it
# belongs to (NULL: a restriction on everyone), then five columns that depend on the first.
_PRINCIPALS_WITH_POLICY_SQL = """
SELECT 0, p.id, p.kind, p.name, CAST(p.user_id AS text), p.namespace_id, p.agent_id
  FROM occ_principal p
 WHERE p.id = %(principal)s OR p.agent_id = %(agent)s
UNION ALL
SELECT 1, b.principal_id, CAST(r.permissions AS text), NULL, b.namespace_id, b.resource_kind, b.resource_id
  FROM occ_accessbinding b JOIN occ_role r ON r.id = b.role_id JOIN occ_principal p ON p.id = b.principal_id
 WHERE p.id = %(principal)s OR p.agent_id = %(agent)s
UNION ALL
SELECT 2, x.principal_id, NULL, x.action, x.namespace_id, x.resource_kind, x.resource_id
  FROM occ_restriction x
 WHERE x.principal_id IS NULL
    OR x.principal_id IN (SELECT p.id FROM occ_principal p WHERE p.id = %(principal)s OR p.agent_id = %(agent)s)
"""

@dataclass(frozen=True)
class _Grant:
    namespace_id: str | None
    resource_kind: str | None
    resource_id: str | None

    def covers(self, kind: str, namespace_id: str | None, resource_id: str | None) -> bool:
        if self.namespace_id is None:  # Installation-wide
            return True
        if kind == Kind.INSTALLATION or namespace_id != self.namespace_id:
            return False
        if self.resource_kind is None:  # Namespace-wide
            return True
        # Exact resource: only the Role's permissions of the target's own kind apply.
        return self.resource_kind == kind and resource_id is not None and self.resource_id == resource_id


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
        with connection.cursor() as cursor:
            cursor.execute(_POLICY_SQL, [principal.id, principal.id])
            return cls._from_rows(cursor.fetchall())

    @classmethod
    def _from_rows(cls, rows: Iterable[tuple[str | None, ...]]) -> Policy:
        """Rows of ``(permissions, action, namespace_id, resource_kind, resource_id)``: a
        binding when ``permissions`` is set, else a restriction."""
        grants: dict[str, list[_Grant]] = {}
        denies: dict[str, list[_Deny]] = {}
        for permissions, action, namespace_id, resource_kind, resource_id in rows:
            if permissions is not None:  # a binding: its Role's permissions at its scope
                grant = _Grant(namespace_id, resource_kind, resource_id)
                for granted in set(json.loads(permissions)):
                    grants.setdefault(granted, []).append(grant)
            else:  # a restriction on this principal or on everyone
                denies.setdefault(f"{action}:{resource_kind}", []).append(_Deny(namespace_id, resource_id))
        return cls(grants, denies)

    def allows(self, action: Action, kind: Kind, *, namespace_id: str | None,
               resource_id: str | None) -> bool:
        wanted = f"{action.value}:{kind.value}"
        if not any(g.covers(kind, namespace_id, resource_id) for g in self._grants.get(wanted, ())):
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
            resource_id: str | None = None) -> bool:
    """Whether ``actor`` may do ``action`` on the exact resource. ``resource_id`` None means
    the collection (``create``) or, for kind ``namespace``, use ``namespace_id``."""
    resource_id = _target_id(action, kind, namespace_id, resource_id)
    if not _in_scope(actor, kind, namespace_id):
        return False
    return actor.policy.allows(action, kind, namespace_id=namespace_id, resource_id=resource_id)


def restricted(actor: Actor, action: Action, kind: Kind, *, namespace_id: str | None = None,
               resource_id: str | None = None) -> bool:
    """Whether a Restriction denies ``action`` on the exact resource (one action's Restriction
    may also bar another way to the same thing: a ``read_logs`` one bars ``administer``-based
    log reads)."""
    return actor.policy.restricts(action, kind, namespace_id=namespace_id,
                                  resource_id=_target_id(action, kind, namespace_id, resource_id))


def allowed_in(actor: Actor, action: Action, kind: Kind, *, namespace_id: str) -> Callable[[str], bool]:
    """``allowed`` for many resources of one kind in one Namespace (filtering a list): the
    answer is decided once when a Namespace-wide grant settles it for every resource."""
    if not _in_scope(actor, kind, namespace_id):
        return lambda _resource_id: False
    policy = actor.policy
    if policy.allows_every(action, kind, namespace_id=namespace_id):
        return lambda _resource_id: True
    return lambda resource_id: policy.allows(action, kind, namespace_id=namespace_id, resource_id=resource_id)


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


_PRINCIPAL_FIELDS = ["id", "kind", "name", "user_id", "namespace_id", "agent_id"]


def load_with_policies(principal_id: str | None, *, agent_id: str | None = None,
                       ) -> tuple[tuple[Principal, Policy] | None, tuple[Principal, Policy] | None]:
    """The principal ``principal_id`` and the service principal of Agent ``agent_id``, each
    with its freshly loaded policy, in one statement; None for either that does not exist."""
    principals: dict[str, Principal] = {}
    rows: dict[str, list[tuple[str | None, ...]]] = {}
    everyone: list[tuple[str | None, ...]] = []
    with connection.cursor() as cursor:
        cursor.execute(_PRINCIPALS_WITH_POLICY_SQL, {"principal": principal_id, "agent": agent_id})
        for what, owner, *columns in cursor.fetchall():
            if what == 0:  # a principal row (``created_at`` is left deferred)
                kind, name, user_id, namespace_id, owning_agent_id = columns
                principals[owner] = Principal.from_db(connection.alias, _PRINCIPAL_FIELDS, [
                    owner, kind, name, None if user_id is None else int(user_id), namespace_id, owning_agent_id])
            elif owner is None:
                everyone.append(tuple(columns))
            else:
                rows.setdefault(owner, []).append(tuple(columns))

    def with_policy(principal: Principal | None) -> tuple[Principal, Policy] | None:
        if principal is None:
            return None
        return principal, Policy._from_rows([*rows.get(principal.id, ()), *everyone])

    by_id = principals.get(principal_id) if principal_id is not None else None
    of_agent = next((p for p in principals.values() if agent_id is not None and p.agent_id == agent_id), None)
    return with_policy(by_id), with_policy(of_agent)
