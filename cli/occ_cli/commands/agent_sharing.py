"""``occ agents shares|share|unshare``: Share this Agent (the Agent page's Sharing tab): who has
access and why, share with a person or service principal at a level, revoke a direct share.
Registered on ``occ agents`` (its own module: agents.py holds the lifecycle)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from occ_cli import output
from occ_cli.client import CliError, Exit, OccClient
from occ_cli.commands.agents import AgentArgument, app
from occ_cli.common import JsonOption, NamespaceOption, agent_of, every_page, json_wanted, namespace_of, settings

# The binding id is in --json (unshare takes the subject): two ids would not fit 80 columns.
SHARE_COLUMNS = [("SUBJECT", "subjectId"), ("NAME", "subjectName"), ("KIND", "subjectKind"), ("LEVEL", "level"),
                 ("SOURCE", "source")]
LEVELS = ("chat", "deploy", "administer")


def _subject_of(client: OccClient, shares: str, wanted: str) -> dict[str, Any]:
    """A person or service principal the Agent can be shared with, by id or name (the Share
    form's choices)."""
    subjects = every_page(client, f"{shares}/subjects", "subjects")
    found = [s for s in subjects if wanted == s["id"]] or [s for s in subjects if wanted == s["name"]]
    if not found:
        raise CliError(f"Nobody the Agent can be shared with has the id or name {wanted!r}.", Exit.NOT_FOUND,
                       code="NOT_FOUND")
    if len(found) > 1:
        raise CliError(f"Several people or service principals are named {wanted!r}; use the id.", Exit.USAGE,
                       code="AMBIGUOUS_NAME")
    return found[0]


def _shares_path(agent: str, namespace: str) -> tuple[OccClient, str]:
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    return client, f"/namespaces/{namespace_id}/agents/{agent_of(client, namespace_id, agent)['id']}/shares"


@app.command("shares")
def agents_shares(agent: AgentArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Who has access to the Agent and why: direct shares (revocable with `occ agents unshare`),
    Roles on its Namespace, Installation Roles."""
    client, shares = _shares_path(agent, namespace)
    data = every_page(client, shares, "shares")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(SHARE_COLUMNS, data)


@app.command("share")
def agents_share(
    agent: AgentArgument, subject: Annotated[str, typer.Argument(help="A person or service principal: id or name.")],
    namespace: NamespaceOption,
    level: Annotated[str, typer.Option(help="chat (see it, talk to it), deploy (also change, deploy, stop, start "
                                       "it, read its logs) or administer (also delete and share it).")] = "chat",
    as_json: JsonOption = False,
) -> None:
    """Share the Agent with a person or service principal at a level (a direct share at another
    level is replaced)."""
    if level not in LEVELS:
        raise typer.BadParameter("chat, deploy or administer", param_hint="--level")
    client, shares = _shares_path(agent, namespace)
    data = client.post(shares, {"subjectId": _subject_of(client, shares, subject)["id"], "level": level})
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(SHARE_COLUMNS, [data])


@app.command("unshare")
def agents_unshare(
    agent: AgentArgument,
    subject: Annotated[str, typer.Argument(help="Whom to stop sharing with (id or name), or a share's binding id.")],
    namespace: NamespaceOption, as_json: JsonOption = False,
) -> None:
    """Revoke a direct share (access through a Namespace or Installation Role stays)."""
    client, shares = _shares_path(agent, namespace)
    direct = [e for e in every_page(client, shares, "shares") if e["source"] == "direct"]
    found = ([e for e in direct if subject == e["bindingId"]] or [e for e in direct if subject == e["subjectId"]]
             or [e for e in direct if subject == e["subjectName"]])
    if not found:
        raise CliError(f"The Agent is not shared directly with {subject!r}.", Exit.NOT_FOUND, code="NOT_FOUND")
    if len(found) > 1:
        raise CliError(f"Several direct shares match {subject!r}; use the binding id.", Exit.USAGE,
                       code="AMBIGUOUS_NAME")
    client.delete(f"{shares}/{found[0]['bindingId']}")
    data = {**found[0], "status": "revoked"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"{found[0]['subjectName']} ({found[0]['subjectId']}): share revoked")
