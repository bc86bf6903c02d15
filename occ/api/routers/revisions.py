from __future__ import annotations

from typing import Any, Literal

from django.http import JsonResponse
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.api.wire import revision_diff_wire, revision_wire
from occ.selectors.configurations import configuration_names
from occ.selectors.revisions import SECTION_ORDER, revision_diff, revision_get, revision_page

router = Router(tags=["revisions"])

class RevisionOut(ResponseSchema):
    id: str
    namespaceId: str
    agentId: str
    revision: int
    createdAt: str
    configurationId: str
    configurationName: str | None = Field(description="The Configuration's name now; null once it is deleted.")
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
    smokeConversations: list[dict[str, str]] | None = Field(
        default=None, description="Set when the Agent had smoke conversations: each had to match through a "
        "candidate gateway before this revision replaced the serving one.")
    sourceRevisionId: str | None = Field(default=None, description="Set on a redeploy: the revision whose "
                                         "snapshot this one was admitted from.")


RevisionEnvelope = envelope_of(RevisionOut, "RevisionEnvelope")


class RevisionChangeOut(ResponseSchema):
    section: Literal[SECTION_ORDER]  # type: ignore[valid-type]
    op: Literal["added", "removed", "changed"]
    path: str = Field(description="A JSON pointer into the revision (e.g. /configuration/agents/defaults/model).")
    before: Any = Field(default=None, description="The earlier revision's value; absent when added.")
    after: Any = Field(default=None, description="This revision's value; absent when removed.")


class RevisionDiffOut(ResponseSchema):
    revisionId: str
    revision: int
    previousRevisionId: str | None = Field(description="Null for the Agent's first revision: every field is added.")
    previousRevision: int | None
    changes: list[RevisionChangeOut]


class RevisionPageOut(ResponseSchema):
    revisions: list[RevisionOut]
    nextCursor: str | None


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/revisions",
            response={200: envelope_of(RevisionPageOut, "RevisionPageEnvelope")})
def list_revisions(request: ApiRequest, namespace_id: str, agent_id: str,
                   cursor: str = Query("", max_length=200, description="A nextCursor from the page before."),
                   limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The Agent's revisions the caller may read (``agent:read`` on the Agent, then
    ``agent_revision:read`` on each), oldest first. Pass ``nextCursor`` as ``cursor`` for the
    next page; it is null on the last."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    revisions, next_cursor = revision_page(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                                           after=cursor, page_size=limit)
    names = configuration_names(namespace_id=namespace_id, configuration_ids=[r.configuration_id for r in revisions])
    return respond({"revisions": [revision_wire(r, names) for r in revisions], "nextCursor": next_cursor})


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/revisions/{revision_id}",
            response={200: RevisionEnvelope})
def get_revision(request: ApiRequest, namespace_id: str, agent_id: str, revision_id: str) -> JsonResponse:
    revision = revision_get(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                            revision_id=revision_id)
    return respond(revision_wire(revision))


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/revisions/{revision_id}/diff",
            response={200: envelope_of(RevisionDiffOut, "RevisionDiffEnvelope")})
def diff_revision(request: ApiRequest, namespace_id: str, agent_id: str, revision_id: str) -> JsonResponse:
    """What this revision deploys differently from the Agent's revision before it, by JSON
    pointer: the configuration document, its channel settings, Secret bindings, credentials
    metadata (references and ids, never a value), plugins and the runtime. Needs
    ``agent_revision:read`` on both revisions (403 naming the earlier one otherwise)."""
    diff = revision_diff(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id, revision_id=revision_id)
    return respond(revision_diff_wire(diff))

