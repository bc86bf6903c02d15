"""Sessions and transcripts, and the approvals inbox (issue 29): the fleet's sessions the caller
may read (``read_conversations:agent``), one Agent's, one transcript (read from the gateway on
demand, audited, never stored; JSON or Markdown to export), and the approvals the caller may
answer (``decide_approvals:agent``), each decided once."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpResponse, JsonResponse
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.approvals import ApprovalDecide
from occ.errors import InvalidRequest
from occ.models import AgentSession
from occ.selectors.agent_sessions import SessionQuery, agent_session_page, session_page
from occ.services.agent_sessions import Transcript, TranscriptEntry, agent_transcript_read, transcript_markdown
from occ.services.approvals import Approval, approval_decide, approvals_pending
from occ.timestamps import rfc3339

router = Router(tags=["sessions"])

_TEXT = {"max_length": 200, "pattern": r"^[^\x00-\x1f\x7f]*$"}
FILTERS = frozenset({"channel", "person", "since", "until", "cursor", "limit"})


class AgentSessionOut(ResponseSchema):
    id: str
    namespaceId: str
    agentId: str
    agentName: str
    key: str = Field(description="The gateway's session key.")
    title: str
    channel: str
    person: str = Field(description="Who the session is with, when the channel says.")
    messageCount: int | None
    inputTokens: int | None
    outputTokens: int | None
    totalTokens: int | None
    lastActivityAt: str
    refreshedAt: str


class SessionPageOut(ResponseSchema):
    sessions: list[AgentSessionOut]
    nextCursor: str | None


class ToolCallOut(ResponseSchema):
    name: str
    arguments: str = Field(description="On one line, cut, redacted.")


class TranscriptEntryOut(ResponseSchema):
    role: str = Field(description="user, assistant, tool (a tool's result) or system.")
    text: str
    at: str | None
    toolCalls: list[ToolCallOut]
    toolName: str
    isError: bool


class TranscriptOut(ResponseSchema):
    session: AgentSessionOut
    entries: list[TranscriptEntryOut]
    more: bool = Field(description="The gateway holds older messages than these.")


class ApprovalOut(ResponseSchema):
    kind: Literal["exec", "plugin"]
    id: str
    namespaceId: str
    agentId: str
    agentName: str
    sessionKey: str
    command: str = Field(description="The command line, or the plugin's tool and title; secrets redacted.")
    arguments: str
    cwd: str
    createdAt: str | None
    expiresAt: str | None


class AgentRefOut(ResponseSchema):
    namespaceId: str
    agentId: str
    agentName: str


class InboxOut(ResponseSchema):
    approvals: list[ApprovalOut]
    unreachable: list[AgentRefOut] = Field(description="Running Agents whose gateway did not answer in time.")


class DecisionOut(ResponseSchema):
    approvalId: str
    kind: str
    decision: str
    decidedBy: str


def session_wire(session: AgentSession) -> dict[str, Any]:
    return {"id": session.id, "namespaceId": session.namespace_id, "agentId": session.agent_id,
            "agentName": session.agent.name, "key": session.key, "title": session.title, "channel": session.channel,
            "person": session.person, "messageCount": session.message_count, "inputTokens": session.input_tokens,
            "outputTokens": session.output_tokens, "totalTokens": session.total_tokens,
            "lastActivityAt": rfc3339(session.last_activity_at), "refreshedAt": rfc3339(session.refreshed_at)}


def _entry_wire(entry: TranscriptEntry) -> dict[str, Any]:
    return {"role": entry.role, "text": entry.text, "at": rfc3339(entry.at),
            "toolCalls": [{"name": call.name, "arguments": call.arguments} for call in entry.tool_calls],
            "toolName": entry.tool_name, "isError": entry.is_error}


def transcript_wire(transcript: Transcript, query: str = "") -> dict[str, Any]:
    return {"session": session_wire(transcript.session),
            "entries": [_entry_wire(entry) for entry in transcript.searched(query)], "more": transcript.more}


def approval_wire(approval: Approval) -> dict[str, Any]:
    return {"kind": approval.kind, "id": approval.id, "namespaceId": approval.agent.namespace_id,
            "agentId": approval.agent.id, "agentName": approval.agent.name, "sessionKey": approval.session_key,
            "command": approval.command, "arguments": approval.arguments, "cwd": approval.cwd,
            "createdAt": rfc3339(approval.created_at), "expiresAt": rfc3339(approval.expires_at)}


def _query(agent_id: str, channel: str, person: str, since: datetime | None, until: datetime | None) -> SessionQuery:
    if since and until and until <= since:
        raise InvalidRequest("until must be later than since.")
    return SessionQuery(agent_id=agent_id.strip(), channel=channel.strip(), person=person.strip(), since=since,
                        until=until)


_CURSOR = Query("", description="A nextCursor from the page before.", **_TEXT)
_SINCE = Query(None, description="Last active from this moment (inclusive), RFC 3339.")
_UNTIL = Query(None, description="Last active before this moment, RFC 3339.")


@router.get("/sessions", response={200: envelope_of(SessionPageOut, "SessionPageEnvelope")})
def list_sessions(request: ApiRequest, agentId: str = Query("", **_TEXT),
                  channel: str = Query("", **_TEXT), person: str = Query("", description="Part of who.", **_TEXT),
                  since: datetime | None = _SINCE, until: datetime | None = _UNTIL, cursor: str = _CURSOR,
                  limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The sessions of every Agent whose conversations the caller may read
    (``read_conversations:agent``), newest activity first, from OCC's index (metadata only,
    refreshed by the worker from each running gateway)."""
    require_known_query(request, FILTERS | {"agentId"})
    rows, next_cursor = session_page(actor=request.auth, query=_query(agentId, channel, person, since, until),
                                     after=cursor, page_size=limit)
    return respond({"sessions": [session_wire(row) for row in rows], "nextCursor": next_cursor})


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/sessions",
            response={200: envelope_of(SessionPageOut, "AgentSessionPageEnvelope")})
def list_agent_sessions(request: ApiRequest, namespace_id: str, agent_id: str, channel: str = Query("", **_TEXT),
                        person: str = Query("", **_TEXT), since: datetime | None = _SINCE,
                        until: datetime | None = _UNTIL, cursor: str = _CURSOR,
                        limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """One Agent's sessions (the console's Sessions tab): ``read_conversations:agent`` on it."""
    require_known_query(request, FILTERS)
    _, rows, next_cursor = agent_session_page(
        actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
        query=_query("", channel, person, since, until), after=cursor, page_size=limit)
    return respond({"sessions": [session_wire(row) for row in rows], "nextCursor": next_cursor})


MARKDOWN = "text/markdown; charset=utf-8"


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/sessions/{session_id}",
            response={200: envelope_of(TranscriptOut, "TranscriptEnvelope")},
            openapi_extra={"responses": {200: {"description": "The transcript, or its export", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/TranscriptEnvelope"}},
                "text/markdown": {"schema": {"type": "string"}}}}}})
def get_transcript(request: ApiRequest, namespace_id: str, agent_id: str, session_id: str,
                   q: str = Query("", description="Only the messages holding this text.", **_TEXT),
                   format: Literal["json", "markdown"] = Query(
                       "json", description="markdown: the transcript as a Markdown file to download.")) -> HttpResponse:
    """The session's transcript, read from the Agent's gateway now (``chat.history``; OCC
    stores none of it): tool calls compact, secrets redacted. Each read is an audited access
    (who, which session). ``read_conversations:agent`` on the Agent; 409 ``AGENT_NOT_RUNNING``
    when its gateway is not running, 503 ``GATEWAY_UNAVAILABLE`` when it does not answer."""
    require_known_query(request, frozenset({"q", "format"}))
    transcript = agent_transcript_read(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                                       session_id=session_id, purpose="export" if format == "markdown" else "view")
    if format == "markdown":
        response = HttpResponse(transcript_markdown(transcript), content_type=MARKDOWN)
        response["Content-Disposition"] = f'attachment; filename="{session_id}.md"'
        return response
    return respond(transcript_wire(transcript, q.strip()))


@router.get("/approvals", response={200: envelope_of(InboxOut, "ApprovalInboxEnvelope")}, tags=["approvals"])
def list_approvals(request: ApiRequest) -> JsonResponse:
    """The exec and plugin approvals every running Agent the caller may answer for
    (``decide_approvals:agent``) waits on, read live from each gateway (bounded: those that do
    not answer in time are listed in ``unreachable``), soonest expiry first."""
    require_known_query(request, frozenset())
    inbox = approvals_pending(actor=request.auth)
    return respond({"approvals": [approval_wire(a) for a in inbox.approvals],
                    "unreachable": [{"namespaceId": a.namespace_id, "agentId": a.id, "agentName": a.name}
                                    for a in inbox.unreachable]})


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/approvals/{kind}/{approval_id}",
             response={200: envelope_of(DecisionOut, "ApprovalDecisionEnvelope")}, tags=["approvals"])
def decide_approval(request: ApiRequest, namespace_id: str, agent_id: str, kind: Literal["exec", "plugin"],
                    approval_id: str, payload: ApprovalDecide) -> JsonResponse:
    """Approve (once) or deny one approval: ``decide_approvals:agent`` on the Agent; audited
    with who decided. A second decision is 409 ``APPROVAL_ALREADY_DECIDED``; one the gateway no
    longer holds (expired) is 404."""
    decided = approval_decide(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id, kind=kind,
                              approval_id=approval_id, decision=payload.decision)
    return respond({"approvalId": decided.approval_id, "kind": decided.kind, "decision": decided.decision,
                    "decidedBy": decided.decided_by})
