"""Provisioning reads for the console's "check status" after an unknown outcome.

When the answer to a provisioning request is lost, the client still has its own
``requestId``: these reads find what that request left behind, and change nothing.
"""

from __future__ import annotations

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import Agent, AgentProvisioningWork
from occ.selectors.namespaces import get_live_namespace


def provisioning_for_request(*, actor: Actor, namespace_id: str, request_id: str) -> AgentProvisioningWork | None:
    """This actor's provisioning work for ``request_id`` in the Namespace, if one was admitted.

    Only the initiator's own rows are searched (admission keys them by Namespace, actor and
    ``requestId``); reading the work's state then goes through ``provisioning_get``.
    """
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    return (AgentProvisioningWork.objects.select_related("work")
            .filter(namespace=namespace, actor_id=actor.id, request_id=request_id).first())


def agent_named(*, actor: Actor, namespace_id: str, name: str) -> Agent | None:
    """The Agent called ``name`` in the Namespace when the actor may read it, else None."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    agent = Agent.objects.filter(namespace=namespace, name=name).first()
    if agent is None or not allowed(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id):
        return None
    return agent
