"""Agent stop work ``agent:<id>:stopped:<n>`` (spec §6.6).

Stops the active revision first, then every other revision pinned to this compute driver
(failed candidates, predecessors whose retirement failed), re-checking before each call
that the Agent still wants to be stopped. The completion clears the active pointer only if
it still names the revision that was stopped. Revisions, credentials and workspace stay.
"""

from __future__ import annotations

from django.utils import timezone

from occ.drivers.compute import ComputeDriver
from occ.iam.permissions import Action, Kind
from occ.models import Agent, AgentRevision, ControllerWork, DesiredRuntimeState
from provisioning.jobs.context import Claim, Need, compute_driver, lifecycle_audit, reauthorize, revision_ref
from provisioning.outcomes import Complete, Fail, Outcome

SUPERSEDED_TARGET = "SUPERSEDED_TARGET"


def _stop_wanted(agent_id: str) -> bool:
    return Agent.objects.filter(id=agent_id, desired_runtime_state=DesiredRuntimeState.STOPPED).exists()


def _pinned_revisions(agent: Agent, driver: ComputeDriver) -> list[AgentRevision] | None:
    """The Agent's revisions on this driver, active first, then newest first. None when the
    active revision is pinned to another driver (fail closed: it cannot be stopped here)."""
    revisions = list(AgentRevision.objects.filter(agent=agent).order_by("-number"))
    active = [r for r in revisions if r.id == agent.active_revision_id]
    if active and not active[0].spec.pinned_to(driver.pin):
        return None
    return active + [r for r in revisions if r.id != agent.active_revision_id and r.spec.pinned_to(driver.pin)]


def run(claim: Claim) -> Outcome:
    work = claim.work
    agent = Agent.objects.filter(id=work.agent_id, namespace_id=work.namespace_id).first()
    if agent is None or agent.desired_runtime_state != DesiredRuntimeState.STOPPED:
        return Complete(SUPERSEDED_TARGET)  # gone, or a later deploy wants it running
    needs = [Need(Action.OPERATE, Kind.AGENT, agent.namespace_id, agent.id)]
    driver = compute_driver()
    revisions = _pinned_revisions(agent, driver)
    if revisions is None:
        return Fail("COMPUTE_DRIVER_CHANGED")
    for revision in revisions:
        if not _stop_wanted(agent.id):
            return Complete(SUPERSEDED_TARGET)
        if denial := reauthorize(work, needs):
            return denial
        claim.renew()
        driver.stop_revision(revision_ref(revision, agent))
    if denial := reauthorize(work, needs):
        return denial
    stopped_active = agent.active_revision_id
    return Complete("AGENT_STOPPED", effects=lambda: _finish(work, stopped_active, [r.id for r in revisions]))


def _finish(work: ControllerWork, stopped_active: str | None, stopped: list[str]) -> None:
    """Inside the fenced completion: clear the pointer only if it still names the stopped one."""
    agent = Agent.objects.select_for_update().filter(id=work.agent_id).first()
    if agent is None:
        return
    cleared = False
    if stopped_active is not None and agent.desired_runtime_state == DesiredRuntimeState.STOPPED:
        cleared = Agent.objects.filter(id=agent.id, active_revision_id=stopped_active).update(
            active_revision_id=None, updated_at=timezone.now()) == 1
    lifecycle_audit(work, action="openclaw.agents.stopped", resource_kind=Kind.AGENT, resource_id=agent.id,
                    details={"stoppedRevisionIds": stopped, "clearedActiveRevisionId": stopped_active if cleared
                             else None})
