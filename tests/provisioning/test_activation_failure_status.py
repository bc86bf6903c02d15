"""The Agent's shown status is the truth: a second revision whose activation fails after a
healthy first one (the gateway exits) shows as a gateway that is not running, which revision
failed and why, in the Agent and deployment responses (the console's Agent header:
tests/console/test_agent_header_runtime.py); never as "active"."""

from __future__ import annotations

import pytest

from occ.drivers.compute.fake import error
from occ.models import Agent, ControllerWork, WorkState
from occ.models.work import revision_reconcile_key
from occ.services.deploy import agent_deploy
from tests.fakes.compute import deployable_agent, healthy_then_failed_activation, run_work

GATEWAY_DOWN = "The Agent's gateway exited while starting this revision"


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace)


@pytest.fixture
def failed_second(admin_actor, agent, fake_compute):
    return healthy_then_failed_activation(admin_actor, agent, fake_compute)


def agent_url(agent: Agent, *rest: str) -> str:
    return "/".join([f"/namespaces/{agent.namespace_id}/agents/{agent.id}", *rest])


def exhaust(revision_id: str) -> None:
    """The retries are spent: the next failed attempt is the last."""
    ControllerWork.objects.filter(pk=revision_reconcile_key(revision_id)).update(
        attempt_count=0, max_attempts=1, available_at=ControllerWork.objects.get(
            pk=revision_reconcile_key(revision_id)).created_at)


def test_a_healthy_agent_shows_its_gateway_running(api, admin_actor, agent):
    first = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    run_work(revision_reconcile_key(first.id))
    runtime = api.get(agent_url(agent)).data["runtime"]
    assert runtime == {"state": "running", "revisionId": first.id, "revision": 1, "retrying": False, "reason": None}


def test_the_api_says_the_gateway_is_down_and_which_revision_failed(api, agent, failed_second, fake_compute):
    _, second = failed_second
    body = api.get(agent_url(agent)).data
    assert body["activeRevisionId"] == second.id
    assert body["runtime"] == {"state": "failed", "revisionId": second.id, "revision": 2, "retrying": True,
                               "reason": {"code": "GATEWAY_EXITED",
                                          "message": GATEWAY_DOWN + "; it will be retried."}}
    deployment = api.get(agent_url(agent, "deployments", second.id)).data
    assert deployment["status"] == "queued"
    assert deployment["progress"]["lastAttempt"]["code"] == "GATEWAY_EXITED"
    assert "finishing its activation" not in deployment["progress"]["lastAttempt"]["message"]

    # The retries run out: failed for good, with the same reason.
    fake_compute.script("activate_revision", "*", [error("GATEWAY_EXITED")])
    exhaust(second.id)
    run_work(revision_reconcile_key(second.id))
    assert ControllerWork.objects.get(pk=revision_reconcile_key(second.id)).state == WorkState.FAILED_PERMANENT
    runtime = api.get(agent_url(agent)).data["runtime"]
    assert (runtime["state"], runtime["retrying"], runtime["reason"]["code"]) == ("failed", False, "GATEWAY_EXITED")
    assert runtime["reason"]["message"] == GATEWAY_DOWN + "; it is not running."
    deployment = api.get(agent_url(agent, "deployments", second.id)).data
    assert (deployment["status"], deployment["error"]["code"]) == ("failed", "GATEWAY_EXITED")
