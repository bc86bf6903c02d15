"""``occ audit``: the audit log the caller may read (the console's Audit log page), filtered,
one page as a table or JSON, or every matching event as NDJSON or CSV on stdout."""

from __future__ import annotations

import sys
from typing import Annotated, Any
from urllib.parse import urlencode

import typer

from occ_cli import output
from occ_cli.common import JsonOption, json_wanted, settings

AUDIT_COLUMNS = [("WHEN", "occurredAt"), ("ACTION", "action"), ("OUTCOME", "outcome"), ("ACTOR", "actorName"),
                 ("RESOURCE", "resourceName"), ("RESOURCE ID", "resourceId")]


def audit(
    actor: Annotated[str, typer.Option(help="A principal's id, or part of a name or username.")] = "",
    resource: Annotated[str, typer.Option(help="A resource or Namespace id, or a kind (agent, secret, ...).")] = "",
    action: Annotated[str, typer.Option(help="Part of an action, e.g. agents.deploy.")] = "",
    since: Annotated[str, typer.Option(help="From this moment (RFC 3339, e.g. 2026-12-01T00:00:00Z).")] = "",
    until: Annotated[str, typer.Option(help="Until this moment (RFC 3339).")] = "",
    older: Annotated[str, typer.Option(help="The olderCursor of the page before (--json shows it).")] = "",
    limit: Annotated[int, typer.Option(min=1, max=200, help="Events on the page.")] = 50,
    export: Annotated[str, typer.Option("--export", help="ndjson or csv: every matching event to stdout.")] = "",
    as_json: JsonOption = False,
) -> None:
    """Read the audit log: newest first, one page (or --export every matching event)."""
    filters = {key: value for key, value in (("actor", actor), ("resource", resource), ("action", action),
                                             ("since", since), ("until", until)) if value}
    client = settings.client()
    if export:
        if export not in ("ndjson", "csv"):
            raise typer.BadParameter("ndjson or csv", param_hint="--export")
        for chunk in client.stream(f"/audit?{urlencode({**filters, 'format': export})}"):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        return
    query: dict[str, Any] = {**filters, "limit": limit}
    if older:
        query["older"] = older
    page = client.get(f"/audit?{urlencode(query)}")
    if json_wanted(as_json):
        return output.print_json(page)
    output.print_table(AUDIT_COLUMNS, page["events"])
    if page["olderCursor"]:
        output.note(f"More: occ audit --older {page['olderCursor']}")
