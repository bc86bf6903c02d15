"""Plugin selections on the Agent: create, PATCH (omitted keeps, {} clears, a map replaces),
validation by the installation's PluginDriver (400 with the path, 501 without a driver), the
capabilities in GET /installation, and the deploy snapshot."""

from __future__ import annotations

import pytest

from occ.drivers.plugins.registry import forget_plugin_drivers
from occ.models import Agent, AgentRevision, AuditEvent, ControllerWork
from tests.agents_support import state
from tests.factories import ConfigurationFactory
from tests.fakes.compute import deployable_agent

WORKBOARD = "occ-plugin:workboard"
SYNOLOGY = "occ-plugin:synology-chat"
SELECTIONS = {
    WORKBOARD: {"enabled": True, "toolDefaults": {"enabled": False, "approval": "none"},
                "tools": {"workboard_list": {"enabled": True}}},
    SYNOLOGY: {"enabled": True},
}


@pytest.fixture(autouse=True)
def _fresh_drivers():
    forget_plugin_drivers()
    yield
    forget_plugin_drivers()


@pytest.fixture
def agents_url(ready_namespace) -> str:
    return f"/namespaces/{ready_namespace.id}/agents"


@pytest.fixture
def cfg(ready_namespace) -> str:
    return ConfigurationFactory(namespace=ready_namespace).id


def test_create_stores_audits_and_renders_the_selections(api, agents_url, cfg):
    response = api.post(agents_url, {"name": "helper", "configurationId": cfg, "plugins": SELECTIONS})

    assert response.status == 201, response.body
    assert response.data["plugins"] == SELECTIONS
    agent = Agent.objects.get(id=response.data["id"])
    assert agent.plugins == SELECTIONS
    assert api.get(f"{agents_url}/{agent.id}").data["plugins"] == SELECTIONS
    event = AuditEvent.objects.get(action="openclaw.agents.create", resource_id=agent.id)
    assert event.details["plugins"] == sorted(SELECTIONS)


INVALID = [
    pytest.param({"occ-plugin:nope": {"enabled": True}}, "INVALID_VALUE", "/plugins/occ-plugin:nope", id="unknown"),
    pytest.param({WORKBOARD: {"enabled": True, "toolDefaults": {"approval": "write_actions"}}}, "INVALID_VALUE",
                 f"/plugins/{WORKBOARD}/toolDefaults/approval", id="unsupported-mode"),
    pytest.param({WORKBOARD: {"enabled": True, "tools": {"workboard_list": {"reviewer": "human"}}}},
                 "INVALID_VALUE", f"/plugins/{WORKBOARD}/tools/workboard_list/reviewer", id="tool-reviewer"),
    pytest.param({WORKBOARD: {"enabled": True, "toolDefaults": {"approval": "approve"}}}, "INVALID_VALUE",
                 f"/plugins/{WORKBOARD}/toolDefaults/approval", id="legacy-mode"),
    pytest.param({WORKBOARD: {"enabled": True, "approvalMode": "native"}}, "UNKNOWN_FIELD",
                 f"/plugins/{WORKBOARD}/approvalMode", id="legacy-field"),
    pytest.param({WORKBOARD: {"enabled": True, "toolDefaults": {}}}, "INVALID_VALUE",
                 f"/plugins/{WORKBOARD}/toolDefaults", id="empty-policy"),
    pytest.param({WORKBOARD: {"enabled": "yes"}}, "INVALID_TYPE", f"/plugins/{WORKBOARD}/enabled", id="type"),
    pytest.param({WORKBOARD: {"enabled": True, "driverPolicy": {"destructiveEnabled": True}}}, "UNKNOWN_FIELD",
                 f"/plugins/{WORKBOARD}/driverPolicy/destructiveEnabled", id="driver-policy"),
    pytest.param({"bad key!": {"enabled": True}}, "INVALID_FORMAT", "/plugins/bad key!", id="key"),
]


@pytest.mark.parametrize(("plugins", "code", "path"), INVALID)
def test_create_refuses_invalid_selections_at_their_path_and_writes_nothing(api, agents_url, cfg, plugins, code,
                                                                             path):
    before = state()
    response = api.post(agents_url, {"name": "helper", "configurationId": cfg, "plugins": plugins})

    assert response.status == 400, response.body
    assert response.error_code == "INVALID_REQUEST"
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert state() == before


def test_without_a_plugin_driver_selections_are_501_and_none_still_pass(api, agents_url, cfg, settings):
    settings.OCC_PLUGIN_DRIVER = ""
    before = state()
    refused = api.post(agents_url, {"name": "helper", "configurationId": cfg, "plugins": SELECTIONS})
    assert (refused.status, refused.error_code) == (501, "NOT_IMPLEMENTED")
    assert state() == before
    assert api.post(agents_url, {"name": "helper", "configurationId": cfg, "plugins": {}}).status == 201


def test_patch_omitted_keeps_empty_clears_a_map_replaces_and_nothing_else_moves(api, agents_url, cfg):
    created = api.post(agents_url, {"name": "helper", "configurationId": cfg, "plugins": SELECTIONS}).data
    url = f"{agents_url}/{created['id']}"
    agent = Agent.objects.get(id=created["id"])
    configuration_before = (agent.configuration.generation, agent.configuration.values)
    work_before = ControllerWork.objects.count()

    kept = api.patch(url, {"configurationId": cfg})
    assert kept.status == 200
    assert kept.data["plugins"] == SELECTIONS

    replacement = {SYNOLOGY: {"enabled": False}}
    replaced = api.patch(url, {"configurationId": cfg, "plugins": replacement})
    assert replaced.data["plugins"] == replacement
    assert Agent.objects.get(id=agent.id).plugins == replacement

    cleared = api.patch(url, {"configurationId": cfg, "plugins": {}})
    assert cleared.data["plugins"] == {}
    assert Agent.objects.get(id=agent.id).plugins == {}

    refused = api.patch(url, {"configurationId": cfg, "plugins": {WORKBOARD: {"enabled": True,
                                                                             "toolDefaults": {"reviewer": "auto"}}}})
    assert refused.status == 400
    assert Agent.objects.get(id=agent.id).plugins == {}

    agent.configuration.refresh_from_db()
    assert (agent.configuration.generation, agent.configuration.values) == configuration_before
    assert ControllerWork.objects.count() == work_before, "editing selections never queues work"
    updates = AuditEvent.objects.filter(action="openclaw.agents.update", resource_id=agent.id)
    fields = [e.details["fields"] for e in updates.order_by("occurred_at", "id")]
    assert fields == [["configurationId"], ["configurationId", "plugins"], ["configurationId", "plugins"]]


def test_installation_reports_the_drivers_capabilities(api, settings):
    capabilities = api.get("/installation").data["capabilities"]
    assert capabilities["pluginPolicies"]["driver"] == {"id": "openclaw", "implementation": "occ.openclaw-curated/1"}
    assert capabilities["pluginPolicies"]["toolDefaults"] == {
        "enabled": True, "approval": ["provider_default", "none"], "reviewer": []}
    assert capabilities["pluginDiscovery"] == {"credential": "none"}

    settings.OCC_PLUGIN_DRIVER = ""
    forget_plugin_drivers()
    assert "pluginPolicies" not in api.get("/installation").data["capabilities"]


def test_deploy_snapshots_the_driver_and_the_policy_only_map(api, ready_namespace, fake_compute):
    agent = deployable_agent(ready_namespace, bound=0)
    Agent.objects.filter(id=agent.id).update(plugins=SELECTIONS)

    response = api.post(f"/namespaces/{ready_namespace.id}/agents/{agent.id}/deploy")

    assert response.status == 202, response.body
    snapshot = AgentRevision.objects.get(id=response.data["id"]).snapshot
    assert snapshot["plugins"] == {"driver": {"id": "openclaw", "implementation": "occ.openclaw-curated/1"},
                                   "plugins": SELECTIONS}
    assert response.data["plugins"] == snapshot["plugins"]


def test_deploy_revalidates_the_stored_selections(api, ready_namespace, fake_compute, settings):
    agent = deployable_agent(ready_namespace, bound=0)
    url = f"/namespaces/{ready_namespace.id}/agents/{agent.id}/deploy"
    Agent.objects.filter(id=agent.id).update(plugins={WORKBOARD: {"enabled": True,
                                                                  "toolDefaults": {"approval": "all_actions"}}})
    refused = api.post(url)
    assert refused.status == 400
    assert {"code": "INVALID_VALUE", "path": f"/plugins/{WORKBOARD}/toolDefaults/approval"} in \
        refused.body["error"]["details"]

    Agent.objects.filter(id=agent.id).update(plugins=SELECTIONS)
    settings.OCC_PLUGIN_DRIVER = ""
    forget_plugin_drivers()
    assert api.post(url).status == 501
    assert not AgentRevision.objects.filter(agent_id=agent.id).exists()


def test_codex_selections_of_an_api_key_agent_are_admitted_for_deploy(api, ready_namespace, fake_compute, settings):
    """They deploy disabled with PLUGIN_AUTH_REQUIRED (the compute driver's startup); admission
    refuses nothing the Codex driver's static checks accept."""
    settings.OCC_PLUGIN_DRIVER = "codex"
    forget_plugin_drivers()
    agent = deployable_agent(ready_namespace, bound=0)
    linear = {"codex-plugin:linear@openai-curated-remote": {"enabled": True, "toolDefaults": {"reviewer": "auto"}}}
    Agent.objects.filter(id=agent.id).update(plugins=linear)

    response = api.post(f"/namespaces/{ready_namespace.id}/agents/{agent.id}/deploy")

    assert response.status == 202, response.body
    assert response.data["plugins"] == {"driver": {"id": "codex", "implementation": "occ/codex-plugin"},
                                        "plugins": linear}
