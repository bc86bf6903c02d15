"""Let an Agent's own service principal consume Secrets (spec §3.4, "Agent SP as a second subject").

Deployment requires the Agent's principal to hold ``secret:operate`` on every Secret it
uses. Nothing implies that grant: this service creates it, as exact-resource bindings of
one system Role per Namespace that holds only ``operate:secret``. The caller needs its own
``secret:operate`` on each Secret (it cannot hand out what it could not use) and
``agent:update`` on the Agent; Installation ``administer`` is neither needed nor enough.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction

from occ.commands.agents import AgentSecretAccess
from occ.errors import Conflict, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import SECRET_OPERATE_PERMISSIONS, Action, Kind
from occ.iam.policy import authorize
from occ.models import AccessBinding, Agent, AgentStatus, Namespace, Principal, Role, Secret
from occ.selectors.namespaces import get_live_namespace
from occ.services.agents import held_or_locked_agent
from occ.services.audit import audit_record
from occ.services.checks import check_held_namespace

AGENT_SECRET_ACCESS_ROLE = "agent-secret-access"


@dataclass(frozen=True)
class SecretAccessGrant:
    agent: Agent
    service_principal_id: str
    secret_ids: list[str]
    created_binding_ids: list[str]


def secret_access_role(namespace: Namespace) -> tuple[Role, bool]:
    """The Namespace's system Role holding exactly ``operate:secret``, created on first use."""
    wanted = sorted(SECRET_OPERATE_PERMISSIONS)
    role = Role.objects.filter(namespace=namespace, name=AGENT_SECRET_ACCESS_ROLE).first()
    created = False
    if role is None:
        try:
            with transaction.atomic():
                role = Role.objects.create(namespace=namespace, name=AGENT_SECRET_ACCESS_ROLE,
                                           permissions=wanted, system=True)
                created = True
        except IntegrityError:
            # Another request created it first; use theirs.
            role = Role.objects.get(namespace=namespace, name=AGENT_SECRET_ACCESS_ROLE)
    if not role.system or sorted(role.permissions) != wanted:
        # Never bind a look-alike: it could carry more than operate:secret.
        raise Conflict("A Role named agent-secret-access exists that is not the system Role. "
                       "Rename or delete it, then retry.")
    return role, created


def agent_secret_access_grant(*, actor: Actor, namespace_id: str, agent_id: str, command: AgentSecretAccess,
                              namespace: Namespace | None = None, agent: Agent | None = None) -> SecretAccessGrant:
    """Give the Agent's service principal ``secret:operate`` on exactly these Secrets.

    Idempotent: bindings that already exist are kept, only missing ones are added, and
    every call is audited with the new binding ids (possibly none). ``namespace``, ``agent``:
    rows the caller's transaction already holds locked (a fenced provisioning step); otherwise
    the Namespace is read and the Agent locked here.
    """
    secret_ids = list(command.secret_ids)
    with transaction.atomic():
        if namespace is None:
            namespace = get_live_namespace(namespace_id)
        else:
            check_held_namespace(namespace, namespace_id)
        agent = held_or_locked_agent(namespace, agent_id, agent)
        authorize(actor, Action.UPDATE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
        if agent.status == AgentStatus.DELETING:
            raise Conflict("The Agent is being deleted; its access can no longer change.", code="AGENT_DELETING")
        found = set(
            Secret.objects.filter(namespace=namespace, id__in=secret_ids, owner_agent__isnull=True)
            .values_list("id", flat=True)
        )
        if len(found) != len(secret_ids):
            raise NotFound("A Secret does not exist in this Namespace.")
        for secret_id in secret_ids:
            authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret_id)
        principal: Principal = agent.service_principal
        role, role_created = secret_access_role(namespace)
        existing = set(
            AccessBinding.objects.filter(principal=principal, role=role, namespace=namespace,
                                         resource_kind=Kind.SECRET, resource_id__in=secret_ids)
            .values_list("resource_id", flat=True)
        )
        created = [
            AccessBinding.objects.create(principal=principal, role=role, namespace=namespace,
                                         resource_kind=Kind.SECRET, resource_id=secret_id)
            for secret_id in secret_ids if secret_id not in existing
        ]
        audit_record(
            actor=actor, action="openclaw.agents.secret_access.grant", namespace_id=namespace.id,
            resource_kind=Kind.AGENT, resource_id=agent.id,
            details={
                "servicePrincipalId": principal.id, "roleId": role.id, "roleCreated": role_created,
                "secretIds": secret_ids, "accessBindingIds": [b.id for b in created],
            },
        )
    return SecretAccessGrant(agent=agent, service_principal_id=principal.id, secret_ids=secret_ids,
                             created_binding_ids=[b.id for b in created])
