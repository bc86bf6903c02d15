"""Share this Agent (issue 26): give a person or a service principal a level of access to one
Agent, or take a direct share back. Each is one transaction: the binding, the level it replaces,
and the audit event. Both need ``administer:agent`` on the Agent (its owner has it: delegation,
``occ.services.agents``)."""

from __future__ import annotations

from django.db import transaction

from occ.commands.iam import AgentShare
from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import AccessBinding, Agent, Principal, Role
from occ.selectors.agent_sharing import LEVEL_ROLES, share_subjects
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.services.audit import audit_record


def _authorized_agent(actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id, for_update=True)
    authorize(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    authorize(actor, Action.ADMINISTER, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    return agent


def agent_share(*, actor: Actor, namespace_id: str, agent_id: str, command: AgentShare) -> AccessBinding:
    """Bind the level's Role to the subject on exactly this Agent; a direct share the subject held
    at another level is replaced (one level per subject and Agent)."""
    with transaction.atomic():
        agent = _authorized_agent(actor, namespace_id, agent_id)
        subject = next((p for p in share_subjects(agent) if p.id == command.subject_id), None)
        if subject is None:
            raise command.refused("subject_id", "subjectId must name an active person or a service principal "
                                                "of this Namespace or the Installation.")
        roles = {role.name: role for role in Role.objects.select_for_update().filter(
            name__in=LEVEL_ROLES.values(), namespace__isnull=True)}
        role = roles.get(LEVEL_ROLES[command.level])
        if role is None:
            raise NotFound(f"The built-in Role {LEVEL_ROLES[command.level]!r} for this level was removed.")
        direct = AccessBinding.objects.filter(principal=subject, namespace_id=agent.namespace_id,
                                              resource_kind=Kind.AGENT.value, resource_id=agent.id,
                                              role__in=roles.values())
        replaced = sorted(direct.exclude(role=role).values_list("id", flat=True))
        AccessBinding.objects.filter(id__in=replaced).delete()
        binding = direct.filter(role=role).first() or AccessBinding.objects.create(
            principal=subject, role=role, namespace_id=agent.namespace_id, resource_kind=Kind.AGENT.value,
            resource_id=agent.id)
        audit_record(actor=actor, action="openclaw.agents.share", namespace_id=agent.namespace_id,
                     resource_kind=Kind.AGENT, resource_id=agent.id,
                     details={"subjectId": subject.id, "level": command.level, "roleId": role.id,
                              "bindingId": binding.id, "replacedBindingIds": replaced})
    return binding


def agent_unshare(*, actor: Actor, namespace_id: str, agent_id: str, binding_id: str) -> Principal:
    """Remove one direct share of this Agent (a binding on exactly it); the subject keeps what a
    Namespace or Installation Role gives them."""
    with transaction.atomic():
        agent = _authorized_agent(actor, namespace_id, agent_id)
        binding = (AccessBinding.objects.select_for_update().select_related("principal")
                   .filter(id=binding_id, namespace_id=agent.namespace_id, resource_kind=Kind.AGENT.value,
                           resource_id=agent.id).first())
        if binding is None:
            raise NotFound("This Agent has no such share.")
        principal = binding.principal
        binding.delete()
        audit_record(actor=actor, action="openclaw.agents.unshare", namespace_id=agent.namespace_id,
                     resource_kind=Kind.AGENT, resource_id=agent.id,
                     details={"subjectId": principal.id, "bindingId": binding_id, "roleId": binding.role_id})
    return principal
