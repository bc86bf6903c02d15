"""``occ configurations``: list, create (from a JSON file), show, update, edit (in $EDITOR) and
delete Configurations. An update sends the generation it read as If-Match, so an edit made
meanwhile by someone else is a 409, never overwritten; the server checks the document with the
runtime's schema (the console's check) and its refusal names each place."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from occ_cli import output
from occ_cli.client import CliError, Exit, OccClient
from occ_cli.common import JsonOption, NamespaceOption, every_page, json_wanted, namespace_of, read_document, settings

app = typer.Typer(no_args_is_help=True, help="List, create, show, update, edit and delete Configurations.")

CONFIGURATION_COLUMNS = [("ID", "id"), ("NAME", "name"), ("KIND", "kind"), ("GENERATION", "generation"),
                         ("NAMESPACE", "namespaceId"), ("UPDATED", "updatedAt")]


LIST_COLUMNS = [("ID", "id"), ("NAME", "name"), ("GEN", "generation"), ("MODEL", "model"), ("AGENTS", "agentNames"),
                ("UPDATED", "updatedAt")]


def configuration_rows(client: OccClient, namespace_id: str) -> list[dict[str, Any]]:
    """Every Configuration the caller may read, following the API's keyset pages."""
    return every_page(client, f"/namespaces/{namespace_id}/configurations", "configurations")


ConfigurationArgument = Annotated[str, typer.Argument(help="The Configuration: its id (cfg_…) or name.")]
NameOption = Annotated[str | None, typer.Option("--name", help="Its name (unique in the Namespace).")]


def configuration_id_of(client: OccClient, namespace_id: str, wanted: str) -> str:
    """``wanted`` when it is an id, else the id of the Configuration of that name."""
    if wanted.startswith("cfg_"):
        return wanted
    found = [row["id"] for row in configuration_rows(client, namespace_id) if row["name"] == wanted]
    if not found:
        raise CliError(f"No Configuration has the id or name {wanted!r}.", Exit.NOT_FOUND, code="NOT_FOUND")
    return found[0]


def _path(client: OccClient, namespace: str, configuration: str) -> str:
    namespace_id = namespace_of(client, namespace)["id"]
    return f"/namespaces/{namespace_id}/configurations/{configuration_id_of(client, namespace_id, configuration)}"


@app.command("list")
def configurations_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """List a Namespace's Configurations (most recently changed first) and the Agents using each."""
    client = settings.client()
    rows = configuration_rows(client, namespace_of(client, namespace)["id"])
    if json_wanted(as_json):
        return output.print_json(rows)
    for row in rows:
        names = [agent["name"] for agent in row["agents"]]
        if row["hiddenAgents"]:
            names.append(f"+{row['hiddenAgents']} hidden")
        row["agentNames"] = ", ".join(names)
    output.print_table(LIST_COLUMNS, rows)


@app.command("create")
def configurations_create(
    namespace: NamespaceOption,
    file: Annotated[Path, typer.Option("--file", "-f", help="The request body as JSON ({kind, values, "
                                       "name?, secretBindings?}); - reads stdin.")],
    name: NameOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a Configuration from a JSON file (named --name, else the file's name, else by OCC)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    body = read_document(file)
    if name is not None and isinstance(body, dict):
        body["name"] = name
    data = client.post(f"/namespaces/{namespace_id}/configurations", body)
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(CONFIGURATION_COLUMNS, [data])


@app.command("show")
def configurations_show(configuration: ConfigurationArgument, namespace: NamespaceOption,
                        as_json: JsonOption = False) -> None:
    """Show one Configuration, its values included."""
    client = settings.client()
    data = client.get(_path(client, namespace, configuration))
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(CONFIGURATION_COLUMNS, [data])
    output.stdout.print_json(json.dumps(data.get("values", {})))


def _edit_in_editor(text: str) -> str:
    """``text`` after $VISUAL or $EDITOR (vi when neither) edited it in a private temporary file.
    By hand: typer's vendored click has no ``edit``, and click is not a dependency of the CLI."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory(prefix="occ-edit-") as folder:
        path = Path(folder) / "values.json"
        path.write_text(text, encoding="utf-8")
        try:
            done = subprocess.run([*shlex.split(editor), str(path)], check=False)  # noqa: S603 - the user's own $EDITOR
        except OSError as exc:
            raise CliError(f"The editor {editor!r} could not be started ({exc.strerror}). Set $EDITOR.",
                           Exit.USAGE, code="EDITOR_FAILED") from None
        if done.returncode != 0:
            raise CliError(f"The editor exited {done.returncode}; nothing was sent.", Exit.USAGE, code="EDITOR_FAILED")
        return path.read_text(encoding="utf-8")


def _update(client: OccClient, path: str, values: Any, generation: int | None,
            name: str | None = None) -> dict[str, Any]:
    headers = {"If-Match": f'"{generation}"'} if generation is not None else None
    body: dict[str, Any] = {"values": values, **({"name": name} if name is not None else {})}
    data: dict[str, Any] = client.patch(path, body, headers=headers)
    return data


@app.command("update")
def configurations_update(
    configuration: ConfigurationArgument,
    namespace: NamespaceOption,
    file: Annotated[Path, typer.Option("--file", "-f", help="The new values as JSON (the whole document); "
                                       "- reads stdin.")],
    generation: Annotated[int | None, typer.Option(help="Refuse (409) unless the Configuration is still at "
                                                   "this generation (If-Match).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Rename it too.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Replace a Configuration's values (Agents take them on their next deploy)."""
    client = settings.client()
    data = _update(client, _path(client, namespace, configuration), read_document(file), generation, name)
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(CONFIGURATION_COLUMNS, [data])


@app.command("edit")
def configurations_edit(
    configuration: ConfigurationArgument,
    namespace: NamespaceOption,
    as_json: JsonOption = False,
) -> None:
    """Edit a Configuration's values in $EDITOR; saved only if nobody changed it meanwhile."""
    client = settings.client()
    path = _path(client, namespace, configuration)
    current = client.get(path)
    before = json.dumps(current.get("values", {}), indent=2, ensure_ascii=False) + "\n"
    edited = _edit_in_editor(before)
    if edited == before:
        output.note(f"Configuration {configuration}: unchanged")
        return None
    try:
        values = json.loads(edited)
    except json.JSONDecodeError as exc:
        raise CliError(f"The edited document is not JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}. "
                       "Nothing was sent.", Exit.USAGE, code="INVALID_JSON") from None
    data = _update(client, path, values, int(current["generation"]))
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"Configuration {configuration}: generation {data['generation']}")


@app.command("delete")
def configurations_delete(configuration: ConfigurationArgument, namespace: NamespaceOption,
                          as_json: JsonOption = False) -> None:
    """Delete a Configuration no Agent uses."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    configuration = configuration_id_of(client, namespace_id, configuration)
    client.delete(f"/namespaces/{namespace_id}/configurations/{configuration}")
    data = {"id": configuration, "namespaceId": namespace_id, "status": "deleted"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"Configuration {configuration}: deleted")
