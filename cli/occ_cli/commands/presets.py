"""``occ presets``: list, show, create (from a JSON file, or from an Agent: Save as preset) and
apply Presets.

``apply`` renders the Preset on the server (``POST …/presets/{id}/render``, the renderer the
console uses too) with the ``--var`` values and the ``--secret`` Secrets of its password
variables, then sends the result as one provisioning request, like ``occ provision``. A
credential is never typed here: a password variable names an existing Secret.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer

from occ_cli import output
from occ_cli.client import CliError, Exit, OccClient
from occ_cli.commands.agents import provision_and_report
from occ_cli.common import (
    PROVISION_TIMEOUT_SECONDS,
    JsonOption,
    NamespaceOption,
    WaitOption,
    _find,
    agent_of,
    every_page,
    json_wanted,
    namespace_of,
    read_document,
    secret_id_of,
    settings,
)

app = typer.Typer(no_args_is_help=True, help="List, show, create and apply Presets (launch templates for Agents).")

LIST_COLUMNS = [("ID", "id"), ("NAME", "name"), ("VARIABLES", "variableNames"), ("UPDATED", "updatedAt")]
PresetArgument = Annotated[str, typer.Argument(help="The Preset: its id (pre_…) or name.")]


def preset_rows(client: OccClient, namespace_id: str) -> list[dict[str, Any]]:
    """Every Preset the caller may read, following the API's keyset pages."""
    return every_page(client, f"/namespaces/{namespace_id}/presets", "presets")


def preset_of(client: OccClient, namespace_id: str, wanted: str) -> dict[str, Any]:
    if not wanted.startswith("pre_"):
        wanted = _find(preset_rows(client, namespace_id), wanted, kind="Preset", prefix="pre_")["id"]
    return client.get(f"/namespaces/{namespace_id}/presets/{wanted}")


@app.command("list")
def presets_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """List a Namespace's Presets by name, with the variables each asks for."""
    client = settings.client()
    rows = preset_rows(client, namespace_of(client, namespace)["id"])
    if json_wanted(as_json):
        return output.print_json(rows)
    for row in rows:
        row["variableNames"] = ", ".join(row["variables"])
    output.print_table(LIST_COLUMNS, rows)


@app.command("show")
def presets_show(preset: PresetArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Show one Preset, its template included."""
    client = settings.client()
    data = preset_of(client, namespace_of(client, namespace)["id"], preset)
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_fields([("id", data["id"]), ("name", data["name"]), ("namespace", data["namespaceId"]),
                         ("updated", data["updatedAt"])], title="Preset")
    output.stdout.print_json(json.dumps(data["template"]))


@app.command("create")
def presets_create(
    name: Annotated[str, typer.Argument(help="The Preset's name (unique in the Namespace).")],
    namespace: NamespaceOption,
    file: Annotated[Path | None, typer.Option("--file", "-f", help="The template as JSON ({variables?, agent?, "
                                              "configuration?}); - reads stdin.")] = None,
    from_agent: Annotated[str | None, typer.Option(
        "--from-agent", help="Save this Agent (id or name) as the Preset (the console's Save as preset): its "
                             "Configuration, Secret bindings, model credential's Secret and plugins.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a Preset from a template file, or from an Agent (--from-agent)."""
    if (file is None) == (from_agent is None):
        raise CliError("Give the template with --file, or an Agent to save as a Preset with --from-agent.",
                       Exit.USAGE, code="USAGE")
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    if from_agent is not None:
        agent_id = agent_of(client, namespace_id, from_agent)["id"]
        data = client.post(f"/namespaces/{namespace_id}/agents/{agent_id}/save-as-preset", {"name": name})
    else:
        assert file is not None
        data = client.post(f"/namespaces/{namespace_id}/presets", {"name": name, "template": read_document(file)})
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_fields([("id", data["id"]), ("name", data["name"])], title="Preset created")


def _typed(name: str, raw: str, kind: str) -> Any:
    """A ``--var`` value as its variable's type."""
    if kind == "number":
        try:
            value = float(raw)
        except ValueError:
            value = None
        if value is None or value != value or value in (float("inf"), float("-inf")):
            raise CliError(f"--var {name}: the Preset wants a number.", Exit.USAGE, code="INVALID_VARIABLE")
        return int(value) if value.is_integer() and "." not in raw and "e" not in raw.lower() else value
    if kind == "boolean":
        if raw.lower() not in ("true", "false"):
            raise CliError(f"--var {name}: the Preset wants true or false.", Exit.USAGE, code="INVALID_VARIABLE")
        return raw.lower() == "true"
    return raw


def _pairs(options: list[str], flag: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for option in options:
        name, sep, value = option.partition("=")
        if not sep or not name:
            raise CliError(f"{flag} takes NAME=VALUE, not {option!r}.", Exit.USAGE, code="INVALID_VARIABLE")
        pairs[name] = value
    return pairs


@app.command("apply")
def presets_apply(
    preset: PresetArgument,
    namespace: NamespaceOption,
    var: Annotated[list[str] | None, typer.Option("--var", help="A variable's value: NAME=VALUE (repeat).")] = None,
    secret: Annotated[list[str] | None, typer.Option(
        "--secret", help="A password variable's Secret: NAME=SECRET (its id or name; repeat).")] = None,
    agent_name: Annotated[str | None, typer.Option(
        "--name", help="The new Agent's name, over the Preset's (a saved Agent's Preset has none).")] = None,
    request_id: Annotated[str | None, typer.Option(help="The provisioning requestId (repeat a request with the "
                                                   "same one) [default: a new one]")] = None,
    wait: WaitOption = True,
    wait_timeout: Annotated[float, typer.Option(help="Seconds to wait for provisioning and its first deployment.")] =
        PROVISION_TIMEOUT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """Create and deploy an Agent from a Preset: its variables from --var, its credential from --secret."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    found = preset_of(client, namespace_id, preset)
    declared = found["template"].get("variables") or {}
    variables = {}
    for name, raw in _pairs(var or [], "--var").items():
        kind = (declared.get(name) or {}).get("type", "string")
        variables[name] = _typed(name, raw, kind)
    credentials = {name: {"kind": "secret", "namespaceId": namespace_id, "id": secret_id_of(client, namespace_id, ref)}
                   for name, ref in _pairs(secret or [], "--secret").items()}
    rendered = client.post(f"/namespaces/{namespace_id}/presets/{found['id']}/render",
                           {"variables": variables, "credentials": credentials})
    if rendered["needsCredential"]:
        wanted = [name for name, v in declared.items() if v.get("type") == "password"]
        raise CliError(f"The Preset needs a model credential: --secret {wanted[0] if wanted else 'NAME'}=SECRET "
                       "(an existing Secret's id or name).", Exit.USAGE, code="CREDENTIAL_REQUIRED")
    body = {**rendered["request"], "requestId": request_id or f"req_{uuid.uuid4().hex}"}
    if agent_name is not None:
        body["name"] = agent_name
    provision_and_report(client, namespace_id, body, wait=wait, wait_timeout=wait_timeout, as_json=as_json)
