"""Provisioning admission with Slack tokens: the registered Slack driver, reading bound Secrets
through admission's authorized reader, against the loopback fake Slack."""

from __future__ import annotations

import json
from typing import Any

import pytest

from occ import nudges
from occ.commands.secrets import SecretCreate
from occ.models import AgentProvisioningWork, AuditEvent, ControllerWork
from occ.services.secrets import secret_create
from tests.fakes.fake_slack import READ_METHODS, FakeSlack, _fake_slack_server, fake_slack  # noqa: F401 (fixtures)

BOT = "xoxb-admission-CANARY-61b0"
APP = "xapp-admission-CANARY-94ce"
SLACK = "/configuration/values/channels/slack"


@pytest.fixture
def slack(fake_slack: FakeSlack, monkeypatch) -> FakeSlack:  # noqa: F811
    # No broker: the worker is not part of this test.
    monkeypatch.setattr(nudges, "nudge", lambda key, countdown=None: True)
    fake_slack.add_token(BOT)
    return fake_slack


@pytest.fixture
def body(admin_actor, ready_namespace) -> Any:
    def secret(name: str, value: str) -> dict[str, Any]:
        created = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                                command=SecretCreate(name=name, value=value))
        return {"source": {"kind": "secret", "namespaceId": ready_namespace.id, "id": created.id}}

    model_key = secret(name="model-key", value="model-key-value")
    bindings = {"SLACK_BOT_TOKEN": secret("slack-bot", BOT), "SLACK_APP_TOKEN": secret("slack-app", APP)}

    def _body(**slack_settings: Any) -> dict[str, Any]:
        slack_values = {"enabled": True, "mode": "socket",
                        "appToken": {"source": "env", "provider": "default", "id": "SLACK_APP_TOKEN"},
                        "botToken": {"source": "env", "provider": "default", "id": "SLACK_BOT_TOKEN"},
                        **slack_settings}
        return {
            "requestId": "req_slack-admission",
            "name": "slack-agent",
            "configuration": {"kind": "agent", "values": {"channels": {"slack": slack_values}},
                              "secretBindings": bindings},
            "harnessAuth": {"method": "api_key", "source": model_key["source"]},
        }
    return _body


def url(namespace_id: str) -> str:
    return f"/namespaces/{namespace_id}/agents/provision"


def test_valid_slack_tokens_are_admitted_after_one_auth_test(api, ready_namespace, slack, body):
    response = api.post(url(ready_namespace.id), body())
    assert response.status == 202, response.body
    assert slack.methods_called() == ["auth.test"]
    assert set(slack.methods_called()) <= READ_METHODS
    assert [r["token"] for r in slack.requests] == ["xoxb-"], "the app token is never sent"
    assert AgentProvisioningWork.objects.count() == 1
    recorded = json.dumps(list(AgentProvisioningWork.objects.values("plan"))) + json.dumps(
        list(AuditEvent.objects.values("details")))
    assert BOT not in recorded
    assert APP not in recorded


@pytest.mark.parametrize(("change", "status", "code", "path"), [
    pytest.param({"botToken": {"source": "env", "provider": "default", "id": "SLACK_APP_TOKEN"}}, 400,
                 "CHANNEL_CREDENTIAL_ROLE_MISMATCH", SLACK + "/botToken", id="app-token-as-bot-token"),
    pytest.param({"appToken": {"source": "env", "provider": "default", "id": "SLACK_UNBOUND"}}, 400,
                 "CHANNEL_CREDENTIAL_BINDING_REQUIRED", SLACK + "/appToken", id="unbound-app-token"),
    pytest.param({"invalid_auth": True}, 400, "CHANNEL_CREDENTIAL_REJECTED", SLACK + "/botToken", id="rejected"),
    pytest.param({"http_500": True}, 503, "CHANNEL_CREDENTIAL_UNAVAILABLE", SLACK + "/botToken", id="unavailable"),
])
def test_bad_slack_credentials_admit_nothing(api, ready_namespace, slack, body, change, status, code, path):
    for mode in ("invalid_auth", "http_500"):
        if change.pop(mode, False):
            slack.fail("auth.test", mode)
    works = ControllerWork.objects.count()
    response = api.post(url(ready_namespace.id), body(**change))
    assert (response.status, response.error_code) == (status, code), response.body
    assert [d["path"] for d in response.body["error"]["details"]] == [path]
    assert ControllerWork.objects.count() == works
    assert not AgentProvisioningWork.objects.exists()
    text = json.dumps(response.body)
    assert BOT not in text
    assert APP not in text


def _without_slack_values(request: dict[str, Any]) -> dict[str, Any]:
    """The request with the ``channels`` block deleted from its document, the Slack token
    bindings left in place (what deleting the block from the advanced JSON used to send)."""
    request["configuration"]["values"] = {}
    return request


@pytest.mark.parametrize(("fail", "status", "code"), [
    pytest.param("invalid_auth", 400, "CHANNEL_CREDENTIAL_REJECTED", id="rejected"),
    pytest.param("http_500", 503, "CHANNEL_CREDENTIAL_UNAVAILABLE", id="unavailable"),
])
def test_slack_tokens_bound_without_a_slack_block_are_still_checked(api, ready_namespace, slack, body,
                                                                      fail, status, code):
    slack.fail("auth.test", fail)
    response = api.post(url(ready_namespace.id), _without_slack_values(body()))
    assert (response.status, response.error_code) == (status, code), response.body
    assert [d["path"] for d in response.body["error"]["details"]] == [
        "/configuration/secretBindings/SLACK_BOT_TOKEN"]
    assert not AgentProvisioningWork.objects.exists()
    assert BOT not in json.dumps(response.body)


def test_a_bound_slack_token_of_the_wrong_kind_is_refused_at_its_binding(api, ready_namespace, slack, body):
    request = _without_slack_values(body())
    bindings = request["configuration"]["secretBindings"]
    bindings["SLACK_APP_TOKEN"], bindings["SLACK_BOT_TOKEN"] = bindings["SLACK_BOT_TOKEN"], bindings["SLACK_APP_TOKEN"]
    response = api.post(url(ready_namespace.id), request)
    assert (response.status, response.error_code) == (400, "CHANNEL_CREDENTIAL_ROLE_MISMATCH"), response.body
    assert [d["path"] for d in response.body["error"]["details"]] == ["/configuration/secretBindings/SLACK_APP_TOKEN"]
    assert slack.methods_called() == []


def test_valid_slack_tokens_bound_without_a_slack_block_are_admitted_after_one_auth_test(
        api, ready_namespace, slack, body):
    response = api.post(url(ready_namespace.id), _without_slack_values(body()))
    assert response.status == 202, response.body
    assert slack.methods_called() == ["auth.test"]
