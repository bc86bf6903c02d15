"""While an Agent provisioning owns its Agent (spec §4.12): competing edits (of the Agent and
of the Configuration it created) and manual deploys are refused, and Stop or Delete of the
Agent cancel the provisioning.

A provisioning owns its Agent while its status is ``queued``, ``running`` or ``failed``: a
failed provisioning can still be retried (``POST …/retry``) and would then hand off its
first revision, so a manual deploy or edit in between would race with it. Stop or Delete
releases the Agent by cancelling the provisioning; ``succeeded`` and ``cancelled`` own
nothing.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models.functions import Now

from occ.errors import Conflict
from occ.iam.actor import Actor
from occ.iam.permissions import Kind
from occ.models import Agent, AgentProvisioningWork, ControllerWork, WorkState
from occ.services.audit import audit_record
from occ.timestamps import rfc3339

PROVISIONING_CANCELLED = "PROVISIONING_CANCELLED"
CANCELLED_MESSAGE = "The Agent was stopped or deleted while it was being provisioned; the provisioning was cancelled."


def owning_provisioning(agent_id: str) -> AgentProvisioningWork | None:
    """The provisioning that owns the Agent, if any."""
    return AgentProvisioningWork.objects.filter(AgentProvisioningWork.owning(), agent_id=agent_id).first()


def refuse_while_provisioning(agent: Agent, *, owner_key: str | None = None) -> None:
    """409 while a provisioning owns the Agent. With ``owner_key`` (the provisioning's own
    handoff), 409 unless exactly that provisioning still owns it: a cancelled one deploys nothing."""
    owner = owning_provisioning(agent.id)
    owner_id = owner.work_id if owner is not None else None
    if owner_key is None and owner_id is not None:
        raise Conflict("A provisioning owns this Agent until it hands off its first revision. Wait for it to "
                       "finish, or stop the Agent to cancel the provisioning.")
    if owner_key is not None and owner_id != owner_key:
        raise Conflict("The provisioning was cancelled; it no longer deploys this Agent.", code=PROVISIONING_CANCELLED)


def refuse_configuration_edit_while_provisioning(configuration_id: str) -> None:
    """409 while a provisioning owns the Agent this Configuration was created for: its first
    revision must deploy the document that admission checked, not a later edit."""
    if AgentProvisioningWork.objects.filter(AgentProvisioningWork.owning(), configuration_id=configuration_id).exists():
        raise Conflict("A provisioning owns the Agent of this Configuration until it hands off its first revision. "
                       "Wait for it to finish, or stop the Agent to cancel the provisioning.")


def provisioning_cancel_for_agent(*, actor: Actor, agent: Agent, cause: str) -> list[str]:
    """Cancel every provisioning that owns ``agent``, in the caller's transaction (which holds
    the Agent's row lock). Returns the cancelled work ids.

    Work not yet claimed fails at once (``PROVISIONING_CANCELLED``); claimed work is left to
    its worker, whose next fenced step sees the cancellation and hands nothing off. The
    cancellation time (database clock) starts the lease the Agent's deletion waits out.
    """
    rows = list(AgentProvisioningWork.objects.select_for_update()
                .filter(AgentProvisioningWork.owning(), agent_id=agent.id).order_by("work_id"))
    for row in rows:
        now = _database_now(row)
        row.cancelled_at = now
        row.progress = {**row.progress, "cancelledAt": rfc3339(now), "cancelledBy": cause,
                        "error": {"disposition": "permanent", "code": PROVISIONING_CANCELLED,
                                  "message": CANCELLED_MESSAGE}}
        row.save(update_fields=["cancelled_at", "progress", "updated_at"])
        ControllerWork.objects.filter(pk=row.work_id, state=WorkState.QUEUED).update(
            state=WorkState.FAILED_PERMANENT, completed_at=now, updated_at=now, reason_code=PROVISIONING_CANCELLED,
            last_attempt_code=PROVISIONING_CANCELLED, claim_token=None, lease_expires_at=None)
    work_ids = [row.work_id for row in rows]
    if work_ids:
        audit_record(actor=actor, action="openclaw.agents.provision.cancel", namespace_id=agent.namespace_id,
                     resource_kind=Kind.AGENT, resource_id=agent.id, details={"workIds": work_ids, "cause": cause})
    return work_ids


def _database_now(row: AgentProvisioningWork) -> datetime:
    """Leases run on the database clock; so does the cancellation that starts one."""
    now = (AgentProvisioningWork.objects.filter(pk=row.pk).annotate(db_now=Now())
           .values_list("db_now", flat=True).first())
    assert now is not None
    return now
