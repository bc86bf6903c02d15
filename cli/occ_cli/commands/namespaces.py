"""``occ namespaces``: list, create, show and delete Namespaces."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from occ_cli import output
from occ_cli.client import CliError, Exit, OccClient
from occ_cli.common import (
    NAMESPACE_TIMEOUT_SECONDS,
    JsonOption,
    WaitOption,
    every_page,
    gone,
    json_wanted,
    namespace_of,
    settings,
)
from occ_cli.waiting import wait_for

app = typer.Typer(no_args_is_help=True, help="List, create, show and delete Namespaces.")

NAMESPACE_COLUMNS = [("ID", "id"), ("NAME", "name"), ("STATUS", "status"), ("EXISTING", "existingNamespace"),
                     ("CREATED", "createdAt")]


def _show_namespace(data: dict[str, Any], as_json: bool) -> None:
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(NAMESPACE_COLUMNS, [data])


def _await_namespace(client: OccClient, namespace_id: str, timeout: float) -> dict[str, Any]:
    data = wait_for(lambda: client.get(f"/namespaces/{namespace_id}"), what=f"Namespace {namespace_id}",
                    done=lambda ns: ns["status"] in ("ready", "failed"), describe=lambda ns: ns["status"],
                    timeout=timeout)
    if data["status"] == "failed":
        raise CliError(f"Namespace {namespace_id} failed to become ready.", Exit.FAILED, code="NAMESPACE_FAILED")
    return data


@app.command("list")
def namespaces_list(as_json: JsonOption = False) -> None:
    """List the Namespaces the key may read."""
    data = every_page(settings.client(), "/namespaces", "namespaces")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(NAMESPACE_COLUMNS, data)


@app.command("create")
def namespaces_create(
    name: Annotated[str, typer.Argument(help="The new Namespace's name.")],
    existing_namespace: Annotated[str | None, typer.Option(
        help="Adopt this operator-owned Kubernetes namespace instead of one the driver creates.")] = None,
    wait: WaitOption = True,
    wait_timeout: Annotated[float, typer.Option(help="Seconds to wait for it to become ready.")] =
        NAMESPACE_TIMEOUT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """Create a Namespace and (by default) wait until the worker has prepared it."""
    client = settings.client()
    body: dict[str, Any] = {"name": name}
    if existing_namespace:
        body["existingNamespace"] = existing_namespace
    data = client.post("/namespaces", body)
    if wait:
        data = _await_namespace(client, data["id"], wait_timeout)
    _show_namespace(data, as_json)


@app.command("show")
def namespaces_show(namespace: Annotated[str, typer.Argument(help="Its id (ns_…) or name.")],
                    as_json: JsonOption = False) -> None:
    """Show one Namespace."""
    _show_namespace(namespace_of(settings.client(), namespace), as_json)


@app.command("delete")
def namespaces_delete(namespace: Annotated[str, typer.Argument(help="Its id (ns_…) or name.")],
                      wait: WaitOption = True,
                      wait_timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = NAMESPACE_TIMEOUT_SECONDS,
                      as_json: JsonOption = False) -> None:
    """Delete an empty Namespace (OCC refuses one that still holds Agents)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    data = client.delete(f"/namespaces/{namespace_id}")
    if wait:
        data = wait_for(gone(lambda: client.get(f"/namespaces/{namespace_id}")), what=f"Namespace {namespace_id}",
                        done=lambda ns: ns["status"] in ("deleted", "failed"), describe=lambda ns: ns["status"],
                        timeout=wait_timeout)
        if data["status"] == "failed":
            raise CliError(f"Namespace {namespace_id} could not be deleted.", Exit.FAILED, code="NAMESPACE_FAILED")
        data = {"id": namespace_id, "status": "deleted"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"Namespace {namespace_id}: {data['status']}")
