""""Save as preset" through the real HTTP stack (POST …/agents/{id}/save-as-preset): the Agent's
draft becomes a Preset that keeps its Secret bindings (never a value), needs read on the Agent
and its Configuration and ``preset:create``, is audited without its template, and renders (the
shared renderer) into a request the provisioning API admits."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from occ.commands.secrets import SecretCreate
from occ.models import Agent, AgentProvisioningWork, AuditEvent, Namespace, Preset, Secret
from occ.services.secrets import secret_create
from tests.conftest import ApiClient
from tests.factories import grant, key_for, service_principal

CANARY = "sk-save-as-preset-canary-71be"
VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-6-luna"}}}}


@dataclass
class Source:
    ns: Namespace
    agent: dict
    configuration: dict
    model_key: Secret
    token: Secret

    @property
    def save_url(self) -> str:
        return f"/namespaces/{self.ns.id}/agents/{self.agent['id']}/save-as-preset"


def ref(secret: Secret) -> dict[str, str]:
    return {"kind": "secret", "namespaceId": secret.namespace_id, "id": secret.id}


@pytest.fixture
def source(api, ready_namespace, admin_actor) -> Source:
    model_key = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                              command=SecretCreate(name="model key", value=CANARY))
    token = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                          command=SecretCreate(name="github token", value=CANARY + "-gh"))
    configuration = api.post(f"/namespaces/{ready_namespace.id}/configurations", {
        "kind": "agent", "values": VALUES, "secretBindings": {"GITHUB_TOKEN": {"source": ref(token)}}})
    assert configuration.status == 201, configuration.body
    agent = api.post(f"/namespaces/{ready_namespace.id}/agents", {
        "name": "source-bot", "configurationId": configuration.data["id"],
        "harnessAuth": {"method": "api_key", "source": ref(model_key)}})
    assert agent.status == 201, agent.body
    return Source(ready_namespace, agent.data, configuration.data, model_key, token)


def test_save_as_preset_keeps_the_drafts_bindings_and_renders_to_an_admissible_request(api, source):
    agent_before = Agent.objects.get(id=source.agent["id"]).updated_at
    response = api.post(source.save_url, {"name": "From source"})
    assert response.status == 201, response.body
    preset = response.data
    assert (preset["name"], preset["namespaceId"]) == ("From source", source.ns.id)
    assert preset["template"] == {
        "agent": {"executionMode": "embedded", "plugins": {},
                  "harnessAuth": {"method": "api_key", "source": ref(source.model_key)}},
        "configuration": {"values": VALUES, "secretBindings": {
            "GITHUB_TOKEN": {"source": ref(source.token), "delivery": {"type": "env"}}}},
    }
    assert CANARY not in json.dumps(response.body)
    events = AuditEvent.objects.filter(action="openclaw.presets.create", resource_id=preset["id"])
    assert events.count() == 1
    assert "gpt-6" not in json.dumps(events.get().details)
    assert Agent.objects.get(id=source.agent["id"]).updated_at == agent_before  # the Agent is not touched

    rendered = api.post(f"/namespaces/{source.ns.id}/presets/{preset['id']}/render", {})
    assert rendered.status == 200, rendered.body
    assert rendered.data["needsCredential"] is False
    body = {**rendered.data["request"], "name": "copy-bot", "requestId": "req_saveaspreset01"}
    admitted = api.post(f"/namespaces/{source.ns.id}/agents/provision", body)
    assert admitted.status == 202, admitted.body
    plan = AgentProvisioningWork.objects.get().plan
    assert plan["harnessAuth"]["source"]["id"] == source.model_key.id
    assert plan["configuration"]["secretBindings"]["GITHUB_TOKEN"]["source"]["id"] == source.token.id


def test_the_name_is_checked_like_a_preset_create(api, source):
    assert api.post(source.save_url, {"name": "Twice"}).status == 201
    again = api.post(source.save_url, {"name": "Twice"})
    assert (again.status, again.error_code) == (409, "RESOURCE_CONFLICT")
    missing = api.post(source.save_url, {})
    assert (missing.status, missing.body["error"]["details"][0]["path"]) == (400, "/name")
    extra = api.post(source.save_url, {"name": "x", "template": {}})
    assert (extra.status, extra.body["error"]["details"][0]["path"]) == (400, "/template")
    assert Preset.objects.filter(namespace=source.ns, name="x").count() == 0


def test_an_unknown_agent_is_404(api, source):
    gone = api.post(f"/namespaces/{source.ns.id}/agents/agt_00000000-0000-4000-8000-000000000000/save-as-preset",
                    {"name": "ghost"})
    assert gone.status == 404


@pytest.mark.parametrize(("permissions", "status"), [
    pytest.param(("read:agent", "read:configuration"), 403, id="without-preset-create"),
    pytest.param(("create:preset", "read:configuration"), 403, id="without-agent-read"),
    pytest.param(("create:preset", "read:agent"), 403, id="without-configuration-read"),
    pytest.param(("create:preset", "read:agent", "read:configuration"), 201, id="exactly-enough"),
])
def test_it_needs_read_on_the_agent_and_its_configuration_and_preset_create(source, permissions, status):
    caller = service_principal("saver")
    grant(caller, *permissions, namespace=source.ns)
    response = ApiClient(key_for(caller)).post(source.save_url, {"name": "By a caller"})
    assert response.status == status, response.body
    assert Preset.objects.filter(namespace=source.ns, name="By a caller").count() == (1 if status == 201 else 0)
