"""A Configuration the pinned OpenClaw runtime would refuse is refused by every entry point
(create, update, provisioning admission, deploy) with 400 INVALID_REQUEST, the pointer of
each offending key and the runtime's message, and nothing is stored."""

from __future__ import annotations

import json
from typing import Any

import pytest

from occ.models import (
    Agent,
    AgentProvisioningWork,
    AgentRevision,
    AuditEvent,
    Configuration,
    ControllerWork,
)
from tests.factories import SecretFactory
from tests.fakes.compute import deployable_agent

REFUSED = {"agents": {"defaults": {"bogusKey": 1}}}
RUNTIME_MESSAGE = 'OpenClaw refuses agents.defaults.bogusKey: Unrecognized key: "bogusKey"'
ACCEPTED = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}


def rows() -> dict[str, Any]:
    return {"configurations": list(Configuration.objects.values_list("id", "generation", "values")),
            "agents": Agent.objects.count(), "revisions": AgentRevision.objects.count(),
            "work": ControllerWork.objects.count(), "provisioning": AgentProvisioningWork.objects.count(),
            "audit": AuditEvent.objects.exclude(kind="authorization_denial").count()}


def assert_refused(response, pointer: str) -> None:
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), response.body
    assert response.body["error"]["details"] == [{"code": "UNKNOWN_FIELD", "path": pointer}]
    assert response.body["error"]["message"] == RUNTIME_MESSAGE


def test_create_refuses_what_the_runtime_refuses(api, ready_namespace):
    before = rows()
    response = api.post(f"/namespaces/{ready_namespace.id}/configurations", {"kind": "agent", "values": REFUSED})
    assert_refused(response, "/values/agents/defaults/bogusKey")
    assert rows() == before


def test_create_accepts_what_the_runtime_accepts(api, ready_namespace):
    response = api.post(f"/namespaces/{ready_namespace.id}/configurations", {"kind": "agent", "values": ACCEPTED})
    assert response.status == 201, response.body


def test_update_refuses_and_keeps_the_document(api, ready_namespace):
    created = api.post(f"/namespaces/{ready_namespace.id}/configurations", {"kind": "agent", "values": ACCEPTED})
    before = rows()
    response = api.patch(f"/namespaces/{ready_namespace.id}/configurations/{created.data['id']}",
                         {"values": REFUSED})
    assert_refused(response, "/values/agents/defaults/bogusKey")
    assert rows() == before


def test_provisioning_admission_refuses_and_admits_nothing(api, ready_namespace):
    model_key = SecretFactory(namespace=ready_namespace)
    before = rows()
    response = api.post(f"/namespaces/{ready_namespace.id}/agents/provision", {
        "requestId": "req_5b0c7a52-11a4-4c43-9d63-5e8f0b2f6d11", "name": "refused",
        "configuration": {"kind": "agent", "values": REFUSED},
        "harnessAuth": {"method": "api_key",
                        "source": {"kind": "secret", "namespaceId": ready_namespace.id, "id": model_key.id}},
    })
    assert_refused(response, "/configuration/values/agents/defaults/bogusKey")
    assert rows() == before


def test_deploy_refuses_a_stored_document_the_runtime_refuses(api, ready_namespace, fake_compute):
    """A Configuration saved before this check existed (written here directly) is not deployed:
    the healthy revision keeps running instead of being replaced by one that cannot start."""
    agent = deployable_agent(ready_namespace)
    first = api.post(f"/namespaces/{ready_namespace.id}/agents/{agent.id}/deploy")
    assert first.status == 202, first.body
    Configuration.objects.filter(id=agent.configuration_id).update(values=REFUSED)
    before = rows()
    response = api.post(f"/namespaces/{ready_namespace.id}/agents/{agent.id}/deploy")
    assert_refused(response, "/configuration/values/agents/defaults/bogusKey")
    assert rows() == before
    assert "bogusKey" not in json.dumps(list(AuditEvent.objects.values("details")))


@pytest.mark.parametrize("values", [
    pytest.param({"agents": {"defaults": {"skipBootstrap": "sk-canary-value"}}}, id="wrong-type"),
    pytest.param({"agents": {"defaults": {"modelSelectionScope": "sk-canary-value"}}}, id="not-an-option"),
])
def test_the_message_never_echoes_a_value(api, ready_namespace, values):
    response = api.post(f"/namespaces/{ready_namespace.id}/configurations", {"kind": "agent", "values": values})
    assert response.status == 400
    assert "sk-canary-value" not in json.dumps(response.body)
