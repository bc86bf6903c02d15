"""Sessions and transcripts (issue 29): the session index the worker refreshes from each running
gateway's ``sessions.list`` (metadata only), and a transcript read from the gateway's
``chat.history`` when a person opens it: never stored by OCC, every read an ``access`` audit
event (who, which session; never the text), committed before the gateway is asked.

Tool calls are kept compact (the tool's name and its arguments on one line, cut), and every
text of a transcript passes the Agent's redactor first: the values of the Secrets its gateway
was given never reach a page, an export or the API (``occ.drivers.compute.logs.Redactor``).
No database transaction is held across a gateway call: the refresh calls, then writes.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, ValidationError

from occ.drivers.compute.gateway_rpc import READ
from occ.drivers.compute.logs import Redactor, with_redactor
from occ.errors import NotImplementedYet
from occ.iam.actor import Actor
from occ.iam.permissions import Kind
from occ.models import Agent, AgentSession, AuditKind
from occ.selectors.agent_sessions import session_get
from occ.services.agent_gateway import GatewayNotRunning, GatewayUnavailable, gateway_call, runs
from occ.services.agent_logs import delivered_secrets
from occ.services.audit import audit_record

logger = logging.getLogger(__name__)

TRANSCRIPT_READ = "openclaw.agents.sessions.transcript.read"
LIST_LIMIT = 500  # sessions per gateway in one refresh (newest activity first)
COUNTS_PER_PASS = 25  # message counts asked of one gateway in one refresh (the changed sessions first)
HISTORY_LIMIT = 1000  # the runtime's own ceiling for one chat.history page
ARGUMENTS_CHARS = 240  # a tool call's arguments, on one line, in a transcript
TEXT_CHARS = 20_000  # one message's text


def _moment(value: Any) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class GatewaySessionRow(BaseModel):
    """The part of one ``sessions.list`` row OCC indexes (the runtime's row has many more fields)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    key: str
    channel: str | None = None
    displayName: str | None = None
    label: str | None = None
    derivedTitle: str | None = None
    origin: dict[str, Any] | None = None
    updatedAt: float | None = None
    lastActivityAt: float | None = None
    lastInteractionAt: float | None = None
    inputTokens: Any = None
    outputTokens: Any = None
    totalTokens: Any = None
    messageCount: Any = None

    def fields(self, refreshed_at: datetime) -> dict[str, Any]:
        origin = self.origin or {}
        person = origin.get("label") or origin.get("from") or ""
        moments = [m for m in (_moment(self.lastActivityAt), _moment(self.lastInteractionAt), _moment(self.updatedAt))
                   if m is not None]
        return {
            "title": (self.label or self.displayName or self.derivedTitle or "")[:200],
            "channel": (self.channel or origin.get("provider") or "")[:64],
            "person": str(person)[:200],
            "message_count": _count(self.messageCount),
            "input_tokens": _count(self.inputTokens), "output_tokens": _count(self.outputTokens),
            "total_tokens": _count(self.totalTokens),
            "last_activity_at": max(moments) if moments else refreshed_at,
            "refreshed_at": refreshed_at,
        }


def _listed(agent: Agent, known: dict[str, tuple[datetime, int | None]]
            ) -> tuple[list[GatewaySessionRow], bool, dict[str, int]]:
    """The gateway's sessions, whether that is all of them, and the message counts of those
    that changed since the index last saw them (``chat.history``'s ``totalMessages`` of a
    one-message page: its text is dropped here, never kept), at most ``COUNTS_PER_PASS`` and
    only while the refresh's own bound lasts."""
    bound = float(settings.OCC_GATEWAY_RPC_TIMEOUT_SECONDS)
    deadline = time.monotonic() + bound
    payload = gateway_call(agent, scopes=[READ], method="sessions.list",
                           params={"limit": LIST_LIMIT, "sortBy": "activity", "includeGlobal": True})
    raw = payload.get("sessions") if isinstance(payload, dict) else None
    rows: list[GatewaySessionRow] = []
    for item in raw if isinstance(raw, list) else []:
        try:
            row = GatewaySessionRow.model_validate(item)
        except ValidationError:
            continue
        if row.key and len(row.key) <= 512:
            rows.append(row)
    counts: dict[str, int] = {}
    for row in rows:
        seen = known.get(row.key)
        if _count(row.messageCount) is not None or len(counts) >= COUNTS_PER_PASS or (
                seen is not None and seen[1] is not None and seen[0] >= row.fields(seen[0])["last_activity_at"]):
            continue
        left = deadline - time.monotonic()
        if left <= 0.2:
            break
        try:
            page = gateway_call(agent, scopes=[READ], method="chat.history",
                                params={"sessionKey": row.key, "limit": 1, "maxChars": 1}, timeout=min(left, bound))
        except GatewayUnavailable:  # the list stands; the counts wait for the next refresh
            break
        total = _count(page.get("totalMessages")) if isinstance(page, dict) else None
        if total is not None:
            counts[row.key] = total
    return rows, len(rows) < LIST_LIMIT, counts


def agent_sessions_refresh(*, agent_id: str) -> int | None:
    """Refresh one Agent's index from its gateway: the sessions it lists now, and those it no
    longer lists removed (when the list was whole). None when the Agent is gone, does not run,
    or its gateway did not answer in its bound (the index keeps what it had). Harmless twice."""
    agent = Agent.objects.filter(id=agent_id).first()
    if agent is None or not runs(agent):
        return None
    known = {key: (moment, count) for key, moment, count in
             AgentSession.objects.filter(agent=agent).values_list("key", "last_activity_at", "message_count")}
    try:
        rows, whole, counts = _listed(agent, known)
    except (GatewayNotRunning, NotImplementedYet):
        return None
    except GatewayUnavailable as exc:  # unreachable, slow, refused: the next pass tries again
        logger.info("session index: the gateway of %s did not answer (%s)", agent.id, exc.rpc_code)
        return None
    except Exception:  # the driver or the SecretDriver: this Agent waits for the next pass
        logger.warning("session index: the gateway of %s could not be asked", agent.id, exc_info=True)
        return None
    now = timezone.now()
    with transaction.atomic():
        if not Agent.objects.filter(id=agent.id).exists():
            return None
        for row in rows:
            fields = row.fields(now)
            if fields["message_count"] is None:
                fields["message_count"] = counts.get(row.key, known.get(row.key, (now, None))[1])
            AgentSession.objects.update_or_create(agent=agent, key=row.key,
                                                  defaults={"namespace_id": agent.namespace_id, **fields})
        if whole:
            AgentSession.objects.filter(agent=agent).exclude(key__in=[row.key for row in rows]).delete()
    return len(rows)


# --- transcripts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # one line, redacted, cut to ARGUMENTS_CHARS


@dataclass(frozen=True)
class TranscriptEntry:
    role: str  # user, assistant, tool (a tool's result), system
    text: str
    at: datetime | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_name: str = ""  # a tool result's tool
    is_error: bool = False

    def matches(self, query: str) -> bool:
        needle = query.casefold()
        return needle in self.text.casefold() or any(
            needle in call.name.casefold() or needle in call.arguments.casefold() for call in self.tool_calls)


@dataclass(frozen=True)
class Transcript:
    session: AgentSession
    entries: list[TranscriptEntry] = field(default_factory=list)
    more: bool = False  # the gateway holds older messages than these

    def searched(self, query: str) -> list[TranscriptEntry]:
        return [entry for entry in self.entries if entry.matches(query)] if query else self.entries


def _one_line(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                                                           default=str)
    return " ".join(text.split())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _entry(message: Any, redactor: Redactor) -> TranscriptEntry | None:
    if not isinstance(message, dict):
        return None
    role = str(message.get("role") or "")
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if isinstance(
        content, str) else []
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind in ("toolCall", "tool_use", "toolUse"):
            arguments = block.get("arguments", block.get("input", {}))
            calls.append(ToolCall(name=_cut(str(block.get("name") or "tool"), 120),
                                  arguments=_cut(redactor.redact_text(_one_line(arguments)), ARGUMENTS_CHARS)))
    text = redactor.redact_text("\n\n".join(texts))
    tool = role in ("toolResult", "tool")
    if tool:
        text = _cut(" ".join(text.split()), ARGUMENTS_CHARS)
    return TranscriptEntry(role="tool" if tool else role or "system", text=_cut(text, TEXT_CHARS),
                           at=_moment(message.get("timestamp")), tool_calls=tuple(calls),
                           tool_name=str(message.get("toolName") or "") if tool else "",
                           is_error=message.get("isError") is True)


def agent_transcript_read(*, actor: Actor, namespace_id: str, agent_id: str, session_id: str,
                          purpose: str = "view") -> Transcript:
    """The session's transcript as the gateway holds it now: authorized (``read_conversations``),
    audited as an access (committed first), then read and redacted."""
    session = session_get(actor=actor, namespace_id=namespace_id, agent_id=agent_id, session_id=session_id)
    agent = session.agent
    if not runs(agent):  # nothing to read: refused before anything is recorded
        raise GatewayNotRunning()
    with transaction.atomic():
        audit_record(actor=actor, kind=AuditKind.ACCESS, action=TRANSCRIPT_READ, namespace_id=agent.namespace_id,
                     resource_kind=Kind.AGENT, resource_id=agent.id,
                     details={"sessionId": session.id, "sessionKey": session.key, "purpose": purpose})
    payload = gateway_call(agent, scopes=[READ], method="chat.history",
                           params={"sessionKey": session.key, "limit": HISTORY_LIMIT})
    messages = payload.get("messages") if isinstance(payload, dict) else None

    def shaped(redactor: Redactor, _missing: frozenset[str]) -> list[TranscriptEntry]:
        entries = (_entry(message, redactor) for message in (messages if isinstance(messages, list) else []))
        return [entry for entry in entries if entry is not None]

    entries = with_redactor(delivered_secrets(agent), shaped)
    return Transcript(session=session, entries=entries,
                      more=bool(isinstance(payload, dict) and payload.get("hasMore") is True))


def transcript_markdown(transcript: Transcript) -> str:
    """The transcript as a Markdown document (the export)."""
    session = transcript.session
    lines = [f"# {session.title or session.key}", "",
             f"- Agent: {session.agent.name} ({session.agent_id})", f"- Session: `{session.key}`",
             f"- Channel: {session.channel or 'unknown'}", *([f"- With: {session.person}"] if session.person else []),
             f"- Last activity: {session.last_activity_at.isoformat()}", ""]
    for entry in transcript.entries:
        when = f" · {entry.at.isoformat()}" if entry.at else ""
        heading = f"tool result: {entry.tool_name}" if entry.role == "tool" else entry.role
        lines += [f"## {heading}{when}", ""]
        if entry.text:
            lines += [entry.text, ""]
        lines += [f"- tool call `{call.name}` {call.arguments}" for call in entry.tool_calls]
        if entry.tool_calls:
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
