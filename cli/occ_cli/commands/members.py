"""``occ members``: the Installation's people, as the console's Members page has them: list and
show, add a person (a Role on some Namespaces, everywhere, or none), disable, enable, remove,
and a one-time password. A password is read from stdin (or a hidden prompt), never argv."""

from __future__ import annotations

import getpass
import sys
from typing import Annotated, Any
from urllib.parse import urlencode

import typer

from occ_cli import output
from occ_cli.client import CliError, Exit, OccClient
from occ_cli.common import JsonOption, every_page, json_wanted, namespace_of, settings

app = typer.Typer(no_args_is_help=True, help="People: list, add, disable, enable, remove, one-time password.")

MEMBER_COLUMNS = [("PRINCIPAL", "principalId"), ("USERNAME", "username"), ("NAME", "name"), ("ACTIVE", "active"),
                  ("ROLES", "roles")]
PersonArgument = Annotated[str, typer.Argument(help="The person: their principal id (prn_…) or username.")]


def _password(prompt: str) -> str:
    if sys.stdin.isatty():
        value = getpass.getpass(prompt, stream=sys.stderr)
    else:
        value = sys.stdin.read()
        value = value[:-2] if value.endswith("\r\n") else value[:-1] if value.endswith("\n") else value
    if not value:
        raise CliError("The password is empty: pipe it on stdin or type it at the prompt.", Exit.USAGE,
                       code="EMPTY_VALUE")
    return value


def person_of(client: OccClient, wanted: str) -> dict[str, Any]:
    if wanted.startswith("prn_"):
        return client.get(f"/api/auth/accounts/{wanted}")
    found = [p for p in every_page(client, f"/api/auth/accounts?{urlencode({'q': wanted})}", "accounts")
             if p["username"] == wanted]
    if not found:
        raise CliError(f"No person has the id or username {wanted!r}.", Exit.NOT_FOUND, code="NOT_FOUND")
    return found[0]


def _rows(people: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**p, "roles": ", ".join(p["roles"]) or "-"} for p in people]


def _show(data: dict[str, Any], as_json: bool) -> None:
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(MEMBER_COLUMNS, _rows([data]))


@app.command("list")
def members_list(search: Annotated[str, typer.Option("--search", "-q", help="Only people whose name, username "
                                                     "or id contains this.")] = "",
                 as_json: JsonOption = False) -> None:
    """Everyone who signs in, with the Roles they hold (needs installation administer)."""
    client = settings.client()
    data = every_page(client, "/api/auth/accounts" + (f"?{urlencode({'q': search})}" if search else ""), "accounts")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(MEMBER_COLUMNS, _rows(data))


@app.command("show")
def members_show(person: PersonArgument, as_json: JsonOption = False) -> None:
    """One person: whether they may sign in and the Roles they hold."""
    _show(person_of(settings.client(), person), as_json)


@app.command("add")
def members_add(
    username: Annotated[str, typer.Argument(help="What they sign in with.")],
    name: Annotated[str | None, typer.Option(help="The name shown (the username when absent).")] = None,
    role: Annotated[str | None, typer.Option(help="An Installation Role (id or name, e.g. Viewer, Developer): "
                                             "on each --namespace, or everywhere without one.")] = None,
    namespaces: Annotated[list[str] | None, typer.Option("--namespace", "-n", help="A Namespace (id or name) the "
                                                         "Role applies on; repeat for more.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Add a person who signs in with USERNAME and the password read from stdin."""
    client = settings.client()
    body: dict[str, Any] = {"username": username}
    if name:
        body["name"] = name
    if role:
        roles = every_page(client, "/api/auth/roles", "roles")
        chosen = [r for r in roles if role in (r["id"], r["name"])]
        if not chosen:
            raise CliError(f"No Installation Role has the id or name {role!r} (there are: "
                           f"{', '.join(r['name'] for r in roles)}).", Exit.NOT_FOUND, code="NOT_FOUND")
        body["roleId"] = chosen[0]["id"]
    if namespaces:
        body["namespaceIds"] = [namespace_of(client, ns)["id"] for ns in namespaces]
    body["password"] = _password("Password for the new person (not echoed): ")
    data = client.post("/api/auth/accounts", body)
    del body
    output.note(f"{data['username']} can sign in now")
    _show(client.get(f"/api/auth/accounts/{data['principalId']}"), as_json)


def _set_active(person: str, active: bool, as_json: bool) -> None:
    client = settings.client()
    principal_id = person_of(client, person)["principalId"]
    client.post(f"/api/auth/accounts/{principal_id}/{'enable' if active else 'disable'}")
    _show(client.get(f"/api/auth/accounts/{principal_id}"), as_json)


@app.command("disable")
def members_disable(person: PersonArgument, as_json: JsonOption = False) -> None:
    """Refuse their sign-in; their sessions and keys end at once."""
    _set_active(person, False, as_json)


@app.command("enable")
def members_enable(person: PersonArgument, as_json: JsonOption = False) -> None:
    """Let a disabled person sign in again."""
    _set_active(person, True, as_json)


@app.command("remove")
def members_remove(person: PersonArgument, as_json: JsonOption = False) -> None:
    """Remove the person with their access and keys (the audit log keeps what they did)."""
    client = settings.client()
    found = person_of(client, person)
    client.delete(f"/api/auth/accounts/{found['principalId']}")
    data = {"principalId": found["principalId"], "username": found["username"], "status": "removed"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"{found['username']} ({found['principalId']}): removed")


@app.command("password")
def members_password(person: PersonArgument, as_json: JsonOption = False) -> None:
    """Give the person a one-time password (from stdin): they choose their own at next sign-in."""
    client = settings.client()
    principal_id = person_of(client, person)["principalId"]
    client.post(f"/api/auth/accounts/{principal_id}/password",
                {"password": _password("One-time password (not echoed): ")})
    _show(client.get(f"/api/auth/accounts/{principal_id}"), as_json)
