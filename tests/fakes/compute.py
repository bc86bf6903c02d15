"""The fake ComputeDriver selected for a test, and a world with deployable Agents.

``fake_compute`` selects ``OCC_COMPUTE_DRIVER=fake`` with an empty in-memory world for one
test. ``deployable_agent`` builds an Agent that passes every deploy gate: a harness Secret,
optional Configuration secret bindings, and ``secret:operate`` for its own principal.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from occ.drivers.compute import forget_compute_drivers, get_compute_driver
from occ.drivers.compute.fake import FakeCompute, error
from occ.iam.actor import Actor
from occ.models import Agent, AgentRevision, Namespace, Secret, SecretBinding
from occ.models.work import revision_reconcile_key
from occ.services.deploy import agent_deploy
from provisioning import queue
from provisioning.jobs import job_for
from provisioning.outcomes import Outcome
from tests.factories import AgentFactory, ConfigurationFactory, SecretFactory, grant


@pytest.fixture
def fake_compute(settings) -> Iterator[FakeCompute]:
    settings.OCC_COMPUTE_DRIVER = "fake"
    settings.OCC_FAKE_COMPUTE_STATE = "memory"
    forget_compute_drivers()
    driver = get_compute_driver()
    assert isinstance(driver, FakeCompute)
    yield driver
    forget_compute_drivers()


def deployable_agent(namespace: Namespace, *, bound: int = 0, grant_agent: bool = True,
                     **fields: object) -> Agent:
    """An Agent with an api_key harness Secret and ``bound`` Configuration secret bindings."""
    configuration = ConfigurationFactory(namespace=namespace, values={
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}},
    })
    for index in range(bound):
        SecretBinding.objects.create(configuration=configuration, env_name=f"TOOL_TOKEN_{index}",
                                     secret=SecretFactory(namespace=namespace))
    harness = SecretFactory(namespace=namespace)
    values = {"configuration": configuration, "harness_auth_method": "api_key", "harness_secret": harness} | fields
    agent = AgentFactory(namespace=namespace, **values)
    if grant_agent:
        for secret in delivered_secrets(agent):
            grant(agent.service_principal, "operate:secret", namespace=namespace, resource_kind="secret",
                  resource_id=secret.id)
    return agent


def delivered_secrets(agent: Agent) -> list[Secret]:
    ids = {agent.harness_secret_id, *agent.configuration.secret_bindings.values_list("secret_id", flat=True)}
    return list(Secret.objects.filter(id__in=ids - {None}).order_by("id"))


def run_work(key: str) -> Outcome | None:
    """Claim the row through the real queue, run its job, apply the outcome fenced."""
    return queue.run_work(key)


def run_job_twice(key: str) -> tuple[Outcome, Outcome]:
    """One claim, the job run twice (the first outcome is dropped, as when a worker dies
    before completing), then the second outcome applied. Returns (first, applied)."""
    claim = queue.claim(key)
    assert claim is not None, f"{key} is not claimable"
    job = job_for(claim.work)
    first = job(claim)
    second = job(claim)
    return first, queue.apply_outcome(claim, second)


def healthy_then_failed_activation(actor: Actor, agent: Agent,
                                   driver: FakeCompute) -> tuple[AgentRevision, AgentRevision]:
    """v1 deployed and activated (healthy), then v2 deployed and its activation failing as a
    gateway that exits does: published, but not running."""
    first = agent_deploy(actor=actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    run_work(revision_reconcile_key(first.id))
    second = agent_deploy(actor=actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    driver.script("activate_revision", "*", [error("GATEWAY_EXITED")])
    run_work(revision_reconcile_key(second.id))
    return first, second
