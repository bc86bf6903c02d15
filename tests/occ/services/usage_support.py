"""Running Agents with stand-in gateways, shared by the usage and budget tests."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest

from occ.models import Agent, Namespace
from tests.agents_support import make_revision
from tests.factories import AgentFactory
from tests.fakes.usage_gateway import ModelFigures, StandInDriver, UsageGateways


@pytest.fixture
def usage_gateways() -> Iterator[UsageGateways]:
    servers = UsageGateways()
    yield servers
    servers.close()


@pytest.fixture
def usage_driver(usage_gateways: UsageGateways) -> StandInDriver:
    return StandInDriver(usage_gateways)


def running_agent(namespace: Namespace, name: str | None = None) -> Agent:
    agent = AgentFactory(namespace=namespace, **({"name": name} if name else {}))
    revision = make_revision(agent, 1)
    Agent.objects.filter(id=agent.id).update(active_revision=revision, desired_runtime_state="running")
    agent.refresh_from_db()
    return agent


def figures(model: str, tokens_in: int, tokens_out: int, cost: float, *, cached: int = 0,
            provider: str = "openai") -> ModelFigures:
    return ModelFigures(provider=provider, model=model, input=tokens_in, output=tokens_out, cache_read=cached,
                        cost=cost)


def day_key(day: date) -> str:
    return day.isoformat()
