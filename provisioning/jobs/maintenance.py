"""Compute maintenance (from beat): the driver reports what it supervises, this job compares
it with the desired state and asks the driver to restart only what should still run.

A gateway is restarted when its Agent is active, wants to run, and the dead gateway served
its active revision; anything else (a stopped or deleted Agent, a superseded revision, a
Secret gone) is left down. Running it twice is harmless: the driver restarts a gateway only
while it is still dead and its backoff has elapsed.
"""

from __future__ import annotations

import logging

from occ.drivers.compute import ComputeDriver, RestartDue
from occ.models import Agent, AgentRevision, AgentStatus, DesiredRuntimeState
from provisioning.jobs.context import JobRefused, compute_driver, revision_context, revision_ref

logger = logging.getLogger(__name__)


def maintain_compute(driver: ComputeDriver | None = None) -> None:
    driver = driver or compute_driver()
    for due in driver.maintain():
        try:
            _restart_if_wanted(driver, due)
        except Exception:
            logger.exception("compute maintenance: the restart of %s (revision %s) failed",
                             due.agent_id, due.revision_id)


def _restart_if_wanted(driver: ComputeDriver, due: RestartDue) -> None:
    agent = Agent.objects.filter(id=due.agent_id).first()
    if (agent is None or agent.status != AgentStatus.ACTIVE
            or agent.desired_runtime_state != DesiredRuntimeState.RUNNING
            or agent.active_revision_id != due.revision_id):
        return
    revision = AgentRevision.objects.filter(id=due.revision_id).first()
    if revision is None:
        return
    try:
        context = revision_context(revision)
    except JobRefused:
        return
    driver.restart_revision(revision_ref(revision, agent), context)
