from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.schemas import ResponseSchema, envelope_of
from occ.models import AgentRevision
from occ.selectors.revisions import revision_get, revision_list
from occ.wire import rfc3339

router = Router(tags=["revisions"])

# Public keys of AgentRevision.snapshot (spec §1.8), stored under their wire names. The
# snapshot may hold internal keys too (the Agent's service principal, driver selections):
# only these are ever exposed.
SNAPSHOT_PUBLIC_FIELDS = (
    "configuration", "harness", "compute", "harnessAuth", "backendId", "secretBindings", "pluginApprovers",
)
SNAPSHOT_OPTIONAL_FIELDS = ("secretDriverId", "plugins", "repositoryCredentials")


class RevisionOut(ResponseSchema):
    id: str
    namespaceId: str
    agentId: str
    revision: int
    createdAt: str
    configurationId: str
    configurationKind: str
    configurationGeneration: int
    configuration: dict[str, Any]
    harness: dict[str, Any]
    compute: dict[str, Any]
    harnessAuth: dict[str, Any]
    backendId: str | None
    secretBindings: dict[str, Any]
    pluginApprovers: list[dict[str, str]]
    secretDriverId: str | None = None
    plugins: dict[str, Any] | None = None
    repositoryCredentials: dict[str, Any] | None = None


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


RevisionEnvelope = envelope_of(RevisionOut, "RevisionEnvelope")


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/revisions",
            response={200: envelope_of(list[RevisionOut], "RevisionListEnvelope")})
def list_revisions(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    revisions = revision_list(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)
    return respond([revision_wire(r) for r in revisions])


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/revisions/{revision_id}",
            response={200: RevisionEnvelope})
def get_revision(request: ApiRequest, namespace_id: str, agent_id: str, revision_id: str) -> JsonResponse:
    revision = revision_get(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                            revision_id=revision_id)
    return respond(revision_wire(revision))
