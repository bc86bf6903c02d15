"""``occ agents repositories``: the GitHub repositories an Agent may bind and the profiles each
allows (the Create Agent form's Repository access choices). Registered on ``occ agents``."""

from __future__ import annotations

from typing import Annotated

import typer

from occ_cli import output
from occ_cli.commands.agents import app
from occ_cli.common import JsonOption, NamespaceOption, agent_of, every_page, json_wanted, namespace_of, settings

OPTION_COLUMNS = [("REPOSITORY", "repositoryRef"), ("PROFILES", "profiles"), ("DESCRIPTION", "description")]


@app.command("repositories")
def agents_repositories(
    namespace: NamespaceOption,
    agent: Annotated[str | None, typer.Option(help="For editing this Agent (its id or name).")] = None,
    as_json: JsonOption = False,
) -> None:
    """List the repositories `--repo` can name on `occ agents create|update`."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    base = f"/namespaces/{namespace_id}/agents"
    path = f"{base}/{agent_of(client, namespace_id, agent)['id']}" if agent else base
    data = every_page(client, f"{path}/repository-options", "repositories")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(OPTION_COLUMNS, [{**r, "profiles": " ".join(r["allowedProfiles"])} for r in data])
