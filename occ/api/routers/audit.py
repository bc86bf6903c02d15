"""The audit log (the console's Audit log page): the events the caller may read, with the
page's filters, in keyset pages newest first; or every matching event as NDJSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from django.http import HttpResponse, StreamingHttpResponse
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.errors import InvalidRequest
from occ.selectors.audit import PAGE_SIZE, AuditQuery, AuditRow, audit_event_export, audit_event_page
from occ.timestamps import rfc3339

router = Router(tags=["audit"])

CSV_COLUMNS = ("id", "occurredAt", "kind", "outcome", "action", "actorId", "actorName", "namespaceId",
               "resourceKind", "resourceId", "resourceName", "agentId", "resourceDeleted", "details")
NDJSON = "application/x-ndjson"
CSV = "text/csv; charset=utf-8"


class AuditEventOut(ResponseSchema):
    id: str
    occurredAt: str
    kind: str
    outcome: str
    action: str
    actorId: str | None
    actorName: str | None = Field(description="The principal's name, while it exists.")
    namespaceId: str | None
    resourceKind: str | None
    resourceId: str | None
    resourceName: str | None = Field(description="What people call the resource: its name now (a revision: "
                                     "\"<agent> v<n>\"), else the name its event recorded.")
    agentId: str | None = Field(description="The Agent a revision event belongs to.")
    resourceDeleted: bool = Field(description="The resource (or its Namespace) no longer exists.")
    details: dict[str, Any]


class AuditPageOut(ResponseSchema):
    events: list[AuditEventOut]
    olderCursor: str | None = Field(description="Pass as older for the page back in time; null on the oldest.")
    newerCursor: str | None = Field(description="Pass as newer for the page before; null on the newest.")


def audit_event_wire(row: AuditRow) -> dict[str, Any]:
    event = row.event
    return {
        "id": event.id, "occurredAt": rfc3339(event.occurred_at), "kind": event.kind, "outcome": event.outcome,
        "action": event.action, "actorId": event.actor_id, "actorName": row.actor_name,
        "namespaceId": event.namespace_id, "resourceKind": event.resource_kind, "resourceId": event.resource_id,
        "resourceName": row.resource_name, "agentId": row.agent_id, "resourceDeleted": row.resource_deleted,
        "details": event.details if isinstance(event.details, dict) else {},
    }


def _ndjson(rows: Iterator[AuditRow]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(audit_event_wire(row), ensure_ascii=False, separators=(",", ":")) + "\n"


def _csv(rows: Iterator[AuditRow]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(CSV_COLUMNS)
    yield flush()
    for row in rows:
        wire = audit_event_wire(row)
        wire["details"] = json.dumps(wire["details"], ensure_ascii=False, separators=(",", ":"))
        # A cell a spreadsheet would run as a formula is quoted with a leading apostrophe (OWASP CSV injection).
        writer.writerow(["'" + cell if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@", "\t", "\r")
                         else cell for cell in (wire[column] for column in CSV_COLUMNS)])
        yield flush()


# No control characters: PostgreSQL refuses NUL in a text comparison, and no name or id holds one.
_TEXT = {"max_length": 200, "pattern": r"^[^\x00-\x1f\x7f]*$"}
QUERY_NAMES = frozenset({"actor", "resource", "action", "since", "until", "older", "newer", "limit", "format"})
_SINCE = Query(None, description="From this moment (inclusive), RFC 3339.")
_UNTIL = Query(None, description="Until this moment (exclusive), RFC 3339.")
_EXPORTS = {
    "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/AuditPageEnvelope"}},
        NDJSON: {"schema": {"type": "string"}},
        "text/csv": {"schema": {"type": "string"}},
    },
}


@router.get("/audit", response={200: envelope_of(AuditPageOut, "AuditPageEnvelope")},
            openapi_extra={"responses": {200: {"description": "A page, or the export", **_EXPORTS}}})
def list_audit_events(
    request: ApiRequest,
    actor: str = Query("", description="A principal id, or part of a name or username.", **_TEXT),
    resource: str = Query("", description="A resource or Namespace id, or a kind (agent, secret, ...).", **_TEXT),
    action: str = Query("", description="Part of an action, e.g. agents.deploy.", **_TEXT),
    since: datetime | None = _SINCE,
    until: datetime | None = _UNTIL,
    older: str = Query("", description="An olderCursor: the page back in time.", **_TEXT),
    newer: str = Query("", description="A newerCursor: the page before.", **_TEXT),
    limit: int = Query(PAGE_SIZE, ge=1, le=200),
    format: Literal["json", "ndjson", "csv"] = Query("json", description="ndjson or csv: every matching "
                                                     "event, newest first, streamed (cursors and limit are not used)."),
) -> HttpResponse | StreamingHttpResponse:
    """The events the caller may read (an administrator holding ``installation:read``: all;
    anyone else: those of the live Namespaces they may read, and no Installation-level event),
    as the console's Audit log page shows them."""
    require_known_query(request, QUERY_NAMES)
    if since and until and until <= since:
        raise InvalidRequest("until must be later than since.")
    query = AuditQuery(actor=actor.strip(), resource=resource.strip(), action=action.strip(), since=since,
                       until=until)
    if format != "json":
        rows = audit_event_export(actor=request.auth, query=query)
        stream = _ndjson(rows) if format == "ndjson" else _csv(rows)
        response = StreamingHttpResponse(stream, content_type=NDJSON if format == "ndjson" else CSV)
        response["Content-Disposition"] = f'attachment; filename="occ-audit.{format}"'
        return response
    page = audit_event_page(actor=request.auth, query=query, older_than=older, newer_than=newer, page_size=limit)
    return respond({"events": [audit_event_wire(row) for row in page.rows],
                    "olderCursor": page.older, "newerCursor": page.newer})
