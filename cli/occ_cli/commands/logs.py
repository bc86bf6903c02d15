"""``occ logs``: an Agent's gateway log lines (the console's Logs tab), redacted by OCC; with
``--follow``, the lines written since, every few seconds, until interrupted (one audited view)."""

from __future__ import annotations

import time
from typing import Annotated, Any
from urllib.parse import quote

import typer

from occ_cli import output
from occ_cli.commands.agents import AgentArgument
from occ_cli.common import JsonOption, NamespaceOption, agent_of, json_wanted, namespace_of, settings


def logs(
    agent: AgentArgument, namespace: NamespaceOption,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines (Ctrl-C stops).")] = False,
    interval: Annotated[float, typer.Option(min=1.0, help="Seconds between follow reads.")] = 2.0,
    as_json: JsonOption = False,
) -> None:
    """Print the Agent's recent log lines (reading them is audited)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    path = f"/namespaces/{namespace_id}/agents/{agent_of(client, namespace_id, agent)['id']}/logs"
    view: dict[str, Any] = client.get(path)
    if json_wanted(as_json) and not follow:
        return output.print_json(view)
    try:
        while True:
            if view["reset"] or view["skipped"]:
                output.note("(some lines were skipped)")
            if view["withheld"]:
                output.note(f"({view['withheld']} lines withheld: a Secret they may hold is gone)")
            for line in view["lines"]:
                output.stdout.out(line, highlight=False)
            if not follow:
                return None
            time.sleep(interval)
            view = client.get(f"{path}?follow={quote(view['follow'])}")
    except KeyboardInterrupt:
        return None
