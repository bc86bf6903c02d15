"""Wire rendering shared by the routers: how domain objects appear in API responses.

Models and services return domain objects; only the API turns them into camelCase shapes.
"""

from __future__ import annotations

from typing import Any

from occ.models import AgentRevision, Configuration
from occ.selectors.configurations import configuration_secret_ids
from occ.selectors.deployments import AgentRuntime, DeploymentStatus, Diagnostics
from occ.selectors.revisions import SNAPSHOT_OPTIONAL_FIELDS, SNAPSHOT_PUBLIC_FIELDS, Change, RevisionDiff
from occ.timestamps import rfc3339


def secret_ref_wire(namespace_id: str, secret_id: str) -> dict[str, str]:
    """A Secret reference, never its value."""
    return {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}


def harness_auth_wire(method: str | None, namespace_id: str, secret_id: str | None) -> dict[str, Any] | None:
    """The public ``harnessAuth`` of an Agent: a Secret reference, never a value."""
    if method is None or secret_id is None:
        return None
    return {"method": method, "source": secret_ref_wire(namespace_id, secret_id)}


def secret_bindings_wire(configuration: Configuration) -> dict[str, dict[str, Any]]:
    """``{ENV_NAME: {source, delivery}}``; every bound Secret lives in the Configuration's Namespace."""
    return {env: {"source": secret_ref_wire(configuration.namespace_id, secret_id), "delivery": {"type": "env"}}
            for env, secret_id in configuration_secret_ids(configuration).items()}


def revision_wire(revision: AgentRevision) -> dict[str, Any]:
    """The public AgentRevision, read from its immutable snapshot.

    The one mapping from snapshot to wire: revision reads and the deploy response use it.
    """
    snapshot = revision.snapshot
    data: dict[str, Any] = {
        "id": revision.id,
        "namespaceId": revision.namespace_id,
        "agentId": revision.agent_id,
        "revision": revision.number,
        "createdAt": rfc3339(revision.created_at),
        "configurationId": revision.configuration_id,
        "configurationKind": snapshot.get("configurationKind", "agent"),
        "configurationGeneration": revision.configuration_generation,
    }
    for key in SNAPSHOT_PUBLIC_FIELDS:
        data[key] = snapshot.get(key)
    for key in SNAPSHOT_OPTIONAL_FIELDS:
        if snapshot.get(key) is not None:
            data[key] = snapshot[key]
    return data


def revision_diff_wire(diff: RevisionDiff) -> dict[str, Any]:
    def change(item: Change) -> dict[str, Any]:
        data: dict[str, Any] = {"section": item.section, "op": item.op, "path": item.path}
        if item.op != "added":
            data["before"] = item.before
        if item.op != "removed":
            data["after"] = item.after
        return data

    previous = diff.previous
    return {"revisionId": diff.revision.id, "revision": diff.revision.number,
            "previousRevisionId": previous.id if previous else None,
            "previousRevision": previous.number if previous else None,
            "changes": [change(item) for item in diff.changes]}


def deployment_status_wire(status: DeploymentStatus) -> dict[str, Any]:
    return {"deploymentId": status.deployment_id, "namespaceId": status.namespace_id, "agentId": status.agent_id,
            "status": status.status, "error": status.error, "warnings": status.warnings, "progress": status.progress}


def agent_runtime_wire(runtime: AgentRuntime) -> dict[str, Any]:
    return {"state": runtime.state, "revisionId": runtime.revision_id, "revision": runtime.revision_number,
            "retrying": runtime.retrying, "reason": runtime.reason}


def diagnostics_wire(diagnostics: Diagnostics) -> dict[str, Any]:
    return {"revisionId": diagnostics.revision_id, "observedAt": rfc3339(diagnostics.observed_at),
            "checks": diagnostics.checks}
