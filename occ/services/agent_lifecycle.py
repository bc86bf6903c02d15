"""Stop, start and delete an Agent: each one transaction of the desired state + work row + audit.

They record what the Agent should be; the worker's jobs (provisioning/jobs: agent_stop,
revision, agent_delete) make it so. A start runs the revision the Agent last ran again.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Count, Q

from occ.errors import (
    Conflict,
    Denial,
    Forbidden,
)
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import (
    BUDGET_EXCEEDED,
    AccessBinding,
    Agent,
    AgentRevision,
    AgentStatus,
    AgentTarget,
    ControllerWork,
    DesiredRuntimeState,
    NamespaceStatus,
    Principal,
    Restriction,
    Secret,
    WorkJob,
    WorkState,
)
from occ.models.work import agent_deleted_key, agent_started_key, agent_stopped_key
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.services.actors import actor_for_principal_id
from occ.services.audit import audit_record
from occ.services.budget_guards import refuse_over_budget
from occ.services.deploy import PENDING_STATES, authorize_secret_delivery, refuse_deleting
from occ.services.locks import share_locked
from occ.services.provisioning_guards import provisioning_cancel_for_agent, refuse_while_provisioning
from occ.services.work import work_enqueue

# The outcomes of revision work after which its revision was the Agent's active one.
ACTIVATED_CODES = ("REVISION_ACTIVATED", "REVISION_ALREADY_ACTIVE")


# --- stop ---------------------------------------------------------------------------------------


def agent_stop(*, actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    """Record ``desiredRuntimeState: stopped`` and queue the stop work (202). Spec §6.6.

    Repeating while a stop is pending changes nothing; after a deploy, stop queues again.
    """
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id)
        agent = get_agent(namespace, agent_id, for_update=True)
        authorize(actor, Action.OPERATE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
        refuse_deleting(agent)
        provisioning_cancel_for_agent(actor=actor, agent=agent, cause="stop")
        stops = ControllerWork.objects.filter(agent_id=agent.id, agent_target=AgentTarget.STOPPED)
        if agent.desired_runtime_state == DesiredRuntimeState.STOPPED and stops.filter(
                state__in=PENDING_STATES).exists():
            return agent
        sequence = stops.aggregate(n=Count("idempotency_key"))["n"] + 1
        agent.desired_runtime_state, agent.stopped_reason = DesiredRuntimeState.STOPPED, ""
        agent.save(update_fields=["desired_runtime_state", "stopped_reason", "updated_at"])
        work_enqueue(key=agent_stopped_key(agent.id, sequence), job=WorkJob.AGENT_STOP, namespace_id=namespace.id,
                     actor_id=actor.id, agent_id=agent.id, agent_target=AgentTarget.STOPPED)
        audit_record(actor=actor, action="openclaw.agents.stop", namespace_id=namespace.id,
                     resource_kind=Kind.AGENT, resource_id=agent.id,
                     details={"attempt": sequence, "activeRevisionId": agent.active_revision_id})
    return agent


# --- start --------------------------------------------------------------------------------------


def last_active_revision(agent: Agent) -> AgentRevision | None:
    """The revision the Agent last ran: the newest one whose revision work activated it."""
    activated = ControllerWork.objects.filter(agent_id=agent.id, job=WorkJob.REVISION, state=WorkState.SUCCEEDED,
                                              reason_code__in=ACTIVATED_CODES).values("revision_id")
    return AgentRevision.objects.filter(agent=agent, id__in=activated).order_by("-number").first()


def agent_start(*, actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    """Record ``desiredRuntimeState: running`` and queue the revision work that brings the
    stopped Agent back on the revision it last ran (202). The inverse of ``agent_stop``.

    Needs ``agent:operate`` on the Agent (as stop does), and what running that revision needs,
    which its work re-checks before every driver call: ``agent:deploy``, read on its
    Configuration, ``secret:operate`` on every Secret it delivers (the caller and the Agent's
    own principal). The revision's deployment record stays as it ended: the start is a work row
    of its own (``agent_revision:<rev>:start:<n>``). Repeating while a start (or a deployment)
    is pending, or on an Agent that runs, changes nothing. 409 while deleting, while a provisioning owns the Agent,
    when the Namespace is not ready, or when the Agent never ran (deploy it instead).
    """
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id, for_update=True)
        agent = get_agent(namespace, agent_id, for_update=True)
        authorize(actor, Action.OPERATE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
        refuse_deleting(agent)
        refuse_while_provisioning(agent)
        if agent.stopped_reason == BUDGET_EXCEEDED:
            refuse_over_budget(agent)
        if agent.desired_runtime_state == DesiredRuntimeState.RUNNING and (
                agent.active_revision_id is not None or ControllerWork.objects.filter(
                    agent_id=agent.id, job=WorkJob.REVISION, state__in=PENDING_STATES).exists()):
            return agent  # it runs, or a start or a deployment is already bringing it up
        if namespace.status != NamespaceStatus.READY:
            raise Conflict(f"The Namespace is {namespace.status}; Agents can be started only once it is ready.",
                           code="NAMESPACE_NOT_READY")
        revision = last_active_revision(agent)
        if revision is None:
            raise Conflict("The Agent has never run, so there is no revision to start. Deploy it instead.")
        _authorize_revision_run(actor, agent, revision)
        sequence = _starts(agent).aggregate(n=Count("idempotency_key"))["n"] + 1
        agent.desired_runtime_state, agent.stopped_reason = DesiredRuntimeState.RUNNING, ""
        agent.save(update_fields=["desired_runtime_state", "stopped_reason", "updated_at"])
        work_enqueue(key=agent_started_key(revision.id, sequence), job=WorkJob.REVISION, namespace_id=namespace.id,
                     actor_id=actor.id, agent_id=agent.id, revision_id=revision.id)
        audit_record(actor=actor, action="openclaw.agents.start", namespace_id=namespace.id,
                     resource_kind=Kind.AGENT, resource_id=agent.id,
                     details={"attempt": sequence, "revisionId": revision.id, "revision": revision.number})
    return agent


def _starts(agent: Agent) -> Any:
    """The Agent's start work rows (``agent_started_key``)."""
    return ControllerWork.objects.filter(agent_id=agent.id, job=WorkJob.REVISION,
                                         idempotency_key__startswith="agent_revision:",
                                         idempotency_key__contains=":start:")


def _authorize_revision_run(actor: Actor, agent: Agent, revision: AgentRevision) -> None:
    """What the revision work re-checks, checked now so a refusal is this request's 403."""
    authorize(actor, Action.DEPLOY, Kind.AGENT, namespace_id=agent.namespace_id, resource_id=agent.id)
    authorize(actor, Action.READ, Kind.CONFIGURATION, namespace_id=agent.namespace_id,
              resource_id=revision.configuration_id)
    delivered = revision.spec.delivered_secret_ids
    secrets = list(share_locked(Secret.objects.filter(namespace_id=agent.namespace_id,
                                                      id__in=delivered).order_by("id")))
    if len(secrets) != len(delivered):
        raise Conflict("A Secret the Agent's last revision delivers no longer exists. Deploy a new version instead.")
    authorize_secret_delivery(actor, agent, secrets)


# --- delete -------------------------------------------------------------------------------------


def agent_delete(*, actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    """Mark the Agent ``deleting`` (desired stopped) and queue its teardown (202). Spec §6.7.

    Repeating while teardown is pending changes nothing. After a terminal failure only the
    initiator may requeue, unless the initiator lost ``agent:delete`` (takeover, audited).
    """
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id)
        agent = get_agent(namespace, agent_id, for_update=True)
        authorize(actor, Action.DELETE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
        provisioning_cancel_for_agent(actor=actor, agent=agent, cause="delete")
        deletions = ControllerWork.objects.filter(agent_id=agent.id, agent_target=AgentTarget.DELETED)
        latest = deletions.order_by("-created_at").first()
        if agent.status == AgentStatus.DELETING and latest is not None and not latest.is_terminal:
            return agent
        takeover = _takeover(actor, agent, latest)
        sequence = deletions.aggregate(n=Count("idempotency_key"))["n"] + 1
        agent.status = AgentStatus.DELETING
        agent.desired_runtime_state = DesiredRuntimeState.STOPPED
        agent.save(update_fields=["status", "desired_runtime_state", "updated_at"])
        work_enqueue(key=agent_deleted_key(agent.id, sequence), job=WorkJob.AGENT_DELETE, namespace_id=namespace.id,
                     actor_id=actor.id, agent_id=agent.id, agent_target=AgentTarget.DELETED)
        binding_ids, restriction_ids = access_removed_with(agent)
        audit_record(
            actor=actor, action="openclaw.agents.delete", namespace_id=namespace.id, resource_kind=Kind.AGENT,
            resource_id=agent.id,
            details={"attempt": sequence, "takeover": takeover,
                     "initiatingActorId": latest.actor_id if latest is not None else actor.id,
                     "accessBindingsRemovedOnCompletion": binding_ids,
                     "restrictionsRemovedOnCompletion": restriction_ids},
        )
    return agent


def _takeover(actor: Actor, agent: Agent, latest: ControllerWork | None) -> bool:
    """After a failed teardown: the initiator retries; another caller is refused while the
    initiator may still delete the Agent, and takes the work over once they may not."""
    if latest is None or latest.state != WorkState.FAILED_PERMANENT or latest.actor_id == actor.id:
        return False
    initiator = actor_for_principal_id(latest.actor_id)
    if initiator is not None and allowed(initiator, Action.DELETE, Kind.AGENT, namespace_id=agent.namespace_id,
                                         resource_id=agent.id):
        raise Forbidden(
            "Only the person who started this deletion can retry it.",
            denial=Denial(actor_id=actor.id, action=Action.DELETE.value, resource_kind=Kind.AGENT.value,
                          namespace_id=agent.namespace_id, resource_id=agent.id, reason="not_initiator",
                          extra={"initiatingActorId": latest.actor_id}),
        )
    return True


def access_removed_with(agent: Agent) -> tuple[list[str], list[str]]:
    """Ids of the access bindings and Restrictions that go with the Agent: those targeting it
    or its revisions, and those held by its service principal."""
    revision_ids = list(AgentRevision.objects.filter(agent=agent).values_list("id", flat=True))
    targets = Q(resource_kind=Kind.AGENT, resource_id=agent.id) | Q(resource_kind=Kind.AGENT_REVISION,
                                                                    resource_id__in=revision_ids)
    principal_ids = list(Principal.objects.filter(agent=agent).values_list("id", flat=True))
    bindings = AccessBinding.objects.filter(targets | Q(principal_id__in=principal_ids))
    restrictions = Restriction.objects.filter(targets | Q(principal_id__in=principal_ids))
    return sorted(bindings.values_list("id", flat=True)), sorted(restrictions.values_list("id", flat=True))
