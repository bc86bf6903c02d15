"""``occ configurations``: create (from a JSON file), show and delete Configurations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from occ_cli import output
from occ_cli.common import JsonOption, NamespaceOption, json_wanted, namespace_of, read_document, settings

app = typer.Typer(no_args_is_help=True, help="Create, show and delete Configurations.")

CONFIGURATION_COLUMNS = [("ID", "id"), ("KIND", "kind"), ("GENERATION", "generation"), ("NAMESPACE", "namespaceId"),
                         ("UPDATED", "updatedAt")]


@app.command("create")
def configurations_create(
    namespace: NamespaceOption,
    file: Annotated[Path, typer.Option("--file", "-f", help="The request body as JSON ({kind, values, "
                                       "secretBindings?}); - reads stdin.")],
    as_json: JsonOption = False,
) -> None:
    """Create a Configuration from a JSON file."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    data = client.post(f"/namespaces/{namespace_id}/configurations", read_document(file))
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(CONFIGURATION_COLUMNS, [data])


@app.command("show")
def configurations_show(configuration: Annotated[str, typer.Argument(help="Its id (cfg_…).")],
                        namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Show one Configuration, its values included."""
    client = settings.client()
    data = client.get(f"/namespaces/{namespace_of(client, namespace)['id']}/configurations/{configuration}")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(CONFIGURATION_COLUMNS, [data])
    output.stdout.print_json(json.dumps(data.get("values", {})))


@app.command("delete")
def configurations_delete(configuration: Annotated[str, typer.Argument(help="Its id (cfg_…).")],
                          namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Delete a Configuration no Agent uses."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    client.delete(f"/namespaces/{namespace_id}/configurations/{configuration}")
    data = {"id": configuration, "namespaceId": namespace_id, "status": "deleted"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"Configuration {configuration}: deleted")
