"""Jobs: one convergent function per work shape, ``run(claim) -> Outcome``.

A job observes, compares with the desired state and does only what is missing, so running
it twice is harmless. It never writes the work row: the queue applies its Outcome fenced.
"""

from __future__ import annotations

from collections.abc import Callable

from occ.models import AgentTarget, ControllerWork, NamespaceTarget, WorkKind
from provisioning.jobs import agent_delete, agent_stop, namespace, provision, revision
from provisioning.jobs.context import Claim
from provisioning.outcomes import Fail, Outcome

Job = Callable[[Claim], Outcome]


def _unsupported(claim: Claim) -> Outcome:
    return Fail("UNSUPPORTED_WORK")


def job_for(work: ControllerWork) -> Job:
    """The job for the work's shape (namespace target, revision, agent target, kind)."""
    if work.work_kind == WorkKind.PROVISIONING:
        return provision.run
    if work.work_kind != WorkKind.LIFECYCLE:
        return _unsupported
    if work.namespace_target in (NamespaceTarget.READY, NamespaceTarget.DELETED):
        return namespace.run
    if work.revision_id:
        return revision.run
    if work.agent_target == AgentTarget.STOPPED:
        return agent_stop.run
    if work.agent_target == AgentTarget.DELETED:
        return agent_delete.run
    return _unsupported


__all__ = ["Job", "job_for"]
