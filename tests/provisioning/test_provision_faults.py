"""Provisioning with real worker processes on PostgreSQL: SIGKILL at every phase boundary.

A first worker runs the real provisioning job and holds at one boundary (worker_harness.py,
``HARNESS_PAUSE``); the test SIGKILLs its process group there, and a second worker takes the
work over once the lease expired. Whatever the boundary, the end is exactly one
Configuration, one Agent with its two Secret grants, one runtime credential and one first
revision (activated by the same worker). A kill between the ``begun`` commit and the driver
call leaves an effect whose target is not found: the work fails ``RECOVERY_REQUIRED`` and
finishes only after the retry marks it ``resend``.

The compute driver is the fake with its default durable world: the workers are given no
``OCC_FAKE_COMPUTE_STATE``, so they share ``fake-compute.json`` under their data directory,
and the successor of a killed worker finds the runtime credentials it sent (in memory, the
``transport-sent`` kill would end ``RECOVERY_REQUIRED``). Nudges go to an in-memory broker
(the harness loop claims by itself).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator

import pytest

from occ import nudges
from occ.drivers.compute import forget_compute_drivers, get_compute_driver
from occ.drivers.compute.fake import FakeCompute
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    AgentRevision,
    Configuration,
    ControllerWork,
    WorkEffect,
    WorkState,
)
from occ.models.work import revision_reconcile_key
from project.data_dir import DataDir
from tests.factories import SecretFactory
from tests.provisioning.provisioning_support import admit, plan_for, retry
from tests.provisioning.test_faults import harness_database_url, wait_until
from tests.provisioning.worker_harness import HarnessProcess

pytestmark = [pytest.mark.postgres_only, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LEASE, HEARTBEAT, SWEEP = 2.0, 0.5, 0.5


@pytest.fixture
def fake_world(tmp_path, settings) -> Iterator[FakeCompute]:
    """The fake compute driver's world where the workers keep it by default: the file under
    their data directory."""
    settings.OCC_COMPUTE_DRIVER = "fake"
    settings.OCC_FAKE_COMPUTE_STATE = str(tmp_path / "data" / "fake-compute.json")
    forget_compute_drivers()
    driver = get_compute_driver()
    assert isinstance(driver, FakeCompute)
    yield driver
    forget_compute_drivers()


@pytest.fixture
def workers(tmp_path, fake_world, monkeypatch) -> Iterator[Callable[..., HarnessProcess]]:
    """Start real worker processes running the real jobs; all are stopped when the test ends."""
    monkeypatch.setattr(nudges, "nudge", lambda key, countdown=None: True)  # this process's commits: the workers poll
    started: list[HarnessProcess] = []
    records = tmp_path / "records"
    records.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in {"OCC_TEST_DATABASE_NAME", "PYTEST_ADDOPTS", "OCC_FAKE_COMPUTE_STATE"}}
    DataDir(tmp_path / "data").create()
    env.update(
        DATABASE_URL=harness_database_url(), OCC_DATA_DIR=str(tmp_path / "data"), PYTHONUNBUFFERED="1",
        CELERY_BROKER_URL="memory://", HARNESS_RECORD_DIR=str(records), HARNESS_JOB="real",
        OCC_COMPUTE_DRIVER="fake",  # its state: the default, under OCC_DATA_DIR
        OCC_WORKER_LEASE_SECONDS=str(LEASE), OCC_WORKER_HEARTBEAT_SECONDS=str(HEARTBEAT),
        OCC_SWEEP_INTERVAL_SECONDS=str(SWEEP), OCC_LOG_LEVEL="INFO",
    )

    def start(**extra: str) -> HarnessProcess:
        process = HarnessProcess("loop", env=env | extra, log_dir=tmp_path, name=f"worker-{len(started)}")
        started.append(process)
        return process

    start.records = records  # type: ignore[attr-defined]
    try:
        yield start
    finally:
        for process in started:
            process.stop()
        assert not [p.name for p in started if p.alive()], "a worker outlived its test"


def paused_at(records, step: str) -> Callable[[], bool]:
    return lambda: any(f"paused {step} " in path.read_text() for path in records.glob("claims-*.log"))


def provisioning_status(row: AgentProvisioningWork) -> str:
    return AgentProvisioningWork.objects.get(pk=row.pk).status


def settled(row: AgentProvisioningWork) -> Callable[[], bool]:
    return lambda: provisioning_status(row) in ("succeeded", "failed") and ControllerWork.objects.get(
        pk=row.work_id).state in (WorkState.SUCCEEDED, WorkState.FAILED_PERMANENT)


@pytest.mark.parametrize(("pause", "needs_recovery", "observations"), [
    pytest.param("before:configure", False, 0, id="admitted"),
    pytest.param("after:configure", False, 0, id="configuration"),
    pytest.param("after:begin_transport", True, 1, id="transport-begun"),
    pytest.param("after:send_transport", False, 1, id="transport-sent"),
    pytest.param("after:receipt_transport", False, 0, id="transport"),
    pytest.param("after:hand_off", False, 0, id="handoff"),
])
def test_a_worker_killed_at_a_phase_boundary_still_ends_with_one_of_each(
        ready_namespace, admin_actor, fake_world, workers, pause, needs_recovery, observations):
    harness = SecretFactory(namespace=ready_namespace, name="model-key")
    tool = SecretFactory(namespace=ready_namespace, name="tool-token")
    row = admit(ready_namespace, admin_actor,
                plan_for(ready_namespace, name="killed", harness=harness, bound={"TOOL_TOKEN": tool}))
    first = workers(HARNESS_PAUSE=pause)
    wait_until(paused_at(workers.records, pause.split(":")[1]), timeout=60, what=f"the worker to hold at {pause}")
    first.signal(signal.SIGKILL)
    first.wait_exit(timeout=10)
    killed_at = time.monotonic()

    second = workers()
    wait_until(settled(row), timeout=60, what="the second worker to settle the provisioning")
    if needs_recovery:
        failed = AgentProvisioningWork.objects.get(pk=row.pk)
        assert (failed.status, failed.progress["error"]["code"]) == ("failed", "RECOVERY_REQUIRED")
        effect = WorkEffect.objects.get(work_id=row.work_id, kind="transport")
        assert (effect.state, effect.target_id, effect.owner) == ("begun", row.agent_id, row.work_id)
        assert fake_world.calls_to("provision_runtime_credentials") == [], "never sent blindly"
        assert not AgentRevision.objects.filter(agent_id=row.agent_id).exists()
        retry(row.work_id)
        wait_until(settled(row), timeout=30, what="the resend after the retry")
    assert provisioning_status(row) == "succeeded", second.tail()
    revision_id = AgentProvisioningWork.objects.get(pk=row.pk).revision_id
    wait_until(lambda: ControllerWork.objects.get(pk=revision_reconcile_key(revision_id)).state == WorkState.SUCCEEDED,
               timeout=30, what="the first revision to activate")
    took = time.monotonic() - killed_at

    assert Configuration.objects.filter(id=row.configuration_id).count() == 1
    assert Configuration.objects.count() == 1
    assert Agent.objects.filter(id=row.agent_id).count() == Agent.objects.count() == 1
    assert AccessBinding.objects.filter(principal__agent_id=row.agent_id).count() == 2
    assert list(AgentRevision.objects.filter(agent_id=row.agent_id).values_list("id", flat=True)) == [revision_id]
    assert fake_world.world()["credentials"] == [row.agent_id], "exactly one runtime credential"
    assert len(fake_world.calls_to("provision_runtime_credentials")) == 1
    assert len(fake_world.calls_to("observe_runtime_credentials")) == observations
    assert fake_world.serving(row.agent_id) == revision_id
    assert "worker.completed key=" + row.work_id in second.log()
    print(f"\nkilled {pause}: settled {took:.1f}s after the kill (lease {LEASE}s, sweep {SWEEP}s)")
