"""Helpers for the Agent, revision and secret-access tests."""

from __future__ import annotations

from typing import Any

from occ.iam.permissions import VALID_ACTIONS, permission
from occ.models import (
    AccessBinding,
    Agent,
    AgentRevision,
    AuditEvent,
    ControllerWork,
    Namespace,
    Principal,
    Role,
    Secret,
)
from tests.conftest import ApiClient
from tests.factories import grant, key_for, service_principal

ALL_AGENT_PERMISSIONS = tuple(permission(action, "agent") for action in sorted(VALID_ACTIONS["agent"]))

SNAPSHOT = {
    "configurationKind": "agent",
    "configuration": {"agents": {"defaults": {"model": "openai/gpt-5"}}},
    "harness": {"id": "openclaw", "version": "2026.1.0", "mode": "embedded"},
    "compute": {"id": "local", "implementation": "local"},
    "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": "NS", "id": "sec_x"}},
    "backendId": None,
    "secretBindings": {},
    "pluginApprovers": [{"channel": "slack", "id": "U1"}],
    # Internal keys: never exposed.
    "servicePrincipalId": "sp_internal",
    "sandboxDriver": "none",
}


def state() -> dict[str, int]:
    """Row counts of everything an Agent route could write."""
    return {
        "agents": Agent.objects.count(),
        "principals": Principal.objects.count(),
        "audit": AuditEvent.objects.count(),
        "denials": AuditEvent.objects.filter(kind="authorization_denial").count(),
        "bindings": AccessBinding.objects.count(),
        "roles": Role.objects.count(),
        "work": ControllerWork.objects.count(),
        "revisions": AgentRevision.objects.count(),
        "secrets": Secret.objects.count(),
    }


def after_one_denial(before: dict[str, int]) -> dict[str, int]:
    return {**before, "audit": before["audit"] + 1, "denials": before["denials"] + 1}


def caller(*permissions: str, namespace: Namespace | None = None, **scope: Any) -> tuple[Principal, ApiClient]:
    """A service principal holding ``permissions`` at the given scope, and an API client with its key."""
    principal = service_principal(f"caller-{Principal.objects.count()}")
    if permissions:
        grant(principal, *permissions, namespace=namespace, **scope)
    return principal, ApiClient(key_for(principal))


def make_revision(agent: Agent, number: int, **snapshot: Any) -> AgentRevision:
    body = {**SNAPSHOT, **snapshot}
    body["harnessAuth"] = {**body["harnessAuth"], "source": {**body["harnessAuth"]["source"],
                                                               "namespaceId": agent.namespace_id}}
    return AgentRevision.objects.create(
        namespace_id=agent.namespace_id, agent=agent, number=number, configuration_id=agent.configuration_id,
        configuration_generation=number, snapshot=body, created_by="prn_test",
    )
