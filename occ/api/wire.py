"""Wire rendering shared by the routers: how domain objects appear in API responses.

Models and services return domain objects; only the API turns them into camelCase shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from occ.documents import HarnessAuth, SecretBinding, SecretRef
from occ.models import AgentRevision, Configuration
from occ.selectors.configurations import configuration_names as configuration_names_of
from occ.selectors.configurations import configuration_secret_ids
from occ.selectors.deployments import AgentRuntime, DeploymentStatus, Diagnostics
from occ.selectors.revisions import Change, RevisionDiff, revision_document
from occ.timestamps import rfc3339


def secret_ref_wire(namespace_id: str, secret_id: str) -> dict[str, str]:
    """A Secret reference, never its value."""
    return SecretRef.to(namespace_id, secret_id).document()


def harness_auth_wire(method: str | None, namespace_id: str, secret_id: str | None) -> dict[str, Any] | None:
    """The public ``harnessAuth`` of an Agent: a Secret reference, never a value."""
    if method is None or secret_id is None:
        return None
    return HarnessAuth.of(method, namespace_id, secret_id).document()


def secret_bindings_wire(configuration: Configuration) -> dict[str, dict[str, Any]]:
    """``{ENV_NAME: {source, delivery}}``; every bound Secret lives in the Configuration's Namespace."""
    return {env: SecretBinding.env(SecretRef.to(configuration.namespace_id, secret_id)).document()
            for env, secret_id in configuration_secret_ids(configuration).items()}


def revision_wire(revision: AgentRevision, configuration_names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The public AgentRevision, read from its immutable spec, and its Configuration's name now
    (a list passes its revisions' ``configuration_names``, else the one is read).

    The one mapping from spec to wire: revision reads and the deploy response use it.
    """
    spec = revision.spec
    if configuration_names is None:
        configuration_names = configuration_names_of(namespace_id=revision.namespace_id,
                                                     configuration_ids=[revision.configuration_id])
    data: dict[str, Any] = {
        "id": revision.id,
        "namespaceId": revision.namespace_id,
        "agentId": revision.agent_id,
        "revision": revision.number,
        "createdAt": rfc3339(revision.created_at),
        **revision_document(revision),
        "configurationName": configuration_names.get(revision.configuration_id),
    }
    if spec.source_revision_id is not None:
        data["sourceRevisionId"] = spec.source_revision_id
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
            "status": status.status, "error": status.error,
            "warnings": [warning.document() for warning in status.warnings], "progress": status.progress}


def agent_runtime_wire(runtime: AgentRuntime) -> dict[str, Any]:
    return {"state": runtime.state, "revisionId": runtime.revision_id, "revision": runtime.revision_number,
            "retrying": runtime.retrying, "reason": runtime.reason}


def diagnostics_wire(diagnostics: Diagnostics) -> dict[str, Any]:
    return {"revisionId": diagnostics.revision_id, "observedAt": rfc3339(diagnostics.observed_at),
            "checks": diagnostics.checks}
