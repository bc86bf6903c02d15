"""Job fixtures: a ready Namespace, the administrator as actor, the fake compute driver."""

from __future__ import annotations

import pytest

from occ.iam.actor import Actor
from occ.models import Agent, AgentRevision, AuditEvent, ControllerWork, Namespace
from occ.models.work import revision_reconcile_key
from occ.services.deploy import agent_deploy
from tests.fakes.compute import deployable_agent


@pytest.fixture
def ns(ready_namespace) -> Namespace:
    return ready_namespace


@pytest.fixture
def agent(ns, fake_compute) -> Agent:
    return deployable_agent(ns, bound=1, initial_workspace_files={"AGENTS.md": "# hello"})


def deploy(actor: Actor, agent: Agent) -> AgentRevision:
    return agent_deploy(actor=actor, namespace_id=agent.namespace_id, agent_id=agent.id)


def key_of(revision: AgentRevision) -> str:
    return revision_reconcile_key(revision.id)


def work(key: str) -> ControllerWork:
    return ControllerWork.objects.get(idempotency_key=key)


def events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("occurred_at"))


def code_of(outcome: object) -> tuple[str, str | None]:
    """(outcome type, its code): ``("Complete", "REVISION_ACTIVATED")``."""
    code = getattr(outcome, "reason_code", None) or getattr(outcome, "code", None)
    return type(outcome).__name__, code
