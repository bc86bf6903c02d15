"""The channel directory lookup behind the console's Slack people and channel pickers."""

from __future__ import annotations

from typing import Annotated, Literal

from django.http import JsonResponse
from ninja import Router
from pydantic import Field, StringConstraints

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.schemas import RequestSchema, ResponseSchema, envelope_of
from occ.services.channel_directory import IDS_MAX, channel_directory_lookup

router = Router(tags=["channels"])

DirectoryId = Annotated[str, StringConstraints(max_length=64)]


class DirectoryLookup(RequestSchema):
    secretId: str
    kind: Literal["users", "channels"]
    query: Annotated[str, StringConstraints(max_length=200)] | None = None
    cursor: Annotated[str, StringConstraints(max_length=2000)] | None = None
    ids: Annotated[list[DirectoryId], Field(max_length=IDS_MAX)] | None = None
    # The picker edits this exact Agent / Configuration: their update right replaces agent:create.
    agentId: str | None = None
    configurationId: str | None = None


class DirectoryCandidateOut(ResponseSchema):
    id: str
    name: str
    displayName: str | None = None


class DirectoryPageOut(ResponseSchema):
    workspaceId: str
    workspaceName: str | None = None
    candidates: list[DirectoryCandidateOut]
    nextCursor: str | None = None
    complete: bool


@router.post("/namespaces/{namespace_id}/channel-directory/lookup",
             response={200: envelope_of(DirectoryPageOut, "ChannelDirectoryEnvelope")})
def lookup_channel_directory(request: ApiRequest, namespace_id: str, payload: DirectoryLookup) -> JsonResponse:
    page = channel_directory_lookup(
        actor=request.auth, namespace_id=namespace_id, secret_id=payload.secretId, kind=payload.kind,
        query=payload.query, cursor=payload.cursor, ids=payload.ids, agent_id=payload.agentId,
        configuration_id=payload.configurationId,
    )
    return respond(page.as_wire())
