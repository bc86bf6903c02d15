"""``occ secrets``: create, list and delete Secrets; a value is read from stdin, never the command line."""

from __future__ import annotations

import getpass
import sys
from typing import Annotated

import typer

from occ_cli import output
from occ_cli.client import CliError, Exit
from occ_cli.common import JsonOption, NamespaceOption, every_page, json_wanted, namespace_of, secret_id_of, settings

app = typer.Typer(no_args_is_help=True, help="Create, list, replace and delete Secrets (values are read from stdin).")

def read_secret_value() -> str:
    """The value from stdin (one trailing newline dropped), or a hidden prompt on a terminal."""
    if sys.stdin.isatty():
        value = getpass.getpass("Secret value (not echoed): ", stream=sys.stderr)
    else:
        value = sys.stdin.read()
        value = value[:-2] if value.endswith("\r\n") else value[:-1] if value.endswith("\n") else value
    if not value:
        raise CliError("The Secret's value is empty: pipe it on stdin (e.g. `occ secrets create -n NS NAME < file`).",
                       Exit.USAGE, code="EMPTY_VALUE")
    return value


SECRET_COLUMNS = [("ID", "id"), ("NAME", "name"), ("NAMESPACE", "namespaceId"), ("UPDATED", "updatedAt")]


@app.command("create")
def secrets_create(name: Annotated[str, typer.Argument(help="The Secret's name.")], namespace: NamespaceOption,
                   as_json: JsonOption = False) -> None:
    """Create a Secret whose value is read from stdin (never from the command line)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    value = read_secret_value()
    data = client.post(f"/namespaces/{namespace_id}/secrets", {"name": name, "value": value})
    del value
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(SECRET_COLUMNS, [data])


@app.command("list")
def secrets_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """List a Namespace's Secrets (names and ids; values never leave OCC)."""
    client = settings.client()
    data = every_page(client, f"/namespaces/{namespace_of(client, namespace)['id']}/secrets", "secrets")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(SECRET_COLUMNS, data)


@app.command("update")
def secrets_update(secret: Annotated[str, typer.Argument(help="The Secret: its id (sec_…) or name.")],
                   namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Replace a Secret's value with the one read from stdin (the console's Replace value);
    Agents get it on their next deploy."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    secret_id = secret_id_of(client, namespace_id, secret)
    value = read_secret_value()
    data = client.patch(f"/namespaces/{namespace_id}/secrets/{secret_id}", {"value": value})
    del value
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(SECRET_COLUMNS, [data])


@app.command("delete")
def secrets_delete(secret: Annotated[str, typer.Argument(help="The Secret: its id (sec_…) or name.")],
                   namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Delete a Secret (OCC refuses one that a Configuration, Agent or revision still uses)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    secret_id = secret_id_of(client, namespace_id, secret)
    client.delete(f"/namespaces/{namespace_id}/secrets/{secret_id}")
    data = {"id": secret_id, "namespaceId": namespace_id, "status": "deleted"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"Secret {secret_id}: deleted")
