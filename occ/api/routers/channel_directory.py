"""The channel directory lookup behind the console's Slack people and channel pickers."""

from __future__ import annotations

from django.http import JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.channel_directory import DirectoryLookup
from occ.services.channel_directory import channel_directory_lookup

router = Router(tags=["channels"])


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
    page = channel_directory_lookup(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(page.as_wire())
