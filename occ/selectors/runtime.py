"""What the compute driver observes of an Agent's gateway right now (the console's Runtime
panel): read-only, nothing is stored or audited (an ordinary read).

The caller authorizes first: ``agent:read`` and ``agent:operate`` on the exact Agent (spec §3:
operate covers reading the runtime's status). The driver's failures become a fixed message,
never driver text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from occ.drivers.compute import AgentRef, ComputeError, get_compute_driver
from occ.drivers.compute.base import RuntimeObservation
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import Agent, AgentRevision
from occ.selectors.agents import agent_get

logger = logging.getLogger(__name__)

UNAVAILABLE = "The compute backend could not be asked about this Agent's gateway. It is retried on the next refresh."
UNSUPPORTED = "This compute backend does not report on its gateways."
OBSERVE_UNSUPPORTED = "OBSERVE_UNSUPPORTED"


@dataclass(frozen=True)
class RuntimeReading:
    """The driver's observation (``None`` when it could not be asked: see ``unavailable``) and the
    number of the revision it names, when the caller's Agent has it."""

    observation: RuntimeObservation | None
    revision_number: int | None = None
    unavailable: str | None = None
    supported: bool = True  # False: the driver never observes (asking again will not help)


def agent_ref(agent: Agent) -> AgentRef:
    return AgentRef(id=agent.id, namespace_id=agent.namespace_id, name=agent.name)


def observe(actor: Actor, agent: Agent) -> RuntimeReading:
    """The observation of an Agent the caller was authorized for (the revision's number only
    when the caller may read that revision)."""
    try:
        seen = get_compute_driver().observe_runtime(agent_ref(agent))
    except ComputeError as exc:
        if exc.code == OBSERVE_UNSUPPORTED:
            return RuntimeReading(observation=None, unavailable=UNSUPPORTED, supported=False)
        logger.warning("runtime observation of %s failed (%s)", agent.id, exc.code)
        return RuntimeReading(observation=None, unavailable=UNAVAILABLE)
    except Exception:  # any driver trouble: no observation, and no driver text
        logger.warning("runtime observation of %s failed", agent.id, exc_info=True)
        return RuntimeReading(observation=None, unavailable=UNAVAILABLE)
    number = None
    if seen.revision_id is not None and allowed(actor, Action.READ, Kind.AGENT_REVISION,
                                                namespace_id=agent.namespace_id, resource_id=seen.revision_id,
                                                parent_id=agent.id):
        number = AgentRevision.objects.filter(agent=agent, id=seen.revision_id).values_list("number", flat=True).first()
    return RuntimeReading(observation=seen, revision_number=number)



def agent_runtime_observe(*, actor: Actor, namespace_id: str, agent_id: str) -> tuple[Agent, RuntimeReading]:
    """The API's Runtime reading: authorized like the console's panel (``agent:read`` on the
    exact Agent, then ``agent:operate``), then :func:`observe`."""
    agent = agent_get(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    authorize(actor, Action.OPERATE, Kind.AGENT, namespace_id=agent.namespace_id, resource_id=agent.id)
    return agent, observe(actor, agent)
