"""``manage.py occ_gateway info``: where an Agent's gateway listens; the password only when asked (audited).

The real gateway is covered end to end in tests/e2e/test_gateway_api.py (which runs this
command against a running stack); here the fake ComputeDriver stands in.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.models import Agent, AuditEvent, ControllerWork
from occ.models.work import revision_reconcile_key
from occ.services.secrets import runtime_credential_ensure
from tests.fakes.compute import deployable_agent, run_work

PASSWORD = "gateway-password-for-the-command-test-51c0"
READ_ACTION = "openclaw.agents.gateway_password.read"


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace)


def info(agent_id: str, *flags: str) -> str:
    out = io.StringIO()
    call_command("occ_gateway", "info", agent_id, *flags, stdout=out)
    return out.getvalue()


def deploy(api, agent: Agent) -> str:
    revision = api.post(f"/namespaces/{agent.namespace_id}/agents/{agent.id}/deploy").data["id"]
    run_work(revision_reconcile_key(revision))
    return revision


def test_a_deployed_agent_shows_its_gateway_url_and_no_password(api, agent):
    revision = deploy(api, agent)

    document = json.loads(info(agent.id, "--json"))

    assert (document["agentId"], document["activeRevisionId"], document["revisionId"]) == (
        agent.id, revision, revision)
    assert document["ready"] is True
    gateway = document["gateway"]
    assert gateway["url"].startswith("http://127.0.0.1:")
    assert gateway["websocketUrl"] == "ws://" + gateway["url"].removeprefix("http://")
    assert gateway["chatCompletionsUrl"] == gateway["url"] + "/v1/chat/completions"
    assert "password" not in document
    assert not AuditEvent.objects.filter(action=READ_ACTION).exists()
    text = info(agent.id)
    assert f"gateway: {gateway['url']}  (ready;" in text
    assert "--show-password" in text


@pytest.mark.parametrize("flags", [
    pytest.param(("--show-password",), id="text"),
    pytest.param(("--show-password", "--json"), id="json"),
])
def test_the_password_is_shown_only_when_asked_and_each_read_is_audited(api, agent, flags):
    deploy(api, agent)
    runtime_credential_ensure(agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE, value_factory=lambda: PASSWORD)
    assert PASSWORD not in info(agent.id) + info(agent.id, "--json")
    assert not AuditEvent.objects.filter(action=READ_ACTION).exists()

    output = info(agent.id, *flags)

    assert PASSWORD in output
    if "--json" in flags:
        assert json.loads(output)["password"] == PASSWORD
    [event] = AuditEvent.objects.filter(action=READ_ACTION)
    assert (event.kind, event.resource_id, event.namespace_id) == ("access", agent.id, agent.namespace_id)
    assert PASSWORD not in json.dumps(event.details)


def test_an_agent_never_deployed_has_no_gateway(agent):
    document = json.loads(info(agent.id, "--json"))
    assert (document["gateway"], document["revisionId"], document["ready"], document["checks"]) == (
        None, None, False, [])
    assert "gateway: not running (the Agent was never deployed)" in info(agent.id)


def test_a_stopped_agent_has_no_gateway_url(api, agent):
    revision = deploy(api, agent)
    api.post(f"/namespaces/{agent.namespace_id}/agents/{agent.id}/stop")
    run_work(ControllerWork.objects.get(agent_id=agent.id, agent_target="stopped").pk)

    document = json.loads(info(agent.id, "--json"))

    assert (document["activeRevisionId"], document["revisionId"], document["gateway"]) == (None, revision, None)
    assert document["ready"] is False
    assert "gateway: not running\n" in info(agent.id)


@pytest.mark.parametrize("flags", [pytest.param((), id="info"), pytest.param(("--show-password",), id="password")])
def test_an_unknown_agent_is_a_clear_error(db, flags):
    with pytest.raises(CommandError, match="The Agent does not exist"):
        info("agt_00000000-0000-4000-8000-000000000000", *flags)
    assert not AuditEvent.objects.filter(action=READ_ACTION).exists()


def test_no_password_before_the_first_deployment_is_a_clear_error(agent):
    with pytest.raises(CommandError, match="no gateway password yet"):
        info(agent.id, "--show-password")
    assert not AuditEvent.objects.filter(action=READ_ACTION).exists()
