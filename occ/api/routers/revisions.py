from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.schemas import ResponseSchema, envelope_of
from occ.api.wire import revision_wire
from occ.selectors.revisions import revision_get, revision_list

router = Router(tags=["revisions"])

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
