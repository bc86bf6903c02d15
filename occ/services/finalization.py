"""Retrying a deployment whose finalization gave up (an operator's repair).

The revision job publishes a revision (the Agent's active pointer and its activation event,
one transaction) before it activates it on the compute backend and retires the predecessor.
If those steps keep failing, the work row ends ``failed`` while the revision stays active:
the deployment and the Agent's runtime say so (``occ.selectors.deployments``). Once the
cause is dealt with, this requeues the same work row: the next attempt finds the revision
already active, repeats activation and retirement (both idempotent) and completes
``REVISION_ALREADY_ACTIVE``. The worker re-authorizes the deployment's original actor, as
for every attempt.
"""

from __future__ import annotations

from django.db import transaction

from occ.errors import Conflict, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import Agent, AgentRevision, AgentStatus, ControllerWork, WorkState
from occ.models.work import revision_reconcile_key
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.services.audit import audit_record
from occ.services.work import work_requeue

RETRY_ACTION = "openclaw.agents.revision.finalize.retry"


def deployment_finalization_retry(*, actor: Actor, namespace_id: str, agent_id: str,
                                  revision_id: str) -> tuple[AgentRevision, ControllerWork]:
    """Requeue the failed work of the Agent's active revision (202), audited with it.

    Needs ``agent:deploy`` on the Agent (it re-runs that deployment's effects). 409 unless the
    revision is the Agent's active one and its work ended failed.
    """
    # Authorized on the ids first: whether the Agent or revision exists is not told to
    # someone who may not deploy it.
    authorize(actor, Action.DEPLOY, Kind.AGENT, namespace_id=namespace_id, resource_id=agent_id)
    with transaction.atomic():
        work = ControllerWork.objects.select_for_update().filter(
            idempotency_key=revision_reconcile_key(revision_id), namespace_id=namespace_id, agent_id=agent_id,
            revision_id=revision_id).first()
        namespace = get_live_namespace(namespace_id)
        agent = get_agent(namespace, agent_id, for_update=True)
        revision = AgentRevision.objects.filter(id=revision_id, agent=agent, namespace=namespace).first()
        if revision is None or work is None:
            raise NotFound("The deployment does not exist.")
        _check_retryable(agent, revision, work)
        previous_code = work.reason_code
        work_requeue(work=work)
        audit_record(actor=actor, action=RETRY_ACTION, namespace_id=namespace.id, resource_kind=Kind.AGENT,
                     resource_id=agent.id,
                     details={"revisionId": revision.id, "workKey": work.idempotency_key,
                              "previousReasonCode": previous_code, "deploymentActorId": work.actor_id})
    return revision, work


def _check_retryable(agent: Agent, revision: AgentRevision, work: ControllerWork) -> None:
    if agent.status != AgentStatus.ACTIVE:
        raise Conflict("The Agent is being deleted; its deployments are not retried.", code="AGENT_DELETING")
    if agent.active_revision_id != revision.id:
        raise Conflict("Only the Agent's active revision can have its finalization retried; deploy again instead.")
    if work.state != WorkState.FAILED_PERMANENT:
        raise Conflict("This deployment has not failed; there is nothing to retry.")
