"""``occ revisions``: an Agent's revisions, what one changed from the one before, and a
redeploy of an earlier one (a rollback, deployed and awaited like ``occ agents deploy``)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from occ_cli import output
from occ_cli.commands.agents import AgentArgument, await_deployment
from occ_cli.common import (
    DEPLOY_TIMEOUT_SECONDS,
    JsonOption,
    NamespaceOption,
    WaitOption,
    agent_of,
    every_page,
    json_wanted,
    namespace_of,
    settings,
)

app = typer.Typer(no_args_is_help=True, help="List an Agent's revisions, diff one, redeploy one.")

# The Configuration by name (its id is in --json): two ids would not fit 80 columns unbroken.
REVISION_COLUMNS = [("#", "revision"), ("ID", "id"), ("CONFIGURATION", "configurationName"),
                    ("GEN", "configurationGeneration"), ("CREATED", "createdAt")]
RevisionArgument = Annotated[str, typer.Argument(help="The revision: its id (rev_…) or number.")]


def _ids(namespace: str, agent: str) -> tuple[Any, str, str]:
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    return client, namespace_id, agent_of(client, namespace_id, agent)["id"]


def _revision_id(client: Any, base: str, wanted: str) -> str:
    if not wanted.isdigit():
        return wanted
    for revision in every_page(client, f"{base}/revisions", "revisions"):
        if revision["revision"] == int(wanted):
            return str(revision["id"])
    raise typer.BadParameter(f"the Agent has no revision #{wanted}", param_hint="REVISION")


@app.command("list")
def revisions_list(agent: AgentArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """The Agent's revisions, newest first."""
    client, namespace_id, agent_id = _ids(namespace, agent)
    data = every_page(client, f"/namespaces/{namespace_id}/agents/{agent_id}/revisions", "revisions")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(REVISION_COLUMNS, data)


@app.command("diff")
def revisions_diff(agent: AgentArgument, revision: RevisionArgument, namespace: NamespaceOption,
                   as_json: JsonOption = False) -> None:
    """What the revision deploys differently from the one before it, by JSON pointer."""
    client, namespace_id, agent_id = _ids(namespace, agent)
    base = f"/namespaces/{namespace_id}/agents/{agent_id}"
    data = client.get(f"{base}/revisions/{_revision_id(client, base, revision)}/diff")
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"revision #{data['revision']} against #{data['previousRevision'] or '-'}")
    for change in data["changes"]:
        sign = {"added": "+", "removed": "-", "changed": "~"}[change["op"]]
        before = f" {json.dumps(change.get('before'), ensure_ascii=False)} ->" if change["op"] == "changed" else ""
        after = "" if change["op"] == "removed" else f" {json.dumps(change.get('after'), ensure_ascii=False)}"
        output.stdout.print(f"{sign} {change['path']}:{before}{after}", highlight=False,
                            markup=False)


@app.command("redeploy")
def revisions_redeploy(
    agent: AgentArgument, revision: RevisionArgument, namespace: NamespaceOption, wait: WaitOption = True,
    wait_timeout: Annotated[float, typer.Option(help="Seconds to wait for the new revision to be active.")] =
        DEPLOY_TIMEOUT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """Deploy an earlier revision's snapshot again as the Agent's next revision (a rollback)."""
    client, namespace_id, agent_id = _ids(namespace, agent)
    base = f"/namespaces/{namespace_id}/agents/{agent_id}"
    source = _revision_id(client, base, revision)
    admitted = client.post(f"{base}/revisions/{source}/redeploy")
    output.note(f"revision {admitted['id']} (#{admitted['revision']}) admitted from {source}")
    result: dict[str, Any] = {"revision": admitted}
    if wait:
        result["deployment"] = await_deployment(client, namespace_id, agent_id, admitted["id"], wait_timeout)
    if json_wanted(as_json):
        return output.print_json(result)
    output.print_fields([("revision", admitted["id"]), ("number", admitted["revision"]), ("from", source),
                         ("deployment", output.lookup(result, "deployment.status") or "queued (not awaited)")])
