"""GET …/agents/{agt}/runtime: the console's Runtime panel through the API, read from the fake
compute driver after a real deploy through the API and the worker's reconcile step."""

from __future__ import annotations

import pytest

from occ.models import Agent, AuditEvent
from occ.models.work import revision_reconcile_key
from occ.selectors.runtime import UNAVAILABLE
from occ.services.agent_logs import LOGS_VIEWED
from tests.agents_support import after_one_denial, caller, state
from tests.console.conftest import agent_with_secrets
from tests.fakes.compute import deployable_agent, error, run_work
from tests.occ.api.test_agent_lifecycle import url


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace, bound=1)


def test_a_deployed_agent_reads_running_on_its_revision(api, agent, fake_compute):
    assert api.get(url(agent, "runtime")).data["observation"]["state"] == "stopped"
    revision = api.post(url(agent, "deploy")).data["id"]
    run_work(revision_reconcile_key(revision))
    fake_compute.set_usage(agent.id, memory_bytes=64 * 1024 * 1024, cpu_percent=12.5)

    response = api.get(url(agent, "runtime"))

    assert response.status == 200
    data = response.data
    assert (data["agentId"], data["desiredRuntimeState"], data["unavailable"], data["supported"]) == (
        agent.id, "running", None, True)
    seen = data["observation"]
    assert (seen["state"], seen["revisionId"], seen["revisionNumber"]) == ("running", revision, 1)
    assert (seen["memoryBytes"], seen["cpuPercent"], seen["restarts"]) == (64 * 1024 * 1024, 12.5, 0)
    assert seen["observedAt"].endswith("Z")


def test_a_backend_that_fails_is_a_fixed_message_not_driver_text(api, agent, fake_compute):
    fake_compute.script("observe_runtime", agent.id, [error("SECRET_DRIVER_TEXT")])
    data = api.get(url(agent, "runtime")).data
    assert (data["observation"], data["unavailable"], data["supported"]) == (None, UNAVAILABLE, True)
    assert "SECRET_DRIVER_TEXT" not in str(data)


def test_reading_the_agent_is_not_enough_operate_is_needed_and_the_denial_audited(agent, fake_compute):
    _, reader = caller("read:namespace", "read:agent", namespace=agent.namespace)
    before = state()
    response = reader.get(url(agent, "runtime"))
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert state() == after_one_denial(before)
    assert fake_compute.calls_to("observe_runtime") == []


def test_operate_on_this_agent_reads_it(agent, fake_compute):
    _, operator = caller("read:agent", "operate:agent", namespace=agent.namespace,
                         resource_kind="agent", resource_id=agent.id)
    assert operator.get(url(agent, "runtime")).status == 200


@pytest.fixture
def logged(ready_namespace, admin_actor, fake_compute) -> Agent:
    """An Agent whose Secrets hold values (the log is redacted of them; without them it is withheld)."""
    return agent_with_secrets(admin_actor, ready_namespace.id, name="logged", model_key="sk-log-canary-1234")


def test_logs_are_a_view_audited_once_then_followed(api, logged, fake_compute):
    agent = logged
    revision = api.post(url(agent, "deploy")).data["id"]
    run_work(revision_reconcile_key(revision))
    fake_compute.print_log(agent.id, "hello from the gateway")
    views = AuditEvent.objects.filter(action=LOGS_VIEWED, resource_id=agent.id)
    first = api.get(url(agent, "logs"))
    assert first.status == 200, first.body
    assert first.data["started"] is True
    assert any("hello from the gateway" in line for line in first.data["lines"]), first.data
    assert views.count() == 1
    fake_compute.print_log(agent.id, "and then some more")
    followed = api.get(url(agent, "logs") + f"?follow={first.data['follow']}").data
    assert followed["started"] is False
    assert followed["viewId"] == first.data["viewId"]
    assert [line for line in followed["lines"] if "more" in line]
    assert not [line for line in followed["lines"] if "hello" in line]
    assert views.count() == 1, "a follow step is the same view"


def test_logs_need_read_logs_and_a_refusal_is_audited(agent, fake_compute):
    _, reader = caller("read:namespace", "read:agent", namespace=agent.namespace)
    before = state()
    assert reader.get(url(agent, "logs")).status == 403
    assert state() == after_one_denial(before)
    assert reader.get(url(agent, "logs") + "?follow=forged").status in (400, 403)
