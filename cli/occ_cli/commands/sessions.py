"""``occ sessions``: the sessions of the Agents whose conversations you may read (the console's
Sessions page), one transcript (read from the Agent's gateway now; each read is audited), and a
transcript exported as JSON or Markdown. ``occ approvals``: the approvals the Agents you may
answer for wait on, and approving or denying one (once)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlencode

import typer

from occ_cli import output
from occ_cli.common import JsonOption, NamespaceOption, agent_of, json_wanted, namespace_of, settings

app = typer.Typer(no_args_is_help=True, help="List the fleet's sessions, read or export a transcript.")
approvals_app = typer.Typer(no_args_is_help=True, help="List pending approvals, approve or deny one.")

SESSION_COLUMNS = [("ID", "id"), ("AGENT", "agentName"), ("CHANNEL", "channel"), ("WITH", "person"),
                   ("TOKENS", "totalTokens"), ("LAST ACTIVE", "lastActivityAt"), ("TITLE", "title")]
APPROVAL_COLUMNS = [("KIND", "kind"), ("ID", "id"), ("AGENT", "agentName"), ("SESSION", "sessionKey"),
                    ("COMMAND", "command"), ("EXPIRES", "expiresAt")]
AgentOption = Annotated[str, typer.Option("--agent", "-a", help="The Agent: its id (agt_…) or name.")]
SessionArgument = Annotated[str, typer.Argument(help="The session's id (ses_…, from occ sessions list).")]


def _agent_path(namespace: str, agent: str) -> tuple[Any, str]:
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    return client, f"/namespaces/{namespace_id}/agents/{agent_of(client, namespace_id, agent)['id']}"


@app.command("list")
def sessions_list(
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="With --agent: the Agent's Namespace.")] = "",
    agent: Annotated[str, typer.Option("--agent", "-a", help="Only this Agent's sessions (needs -n).")] = "",
    channel: Annotated[str, typer.Option(help="Only this channel (webchat, slack, ...).")] = "",
    person: Annotated[str, typer.Option(help="Only sessions with someone whose name holds this.")] = "",
    since: Annotated[str, typer.Option(help="Last active from this moment (RFC 3339).")] = "",
    until: Annotated[str, typer.Option(help="Last active before this moment (RFC 3339).")] = "",
    cursor: Annotated[str, typer.Option(help="The nextCursor of the page before (--json shows it).")] = "",
    limit: Annotated[int, typer.Option(min=1, max=100, help="Sessions on the page.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """Sessions, newest activity first: the fleet's, or one Agent's."""
    query = {key: value for key, value in (("channel", channel), ("person", person), ("since", since),
                                           ("until", until), ("cursor", cursor)) if value}
    query["limit"] = str(limit)
    if agent:
        if not namespace:
            raise typer.BadParameter("--agent needs --namespace", param_hint="--agent")
        client, base = _agent_path(namespace, agent)
        page = client.get(f"{base}/sessions?{urlencode(query)}")
    else:
        page = settings.client().get(f"/sessions?{urlencode(query)}")
    if json_wanted(as_json):
        return output.print_json(page)
    output.print_table(SESSION_COLUMNS, page["sessions"])
    if page["nextCursor"]:
        output.note(f"More: occ sessions list --cursor {page['nextCursor']}")


@app.command("show")
def sessions_show(
    session: SessionArgument, agent: AgentOption, namespace: NamespaceOption,
    search: Annotated[str, typer.Option("--search", "-s", help="Only the messages holding this text.")] = "",
    as_json: JsonOption = False,
) -> None:
    """Print a session's transcript (tool calls on one line; reading it is audited)."""
    client, base = _agent_path(namespace, agent)
    query = f"?{urlencode({'q': search})}" if search else ""
    transcript = client.get(f"{base}/sessions/{quote(session, safe='')}{query}")
    if json_wanted(as_json):
        return output.print_json(transcript)
    for entry in transcript["entries"]:
        who = f"tool result ({entry['toolName']})" if entry["role"] == "tool" else entry["role"]
        output.stdout.print(f"[{who}] {entry['at'] or ''}".rstrip(), highlight=False, markup=False)
        if entry["text"]:
            output.stdout.print(entry["text"], highlight=False, markup=False)
        for call in entry["toolCalls"]:
            output.stdout.print(f"  → {call['name']} {call['arguments']}", highlight=False, markup=False)
    if transcript["more"]:
        output.note("(the gateway holds older messages than these)")


@app.command("export")
def sessions_export(
    session: SessionArgument, agent: AgentOption, namespace: NamespaceOption,
    format: Annotated[str, typer.Option("--format", help="json or markdown.")] = "markdown",
    out: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
) -> None:
    """Export a session's transcript as Markdown or JSON (reading it is audited)."""
    if format not in ("json", "markdown"):
        raise typer.BadParameter("json or markdown", param_hint="--format")
    client, base = _agent_path(namespace, agent)
    path = f"{base}/sessions/{quote(session, safe='')}"
    if format == "json":
        text = json.dumps(client.get(path), ensure_ascii=False, indent=2) + "\n"
    else:
        text = "".join(client.stream(f"{path}?format=markdown"))
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        out.write_text(text)
        output.note(f"Wrote {out}")


@approvals_app.command("list")
def approvals_list(as_json: JsonOption = False) -> None:
    """The approvals every running Agent you may answer for waits on, soonest expiry first."""
    inbox = settings.client().get("/approvals")
    if json_wanted(as_json):
        return output.print_json(inbox)
    output.print_table(APPROVAL_COLUMNS, inbox["approvals"])
    for agent in inbox["unreachable"]:
        output.note(f"(the gateway of {agent['agentName']} did not answer)")


def _decide(decision: str, approval: str, agent: str, namespace: str, kind: str, as_json: bool) -> None:
    if kind not in ("exec", "plugin"):
        raise typer.BadParameter("exec or plugin", param_hint="--kind")
    client, base = _agent_path(namespace, agent)
    decided = client.post(f"{base}/approvals/{kind}/{quote(approval, safe='')}", {"decision": decision})
    if json_wanted(as_json):
        return output.print_json(decided)
    output.note(f"{decision}d {kind} approval {decided['approvalId']}")


ApprovalArgument = Annotated[str, typer.Argument(help="The approval's id (from occ approvals list).")]
KindOption = Annotated[str, typer.Option("--kind", help="exec or plugin (plugin ids start with plugin:).")]


@approvals_app.command("approve")
def approvals_approve(approval: ApprovalArgument, agent: AgentOption, namespace: NamespaceOption,
                      kind: KindOption = "", as_json: JsonOption = False) -> None:
    """Approve once (a second decision is refused)."""
    _decide("approve", approval, agent, namespace, kind or _kind_of(approval), as_json)


@approvals_app.command("deny")
def approvals_deny(approval: ApprovalArgument, agent: AgentOption, namespace: NamespaceOption,
                   kind: KindOption = "", as_json: JsonOption = False) -> None:
    """Deny it (a second decision is refused)."""
    _decide("deny", approval, agent, namespace, kind or _kind_of(approval), as_json)


def _kind_of(approval: str) -> str:
    return "plugin" if approval.startswith("plugin:") else "exec"
