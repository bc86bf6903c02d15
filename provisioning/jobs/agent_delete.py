"""Agent delete work ``agent:<id>:deleted:<n>`` (spec §6.7, §4.12).

If Stop or Delete cancelled a provisioning of the Agent that left an effect without a
receipt, the work first defers until one worker lease has passed since the cancellation
(no attempt used): a stale provisioning worker may still be inside that driver call. Then it
retires every revision, deletes the Agent's driver-owned runtime credentials in the
driver, then finalizes in the one fenced completion transaction: the runtime-credential
Secrets (metadata now, values once it commits), the revisions, the Agent, its service
principal with its keys, every access binding on the Agent or its revisions or held by its
principal, Restrictions on them, and the Agent's other lifecycle work rows. Provisioning
records stay (they answer a repeated request id) and get their transport effect's removal
receipt in that same transaction. Nothing is removed unless it commits under a live claim.
"""

from __future__ import annotations

from occ.iam.permissions import Action, Kind
from occ.models import (
    AccessBinding,
    Agent,
    AgentRevision,
    AgentStatus,
    ControllerWork,
    Principal,
    Restriction,
    ServiceKey,
    WorkJob,
)
from occ.selectors.runtime import agent_ref
from occ.services.agent_lifecycle import access_removed_with
from occ.services.secrets import runtime_credentials_delete
from provisioning.jobs.context import (
    Claim,
    Need,
    compute_driver,
    lifecycle_audit,
    reauthorize,
    revision_ref,
    worker_actor,
)
from provisioning.jobs.provision import cancelled_effect_wait, record_removal_receipts
from provisioning.outcomes import Complete, Defer, Fail, Outcome

AGENT_DELETED = "AGENT_DELETED"
PROVISIONING_CANCELLATION_PENDING = "PROVISIONING_CANCELLATION_PENDING"


def run(claim: Claim) -> Outcome:
    work = claim.work
    agent = Agent.objects.filter(id=work.agent_id, namespace_id=work.namespace_id).first()
    if agent is None:
        return Complete(AGENT_DELETED)  # already finalized: nothing left to do
    if agent.status != AgentStatus.DELETING:
        return Complete("SUPERSEDED_TARGET")
    wait = cancelled_effect_wait(agent.id)
    if wait > 0:
        return Defer(PROVISIONING_CANCELLATION_PENDING, delay_seconds=wait)
    needs = [Need(Action.DELETE, Kind.AGENT, agent.namespace_id, agent.id)]
    driver = compute_driver()
    revisions = list(AgentRevision.objects.filter(agent=agent).order_by("-number"))
    if not all(revision.spec.pinned_to(driver.pin) for revision in revisions):
        return Fail("COMPUTE_DRIVER_CHANGED")
    for revision in revisions:
        if denial := reauthorize(work, needs):
            return denial
        claim.renew()
        driver.retire_revision(revision_ref(revision, agent))
    if denial := reauthorize(work, needs):
        return denial
    claim.renew()
    driver.delete_runtime_credentials(agent_ref(agent))
    if denial := reauthorize(work, needs):
        return denial
    return Complete(AGENT_DELETED, effects=lambda: _finalize(work))


def _finalize(work: ControllerWork) -> None:
    agent = Agent.objects.select_for_update().filter(id=work.agent_id).first()
    if agent is None or agent.status != AgentStatus.DELETING:
        return
    actor = worker_actor(work)
    credential_ids = runtime_credentials_delete(agent=agent, actor=actor)
    binding_ids, restriction_ids = access_removed_with(agent)
    principal_ids = sorted(Principal.objects.filter(agent=agent).values_list("id", flat=True))
    key_ids = sorted(ServiceKey.objects.filter(principal_id__in=principal_ids).values_list("id", flat=True))
    revision_ids = sorted(AgentRevision.objects.filter(agent=agent).values_list("id", flat=True))
    work_keys = sorted(ControllerWork.objects.filter(agent_id=agent.id).exclude(
        idempotency_key=work.idempotency_key).exclude(job=WorkJob.PROVISION)
        .values_list("idempotency_key", flat=True))
    settled = record_removal_receipts(agent_id=agent.id, work_key=work.idempotency_key, secret_ids=credential_ids)

    AccessBinding.objects.filter(id__in=binding_ids).delete()
    Restriction.objects.filter(id__in=restriction_ids).delete()
    ServiceKey.objects.filter(id__in=key_ids).delete()
    ControllerWork.objects.filter(idempotency_key__in=work_keys).delete()
    Agent.objects.filter(id=agent.id).update(active_revision=None)
    AgentRevision.objects.filter(id__in=revision_ids).delete()
    Principal.objects.filter(id__in=principal_ids).delete()
    Agent.objects.filter(id=agent.id).delete()
    lifecycle_audit(work, action="openclaw.agents.deleted", resource_kind=Kind.AGENT, resource_id=agent.id,
                    details={"name": agent.name, "servicePrincipalIds": principal_ids, "revisionIds": revision_ids,
                             "removedAccessBindings": binding_ids, "removedRestrictions": restriction_ids,
                             "removedServiceKeys": key_ids, "runtimeCredentialSecretIds": credential_ids,
                             "removedWorkKeys": work_keys, "settledProvisioningWorkIds": settled})
