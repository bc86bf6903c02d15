"""What every job needs besides its claim: driver references built from OCC metadata only,
and re-authorization of the actor frozen on the work row.

Jobs re-authorize before every driver call and before they return a completion: a revoked
actor ends the work with ``AUTHORIZATION_DENIED``, one attributable denial audit event and
no driver call.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from django.db.models import Q

from occ.drivers.compute import (
    ComputeDriver,
    NamespaceRef,
    RevisionContext,
    RevisionRef,
    SecretReference,
    get_compute_driver,
)
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind, permission
from occ.iam.policy import allowed, load_with_policies
from occ.models import Agent, AgentRevision, AuditKind, AuditOutcome, ControllerWork, Namespace, Secret
from occ.services.actors import actor_for_principal_id
from occ.services.audit import audit_record
from provisioning.outcomes import Fail

AUTHORIZATION_DENIED = "AUTHORIZATION_DENIED"


class Claim(Protocol):
    """The part of provisioning.queue.Claim a job uses."""

    key: str
    token: str
    work: ControllerWork

    def check(self) -> None: ...

    def renew(self) -> None: ...

    def fenced(self) -> AbstractContextManager[None]: ...


class JobRefused(Exception):
    """The work can never succeed as it stands (a permanent failure with a safe code)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def compute_driver() -> ComputeDriver:
    return get_compute_driver()


# --- references for the driver ------------------------------------------------------------


def namespace_ref(namespace: Namespace) -> NamespaceRef:
    return NamespaceRef(id=namespace.id, name=namespace.name, existing_namespace=namespace.existing_namespace)


def revision_ref(revision: AgentRevision, agent: Agent) -> RevisionRef:
    return RevisionRef(
        id=revision.id, namespace_id=revision.namespace_id, agent_id=revision.agent_id, number=revision.number,
        spec=revision.spec, initial_workspace_files=dict(agent.initial_workspace_files or {}),
    )


def _secret_reference(secret: Secret) -> SecretReference:
    return SecretReference(secret_id=secret.id, driver_id=secret.driver_id, backend_name=secret.backend_name)


def revision_context(revision: AgentRevision) -> RevisionContext:
    """References (never values) for prepare and activate, from OCC's Secret metadata.

    Raises JobRefused("SECRET_UNAVAILABLE") when a Secret the snapshot names is gone.
    """
    spec = revision.spec
    wanted = spec.delivered_secret_ids
    # One read: the Namespace's bound Secrets and the Agent's own gateway password.
    rows = Secret.objects.filter(
        Q(namespace_id=revision.namespace_id, id__in=wanted, owner_agent__isnull=True)
        | Q(owner_agent_id=revision.agent_id, purpose=GATEWAY_PASSWORD_PURPOSE)).order_by("id")
    secrets: dict[str, Secret] = {}
    password = None
    for secret in rows:
        if secret.owner_agent_id is None:
            secrets[secret.id] = secret
        elif password is None:  # the first by id, as before
            password = secret
    if len(secrets) != len(wanted):
        raise JobRefused("SECRET_UNAVAILABLE")
    harness_id = spec.harness_secret_id
    environment = {name: _secret_reference(secrets[secret_id]) for name, secret_id in spec.bound_secret_ids.items()}
    return RevisionContext(
        harness_auth_method=spec.harness_auth_method,
        harness_secret=_secret_reference(secrets[harness_id]) if harness_id else None,
        secret_environment=environment,
        gateway_password=_secret_reference(password) if password else None,
    )


# --- re-authorization -----------------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    """One permission the work still needs, for the frozen actor or the Agent's own principal."""

    action: Action
    kind: Kind
    namespace_id: str | None = None
    resource_id: str | None = None
    subject: Literal["actor", "agent"] = "actor"


def worker_actor(work: ControllerWork) -> Actor | None:
    """The frozen actor with freshly loaded policy (every call reloads it)."""
    return actor_for_principal_id(work.actor_id, source=Source.WORKER)


def _worker_actors(work: ControllerWork, agent_id: str | None) -> tuple[Actor | None, Actor | None]:
    """The frozen actor and (with ``agent_id``) the Agent's own principal, each with a policy
    loaded now, in one statement; None for a principal that is gone."""
    actor, agent = load_with_policies(work.actor_id, agent_id=agent_id)
    return (None if actor is None else Actor(principal=actor[0], source=Source.WORKER, _policy=actor[1]),
            None if agent is None else Actor(principal=agent[0], source=Source.WORKER, _policy=agent[1]))


def authority(work: ControllerWork, needs: Iterable[Need], *,
              agent_id: str | None = None) -> tuple[Actor | None, Fail | None]:
    """The frozen actor with a fresh policy, and None when it (and, for ``agent`` needs, the
    Agent's principal) holds every permission; else a permanent failure that records one
    denial audit event."""
    needs = list(needs)
    wants_agent = agent_id is not None and any(need.subject == "agent" for need in needs)
    actor, agent_actor = _worker_actors(work, agent_id if wants_agent else None)
    for need in needs:
        subject = agent_actor if need.subject == "agent" else actor
        if subject is None or not allowed(subject, need.action, need.kind, namespace_id=need.namespace_id,
                                          resource_id=need.resource_id):
            return actor, denied(work, actor, need)
    return actor, None


def reauthorize(work: ControllerWork, needs: Iterable[Need], *, agent_id: str | None = None) -> Fail | None:
    """``authority``'s failure alone: None when every permission is still held."""
    return authority(work, needs, agent_id=agent_id)[1]


def denied(work: ControllerWork, actor: Actor | None, need: Need) -> Fail:
    resource_id = need.resource_id
    if need.kind == Kind.NAMESPACE and resource_id is None and need.action != Action.CREATE:
        resource_id = need.namespace_id
    details = {
        "reason": "actor_revoked" if actor is None else "no_matching_grant",
        "permission": permission(need.action, need.kind),
        "subject": "agent_service_principal" if need.subject == "agent" else "actor",
        "workKey": work.idempotency_key,
        "actorId": work.actor_id,
    }

    def record_denial() -> None:
        audit_record(
            actor=actor, source=Source.WORKER.value, action=f"openclaw.authorization.{need.kind}.{need.action}",
            namespace_id=work.namespace_id, resource_kind=need.kind, resource_id=resource_id, details=details,
            kind=AuditKind.AUTHORIZATION_DENIAL, outcome=AuditOutcome.DENIED,
        )

    return Fail(AUTHORIZATION_DENIED, effects=record_denial)


def revision_needs(revision: AgentRevision) -> list[Need]:
    """Spec §3.5 for revision work: deploy on the Agent, read on the Configuration, and
    ``secret:operate`` on every delivered Secret for the actor and the Agent's principal."""
    ns = revision.namespace_id
    needs = [
        Need(Action.DEPLOY, Kind.AGENT, ns, revision.agent_id),
        Need(Action.READ, Kind.CONFIGURATION, ns, revision.configuration_id),
    ]
    for secret_id in revision.spec.delivered_secret_ids:
        needs.append(Need(Action.OPERATE, Kind.SECRET, ns, secret_id))
        needs.append(Need(Action.OPERATE, Kind.SECRET, ns, secret_id, subject="agent"))
    return needs


def lifecycle_audit(work: ControllerWork, *, action: str, resource_kind: str, resource_id: str,
                    details: dict[str, Any], outcome: AuditOutcome = AuditOutcome.SUCCEEDED,
                    actor: Actor | None = None) -> None:
    """A worker lifecycle event, attributed to the frozen actor (``actor``: as this attempt
    last loaded it; otherwise it is read now). Call inside the fenced commit."""
    assert actor is None or actor.id == work.actor_id, "lifecycle events belong to the frozen actor"
    audit_record(
        actor=actor or worker_actor(work), source=Source.WORKER.value, action=action, namespace_id=work.namespace_id,
        resource_kind=resource_kind, resource_id=resource_id,
        details={"workKey": work.idempotency_key, "actorId": work.actor_id, **details},
        kind=AuditKind.LIFECYCLE, outcome=outcome,
    )
