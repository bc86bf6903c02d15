"""The inputs of the captured documents in ``fixtures/``: unsaved rows with fixed ids, built the
same way for the code that wrote the fixtures (``ed7f21c``: ``deploy._snapshot``,
``deploy._redeploy_snapshot`` and ``provisioning.provision_plan``, when they still built dicts)
and for today's typed builders, which must write the same JSON and the same fingerprints."""

from __future__ import annotations

from typing import Any

from occ.commands.provisioning import ProvisionCommand
from occ.models import Agent, AgentRevision, Configuration, Principal, Secret

NAMESPACE = "ns_0b6f5a7e-3c1d-4e8f-9a2b-1c3d5e7f9a0b"
AGENT = "agt_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
CONFIGURATION = "cfg_2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"
HARNESS_SECRET = "sec_3c4d5e6f-7a8b-4c9d-8e0f-2a3b4c5d6e7f"
TOOL_SECRET = "sec_4d5e6f7a-8b9c-4d0e-9f1a-3b4c5d6e7f8a"
SLACK_SECRET = "sec_5e6f7a8b-9c0d-4e1f-8a2b-4c5d6e7f8a9b"
PRINCIPAL = "sp_6f7a8b9c-0d1e-4f2a-9b3c-5d6e7f8a9b0c"
SOURCE_REVISION = "rev_7a8b9c0d-1e2f-4a3b-8c4d-6e7f8a9b0c1d"

WORKBOARD = "occ-plugin:workboard"
SELECTIONS = {
    WORKBOARD: {"enabled": True, "toolDefaults": {"enabled": False, "approval": "none"},
                "tools": {"workboard_list": {"enabled": True}}},
    "occ-plugin:synology-chat": {"enabled": True},
}
APPROVERS = [{"channel": "slack", "id": "U012345"}]
VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}, "params": {
    "ratio": 0.5, "count": 3, "flag": False, "nothing": None, "text": "ünïcode ✓"}}},
    "channels": {"slack": {"enabled": True, "botToken": "${SLACK_BOT_TOKEN}"}}}


def secret(secret_id: str) -> Secret:
    return Secret(id=secret_id, namespace_id=NAMESPACE, name=secret_id[-4:])


def configuration(kind: str = "agent") -> Configuration:
    return Configuration(id=CONFIGURATION, namespace_id=NAMESPACE, kind=kind, values=VALUES, generation=3)


def agent(*, harness: bool = True, plugins: dict[str, Any] | None = None,
          approvers: list[dict[str, str]] | None = None, backend_id: str | None = None) -> Agent:
    row = Agent(id=AGENT, namespace_id=NAMESPACE, name="captured", configuration_id=CONFIGURATION,
                execution_mode="embedded", harness_auth_method="api_key" if harness else None,
                harness_secret_id=HARNESS_SECRET if harness else None, backend_id=backend_id,
                plugins=plugins or {}, plugin_approvers=approvers)
    Agent.service_principal.related.set_cached_value(row, Principal(id=PRINCIPAL, name="agent captured"))
    return row


def bindings() -> dict[str, Secret]:
    """What ``deploy._bound_secrets`` returns: env name -> Secret, sorted by name."""
    return {"SLACK_BOT_TOKEN": secret(SLACK_SECRET), "TOOL_TOKEN": secret(TOOL_SECRET)}


DEPLOYS: dict[str, dict[str, Any]] = {
    # name -> the keyword arguments of ``agent`` (the Configuration and bindings are always the same)
    "deploy-plain": {},
    "deploy-plugins": {"plugins": SELECTIONS, "approvers": APPROVERS, "backend_id": None},
    "deploy-no-harness": {"harness": False, "approvers": []},
}


def source_revision(snapshot: dict[str, Any]) -> AgentRevision:
    return AgentRevision(id=SOURCE_REVISION, namespace_id=NAMESPACE, agent_id=AGENT, number=4,
                         configuration_id=CONFIGURATION, configuration_generation=2, snapshot=snapshot)


# Sources of a redeploy: stored snapshots as older code and the tests' own rows have them.
REDEPLOY_SOURCES: dict[str, dict[str, Any]] = {
    # The first deploy snapshots (91d9ded): plugins without a driver, nothing about the origin.
    "redeploy-first-generation": {
        "configurationKind": "agent", "configuration": VALUES,
        "harness": {"id": "openclaw", "version": "2026.1.0", "mode": "embedded"},
        "compute": {"id": "fake", "implementation": "fake"},
        "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": NAMESPACE,
                                                        "id": HARNESS_SECRET}},
        "backendId": None,
        "secretBindings": {"TOOL_TOKEN": {"source": {"kind": "secret", "namespaceId": NAMESPACE, "id": TOOL_SECRET},
                                          "delivery": {"type": "env"}}},
        "secretDriverId": "database", "plugins": {"plugins": {}}, "pluginApprovers": None,
        "executionMode": "embedded", "servicePrincipalId": PRINCIPAL,
    },
    # A sparse row: no kind, no bindings, no approvers, harnessAuth null, an unknown key.
    "redeploy-sparse": {
        "configuration": VALUES, "harness": {"id": "openclaw", "version": "2026.1.0", "mode": "embedded"},
        "compute": {"id": "fake", "implementation": "fake"}, "harnessAuth": None, "sandboxDriver": "none",
    },
}


def provision_command(**changes: Any) -> ProvisionCommand:
    body: dict[str, Any] = {
        "requestId": "req_captured-plan-1",
        "name": "captured",
        "configuration": {"kind": "agent", "values": VALUES, "secretBindings": {
            "TOOL_TOKEN": {"source": {"kind": "secret", "namespaceId": NAMESPACE, "id": TOOL_SECRET}},
            "SLACK_BOT_TOKEN": {"source": {"kind": "secret", "namespaceId": NAMESPACE, "id": SLACK_SECRET},
                                "delivery": {"type": "env"}}}},
        "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": NAMESPACE,
                                                        "id": HARNESS_SECRET}},
    }
    return ProvisionCommand.model_validate({**body, **changes})


PLANS: dict[str, dict[str, Any]] = {
    # name -> the fields changed in the request body
    "plan-minimal": {},
    "plan-full": {"plugins": SELECTIONS, "pluginApprovers": APPROVERS, "backendId": None,
                  "initialWorkspaceFiles": {"AGENTS.md": "# Rules\n", "SOUL.md": "calm"},
                  "repositoryBindings": [], "executionMode": "embedded"},
}
