"""Revision work with real worker processes on PostgreSQL: SIGKILL between publication and
activation.

The first worker publishes the revision (the Agent's active pointer and its activation
audit event, one transaction) and is killed before it calls ``activate_revision``
(``HARNESS_PAUSE=before:revision._finalize``). A second worker, once the lease expired,
finds the revision active, activates it on the fake compute driver (whose durable world
both share) and completes ``REVISION_ALREADY_ACTIVE``: one activation event, one
finalization event, never a moved pointer without its event.
"""

from __future__ import annotations

import signal

import pytest

from occ.models import Agent, AuditEvent, ControllerWork, WorkState
from occ.models.work import revision_reconcile_key
from occ.services.deploy import agent_deploy
from tests.fakes.compute import deployable_agent
from tests.provisioning.test_faults import wait_until
from tests.provisioning.test_provision_faults import fake_world, paused_at, workers  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def activations(action: str, revision_id: str) -> list[AuditEvent]:
    return [e for e in AuditEvent.objects.filter(action=action) if e.details.get("revisionId") == revision_id]


def test_a_worker_killed_after_publication_leaves_the_pointer_audited_and_a_successor_finishes(
        ready_namespace, admin_actor, fake_world, workers):  # noqa: F811
    agent = deployable_agent(ready_namespace)
    revision = agent_deploy(actor=admin_actor, namespace_id=ready_namespace.id, agent_id=agent.id)
    key = revision_reconcile_key(revision.id)

    first = workers(HARNESS_PAUSE="before:revision._finalize")
    wait_until(paused_at(workers.records, "_finalize"), timeout=60, what="the worker to hold after publication")
    first.signal(signal.SIGKILL)
    first.wait_exit(timeout=10)

    # Killed between the steps: the pointer moved, and its audit event committed with it.
    assert Agent.objects.get(id=agent.id).active_revision_id == revision.id
    assert len(activations("openclaw.agents.revision.activate", revision.id)) == 1
    assert fake_world.calls_to("activate_revision") == []

    second = workers()
    wait_until(lambda: ControllerWork.objects.get(pk=key).state == WorkState.SUCCEEDED, timeout=60,
               what="the second worker to finish the activation")
    assert ControllerWork.objects.get(pk=key).reason_code == "REVISION_ALREADY_ACTIVE", second.tail()
    assert fake_world.serving(agent.id) == revision.id
    assert len(activations("openclaw.agents.revision.activate", revision.id)) == 1, "no second activation"
    [finalized] = activations("openclaw.agents.revision.finalize", revision.id)
    assert finalized.details["reasonCode"] == "REVISION_ALREADY_ACTIVE"
