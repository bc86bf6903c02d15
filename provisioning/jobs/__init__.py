"""Jobs: one convergent function per work job, ``run(claim) -> Outcome``.

A job observes, compares with the desired state and does only what is missing, so running
it twice is harmless. It never writes the work row: the queue applies its Outcome fenced.
The work row names its job (``ControllerWork.job``).
"""

from __future__ import annotations

from collections.abc import Callable

from occ.models import ControllerWork, WorkJob
from provisioning.jobs import agent_delete, agent_stop, namespace, provision, revision
from provisioning.jobs.context import Claim
from provisioning.outcomes import Fail, Outcome

Job = Callable[[Claim], Outcome]

JOBS: dict[str, Job] = {
    WorkJob.NAMESPACE: namespace.run,
    WorkJob.REVISION: revision.run,
    WorkJob.AGENT_STOP: agent_stop.run,
    WorkJob.AGENT_DELETE: agent_delete.run,
    WorkJob.PROVISION: provision.run,
}


def _unsupported(claim: Claim) -> Outcome:
    return Fail("UNSUPPORTED_WORK")


def job_for(work: ControllerWork) -> Job:
    """The job the row names (an unknown name fails the work: a row written by a newer version)."""
    return JOBS.get(work.job, _unsupported)


__all__ = ["JOBS", "Job", "job_for"]
