"""The chaos soak (bench/chaos.py): a short one runs whole, and its checks fail on what they
are there to catch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.chaos_checks import agent_checks, effect_checks, work_checks
from occ.models import AuditEvent, Configuration, NamespaceTarget, WorkJob
from occ.services.work import work_enqueue
from tests.agents_support import make_revision
from tests.factories import AgentFactory, NamespaceFactory

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_short_soak_passes_every_check_with_each_kind_of_fault():
    result = subprocess.run(
        [sys.executable, "bench/chaos.py", "--namespaces", "2", "--agents", "2", "--workers", "2",
         "--fault-every", "2"], cwd=REPO, capture_output=True, text=True, timeout=900, check=False)

    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    table = output[output.index("\ncheck "):]
    verdicts = [line for line in table.splitlines()[1:] if line.strip() and not line.startswith("total")]
    assert len(verdicts) >= 10, table
    assert not [line for line in verdicts if " FAIL " in line], table
    faults = next(line for line in verdicts if line.startswith("faults injected"))
    for kind in ("kill-worker", "pause-worker", "redis", "postgres"):
        assert f"{kind} 0" not in faults, faults
        assert kind in faults


def plan_for(agent, revisions, **overrides):
    fields = {"index": 7, "agent_id": agent.id, "configuration_id": agent.configuration_id,
              "revision_ids": [revision.id for revision in revisions[1:]], "deleted_at_end": False,
              "active_before_stop": revisions[-1].id if revisions else None, "failed": None, "step": 4}
    return SimpleNamespace(**(fields | overrides))


def stopped_world(agent, last):
    return {"gateways": {agent.id: {"running": False, "serving": None, "last_served": last, "starts": 1}}}


def verdicts(checks):
    return {check.name: check for check in checks}


@pytest.mark.django_db
def test_the_agent_check_names_a_missing_revision_and_a_pointer_left_behind():
    namespace = NamespaceFactory(name="chaos-00")
    agent = AgentFactory(namespace=namespace, desired_runtime_state="stopped")
    Configuration.objects.filter(id=agent.configuration_id).update(generation=2)
    revisions = [make_revision(agent, 1), make_revision(agent, 2)]  # v3 never admitted

    checks = verdicts(agent_checks([plan_for(agent, revisions)], stopped_world(agent, revisions[-1].id)))

    found = checks["Agents as expected (v3 active, stopped)"]
    assert not found.ok
    assert "revisions [(1, 1), (2, 2)]" in found.found

    AgentFactory._meta.model.objects.filter(id=agent.id).update(active_revision=revisions[-1])
    again = verdicts(agent_checks([plan_for(agent, revisions)], stopped_world(agent, revisions[-1].id)))
    assert "after the stop, not none" in again["Agents as expected (v3 active, stopped)"].found


@pytest.mark.django_db
def test_a_deleted_agent_still_there_and_an_extra_configuration_fail():
    namespace = NamespaceFactory(name="chaos-01")
    agent = AgentFactory(namespace=namespace)
    plan = plan_for(agent, [], deleted_at_end=True)
    Configuration.objects.create(namespace=namespace, name="stray", values={})

    checks = verdicts(agent_checks([plan], {"gateways": {}}))

    assert not checks["deleted Agents gone"].ok
    assert not checks["one Configuration per provisioning"].ok
    assert checks["one Configuration per provisioning"].found == "1 more"


@pytest.mark.django_db
def test_a_second_start_and_a_second_fenced_completion_fail(tmp_path):
    namespace = NamespaceFactory(name="chaos-02")
    agent = AgentFactory(namespace=namespace)
    for _ in range(2):
        AuditEvent.objects.create(action="openclaw.agents.revision.activate", namespace_id=namespace.id,
                                  resource_kind="agent", resource_id=agent.id, details={"revisionId": "rev_x"},
                                  actor_id="prn_worker", kind="reconcile", outcome="succeeded")
    log = tmp_path / "chaos-worker-1.log"
    log.write_text("worker.error CLAIM_LOST key=a attempt=1\n")
    world = {"gateways": {agent.id: {"starts": 2}}}

    checks = verdicts(effect_checks([plan_for(agent, [])], world, [log]))

    assert not checks["duplicate compute effects"].ok
    assert "started 2 times" in checks["duplicate compute effects"].found
    assert not checks["writes committed by a fenced worker"].ok
    assert checks["fenced attempts refused (CLAIM_LOST)"].found == "1"


@pytest.mark.django_db
def test_work_left_queued_or_failed_fails():
    namespace = NamespaceFactory(name="chaos-03")
    work_enqueue(key="k-queued", job=WorkJob.NAMESPACE, namespace_id=namespace.id, actor_id="prn_x",
                 namespace_target=NamespaceTarget.READY, nudge=False)

    checks = verdicts(work_checks())

    assert not checks["every job terminal"].ok
    assert checks["no job failed"].ok
