"""Compute maintenance: the local driver reports a dead gateway, the job restarts it only when
desired state still wants that revision running (real local driver, stub gateway)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.files import GatewayRecord
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.secrets import get_secret_driver
from occ.models import Agent, AgentStatus, DesiredRuntimeState, Secret, SecretBinding
from provisioning import tasks
from provisioning.jobs.context import revision_context, revision_ref
from provisioning.jobs.credentials import ensure_credentials
from provisioning.jobs.maintenance import maintain_compute
from tests.fakes.compute import delivered_secrets, deployable_agent
from tests.occ.drivers.compute.local_support import StubRuntime, port_range, stop_every_gateway
from tests.provisioning.jobs.conftest import deploy


@pytest.fixture
def local(tmp_path):
    driver = LocalComputeDriver(data_dir=tmp_path / "data", runtime=StubRuntime(tmp_path), port_range=port_range(),
                                ready_timeout=15, stop_grace=5)
    try:
        yield driver
    finally:
        stop_every_gateway(driver)


def record_of(driver: LocalComputeDriver, agent: Agent) -> GatewayRecord:
    record = GatewayRecord.read(driver.agent_paths(agent.id).record)
    assert record is not None
    return record


@pytest.fixture
def dead_gateway(admin_actor, ns, fake_compute, local):
    """An active, running Agent (one bound Secret) whose gateway, started by the local
    driver, was killed."""
    agent = deployable_agent(ns, bound=1)
    for secret in delivered_secrets(agent):
        get_secret_driver(secret.driver_id).put(secret.backend_name, "model-key")
    revision = deploy(admin_actor, agent)
    Agent.objects.filter(id=agent.id).update(active_revision=revision, status=AgentStatus.ACTIVE,
                                             desired_runtime_state=DesiredRuntimeState.RUNNING)
    agent.refresh_from_db()
    ensure_credentials(agent, local)
    ref, context = revision_ref(revision, agent), revision_context(revision)
    deadline = time.monotonic() + 15
    while not local.prepare_revision(ref, context).ready:
        assert time.monotonic() < deadline, "the stub gateway never became ready"
        time.sleep(0.1)
    process = record_of(local, agent).process
    os.killpg(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while supervisor.process_started(process.pid) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    return agent, revision, process


def test_a_dead_gateway_of_the_active_revision_is_restarted(local, dead_gateway):
    agent, revision, dead = dead_gateway

    maintain_compute(local)

    restarted = record_of(local, agent)
    assert restarted.alive()
    assert restarted.process.pid != dead.pid
    assert (restarted.revision_id, restarted.restarts) == (revision.id, 1)
    maintain_compute(local)
    assert record_of(local, agent).process == restarted.process, "running it again is harmless"


@pytest.mark.parametrize("change", [
    pytest.param({"desired_runtime_state": DesiredRuntimeState.STOPPED}, id="agent-wants-to-stop"),
    pytest.param({"active_revision": None}, id="revision-no-longer-active"),
    pytest.param({"status": AgentStatus.DELETING}, id="agent-being-deleted"),
])
def test_a_gateway_desired_state_no_longer_wants_stays_down(local, dead_gateway, change):
    agent, _revision, dead = dead_gateway
    Agent.objects.filter(id=agent.id).update(**change)

    maintain_compute(local)

    assert record_of(local, agent).process == dead
    assert not record_of(local, agent).alive()


def test_a_gateway_whose_secret_is_gone_stays_down(local, dead_gateway):
    agent, _revision, dead = dead_gateway
    binding = SecretBinding.objects.get(configuration_id=agent.configuration_id)
    binding.delete()
    Secret.objects.filter(id=binding.secret_id).delete()

    maintain_compute(local)

    assert record_of(local, agent).process == dead


def test_the_maintenance_task_runs_the_job(monkeypatch):
    calls = []
    monkeypatch.setattr(tasks, "maintain_compute_job", lambda: calls.append("maintain"))

    tasks.maintain_compute()

    assert calls == ["maintain"]
