"""``occ access``: a Namespace's Access page from a terminal (``/namespaces/{ns}/iam`` and
``/api/auth/service-keys``): its Roles, its access bindings (grant a Role to a person or a
service principal on the Namespace or on one resource in it, revoke), its service principals,
and their API keys. ``occ access installation``: the Installation's own service principals
(the console's Members, Service principals page; ``/installation/service-principals``) and their
keys. Every command needs ``installation:administer``, as the pages do.

A new key is printed once, to stdout (or written to ``--save FILE`` as a key file ``occ
--key-file`` reads): OCC keeps only its digest, and no note, error or log line carries it.

Why one module of ~500 lines: it is the one ``occ access`` command tree, and the Namespace's and
the Installation's halves share their key commands, options and tables.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import typer

from occ_cli import output
from occ_cli.client import CliError, Exit, OccClient
from occ_cli.commands.configurations import configuration_id_of
from occ_cli.commands.members import person_of
from occ_cli.common import (
    JsonOption,
    NamespaceOption,
    _find,
    agent_of,
    every_page,
    json_wanted,
    namespace_of,
    secret_id_of,
    settings,
)

app = typer.Typer(no_args_is_help=True, help="A Namespace's access: Roles, role bindings, service principals and "
                                             "their API keys; the Installation's own service principals "
                                             "(needs installation administer).")
roles_app = typer.Typer(no_args_is_help=True, help="Roles: named sets of action:kind permissions.")
bindings_app = typer.Typer(no_args_is_help=True, help="Role bindings: a Role given to someone on the Namespace "
                                                      "or on one resource in it.")
principals_app = typer.Typer(no_args_is_help=True, help="Service principals: the Namespace's identities for "
                                                        "automation.")
keys_app = typer.Typer(no_args_is_help=True, help="API keys of a service principal: list, issue (shown once), "
                                                "revoke.")
installation_app = typer.Typer(no_args_is_help=True, help="The Installation's own service principals (no "
                                                          "Namespace; they act through Installation Roles) and "
                                                          "their API keys.")
installation_principals_app = typer.Typer(no_args_is_help=True, help="The Installation's service principals: list, "
                                                                     "show, create, delete.")
installation_keys_app = typer.Typer(no_args_is_help=True, help="API keys of an Installation service principal: "
                                                               "list, issue (shown once), revoke.")
app.add_typer(roles_app, name="roles")
app.add_typer(bindings_app, name="bindings")
app.add_typer(principals_app, name="service-principals")
app.add_typer(keys_app, name="keys")
app.add_typer(installation_app, name="installation")
installation_app.add_typer(installation_principals_app, name="service-principals")
installation_app.add_typer(installation_keys_app, name="keys")

ROLE_COLUMNS = [("ID", "id"), ("NAME", "name"), ("PERMISSIONS", "permissionList")]
BINDING_COLUMNS = [("ID", "id"), ("ROLE", "roleName"), ("SUBJECT", "subjectName"), ("ON", "target")]
PRINCIPAL_COLUMNS = [("ID", "id"), ("NAME", "name")]
INSTALLATION_PRINCIPAL_COLUMNS = [("ID", "id"), ("NAME", "name"), ("ROLES", "roles"), ("KEYS", "keyCount"),
                                  ("CREATED", "createdAt")]
KEY_COLUMNS = [("ID", "id"), ("NAME", "name"), ("CREATED", "createdAt"), ("EXPIRES", "expiresAt"), ("STATE", "state")]
RoleArgument = Annotated[str, typer.Argument(help="The Role: its id (role_…) or name.")]
PrincipalArgument = Annotated[str, typer.Argument(help="The service principal: its id (sp_…) or name.")]
BindingArgument = Annotated[str, typer.Argument(help="The role binding's id (bnd_…).")]
KeyNameOption = Annotated[str, typer.Option("--name", help="The key's name (what it is for; up to 32 characters).")]
ExpiresOption = Annotated[int | None, typer.Option(min=1, max=365, help="Days until it expires (30 when not given).")]
SaveOption = Annotated[Path | None, typer.Option("--save", help="Write the key to this new file (mode 0600, for "
                                                 "--key-file) instead of printing it.")]


def _iam(client: OccClient, namespace: str) -> tuple[str, str]:
    """The Namespace's id and the path of its policy API."""
    namespace_id = namespace_of(client, namespace)["id"]
    return namespace_id, f"/namespaces/{namespace_id}/iam"


def _permission(value: str) -> dict[str, str]:
    action, _, kind = value.partition(":")
    if not action or not kind or ":" in kind:
        raise CliError(f"--permission takes ACTION:KIND (e.g. read:agent), not {value!r}.", Exit.USAGE,
                       code="INVALID_PERMISSION")
    return {"action": action, "resourceKind": kind}


def role_of(client: OccClient, iam: str, wanted: str) -> dict[str, Any]:
    if wanted.startswith("role_"):
        return client.get(f"{iam}/roles/{wanted}")
    return _find(every_page(client, f"{iam}/roles", "roles"), wanted, kind="Role", prefix="role_")


def service_principal_of(client: OccClient, iam: str, wanted: str) -> dict[str, Any]:
    if wanted.startswith("sp_"):
        return client.get(f"{iam}/service-principals/{wanted}")
    return _find(every_page(client, f"{iam}/service-principals", "servicePrincipals"), wanted,
                 kind="service principal", prefix="sp_")


def _subject_id_of(client: OccClient, iam: str, wanted: str) -> str:
    """A service principal of the Namespace (id or name), a person (principal id or username),
    or any principal's id (an Agent's own: OCC says whether it may be bound here)."""
    if wanted.startswith(("sp_", "prn_")):
        return wanted
    listed = every_page(client, f"{iam}/service-principals", "servicePrincipals")
    principals = [p for p in listed if p["name"] == wanted]
    if len(principals) > 1:
        raise CliError(f"Several service principals are named {wanted!r}; use the id.", Exit.USAGE,
                       code="AMBIGUOUS_NAME")
    if principals:
        return str(principals[0]["id"])
    try:
        return str(person_of(client, wanted)["principalId"])
    except CliError as exc:
        if exc.exit_code != Exit.NOT_FOUND:
            raise
    raise CliError(f"No service principal of the Namespace or person has the id, name or username {wanted!r}.",
                   Exit.NOT_FOUND, code="NOT_FOUND")


# A resource named by name where the CLI already knows how to look it up; the others by id.
RESOURCE_LOOKUPS: dict[str, Callable[[OccClient, str, str], str]] = {
    "agent": lambda client, ns, wanted: str(agent_of(client, ns, wanted)["id"]),
    "secret": secret_id_of,
    "configuration": configuration_id_of,
}


def _role_row(role: dict[str, Any]) -> dict[str, Any]:
    permissions = ", ".join(f"{p['action']}:{p['resourceKind']}" for p in role["permissions"])
    return {**role, "permissionList": permissions}


def _show_role(role: dict[str, Any], as_json: bool) -> None:
    if json_wanted(as_json):
        return output.print_json(role)
    output.print_table(ROLE_COLUMNS, [_role_row(role)])


# --- roles ---------------------------------------------------------------------------------------


@roles_app.command("list")
def roles_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """The Namespace's Roles with their permissions (OCC's own system Roles are not listed)."""
    client = settings.client()
    data = every_page(client, f"{_iam(client, namespace)[1]}/roles", "roles")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(ROLE_COLUMNS, [_role_row(r) for r in data])


@roles_app.command("show")
def roles_show(role: RoleArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """One Role and its permissions."""
    client = settings.client()
    _show_role(role_of(client, _iam(client, namespace)[1], role), as_json)


@roles_app.command("create")
def roles_create(
    namespace: NamespaceOption,
    name: Annotated[str, typer.Option("--name", help="The Role's name (unique in the Namespace).")],
    permissions: Annotated[list[str], typer.Option("--permission", "-p", help="ACTION:KIND, e.g. read:agent or "
                                                   "deploy:agent; repeat for more.")],
    as_json: JsonOption = False,
) -> None:
    """Create a Role: a fixed set of permissions (a Role never changes; make another instead)."""
    body = {"name": name, "permissions": [_permission(p) for p in permissions]}
    client = settings.client()
    _show_role(client.post(f"{_iam(client, namespace)[1]}/roles", body), as_json)


@roles_app.command("delete")
def roles_delete(role: RoleArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Delete a Role nobody holds (revoke its bindings first)."""
    client = settings.client()
    iam = _iam(client, namespace)[1]
    found = role_of(client, iam, role)
    client.delete(f"{iam}/roles/{found['id']}")
    data = {"id": found["id"], "name": found["name"], "status": "deleted"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"Role {found['name']} ({found['id']}): deleted")


# --- bindings ------------------------------------------------------------------------------------


def _binding_rows(client: OccClient, namespace_id: str, iam: str,
                  bindings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bindings with their Role's and service principal's names where the Namespace has them."""
    roles = {r["id"]: r["name"] for r in every_page(client, f"{iam}/roles", "roles")}
    principals = {p["id"]: p["name"] for p in every_page(client, f"{iam}/service-principals", "servicePrincipals")}

    def target(binding: dict[str, Any]) -> str:
        kind, resource_id = binding["resourceKind"], binding["resourceId"]
        if resource_id is None:
            return "the whole Namespace"
        return "the Namespace" if kind == "namespace" and resource_id == namespace_id else f"{kind} {resource_id}"
    return [{**b, "roleName": roles.get(b["roleId"], b["roleId"]),
             "subjectName": principals.get(b["subjectId"], b["subjectId"]), "target": target(b)} for b in bindings]


def _show_bindings(client: OccClient, namespace_id: str, iam: str, bindings: list[dict[str, Any]],
                   as_json: bool) -> None:
    if json_wanted(as_json):
        return output.print_json(bindings)
    output.print_table(BINDING_COLUMNS, _binding_rows(client, namespace_id, iam, bindings))


@bindings_app.command("list")
def bindings_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Who holds which Role on what in the Namespace (Namespace-wide ones are operators' business)."""
    client = settings.client()
    namespace_id, iam = _iam(client, namespace)
    _show_bindings(client, namespace_id, iam, every_page(client, f"{iam}/access-bindings", "accessBindings"), as_json)


@bindings_app.command("show")
def bindings_show(binding: BindingArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """One role binding."""
    client = settings.client()
    namespace_id, iam = _iam(client, namespace)
    data = client.get(f"{iam}/access-bindings/{binding}")
    if json_wanted(as_json):
        return output.print_json(data)
    _show_bindings(client, namespace_id, iam, [data], as_json)


@bindings_app.command("grant")
def bindings_grant(
    namespace: NamespaceOption,
    role: Annotated[str, typer.Option("--role", help="The Role: its id (role_…) or name.")],
    principal: Annotated[str, typer.Option("--principal", help="Whom: a service principal of the Namespace (id or "
                                           "name), a person (prn_… or username), or an Agent's principal id.")],
    resource_kind: Annotated[str, typer.Option(help="What it applies on: namespace (the Namespace itself, for the "
                                               "Role's namespace permissions), agent, agent_revision, configuration, "
                                               "secret or preset (that one resource, for the Role's permissions of "
                                               "its kind).")] = "namespace",
    resource_id: Annotated[str | None, typer.Option(help="The resource: its id (or name, for an agent, secret or "
                                                    "configuration) [default: the Namespace]")] = None,
    as_json: JsonOption = False,
) -> None:
    """Grant a Role of the Namespace to someone on the Namespace itself or on one resource in it."""
    client = settings.client()
    namespace_id, iam = _iam(client, namespace)
    if resource_id is None and resource_kind != "namespace":
        raise CliError(f"--resource-kind {resource_kind} needs --resource-id (which {resource_kind}).", Exit.USAGE,
                       code="MISSING_OPTION")
    lookup = RESOURCE_LOOKUPS.get(resource_kind)
    target = namespace_id if resource_id is None else lookup(client, namespace_id, resource_id) if lookup else (
        resource_id)
    role_id = role_of(client, iam, role)["id"]
    body = {"subjectKind": "identity", "subjectId": _subject_id_of(client, iam, principal), "roleId": role_id,
            "resourceKind": resource_kind, "resourceId": target}
    _show_bindings(client, namespace_id, iam, [client.post(f"{iam}/access-bindings", body)], as_json)


@bindings_app.command("revoke")
def bindings_revoke(binding: BindingArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Revoke a role binding: its holder loses what it gave them at once."""
    client = settings.client()
    iam = _iam(client, namespace)[1]
    found = client.get(f"{iam}/access-bindings/{binding}")
    client.delete(f"{iam}/access-bindings/{found['id']}")
    data = {**found, "status": "revoked"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"Role binding {found['id']}: revoked")


# --- service principals --------------------------------------------------------------------------


@principals_app.command("list")
def principals_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """The Namespace's service principals (an Agent's own is reached through its Agent)."""
    client = settings.client()
    data = every_page(client, f"{_iam(client, namespace)[1]}/service-principals", "servicePrincipals")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(PRINCIPAL_COLUMNS, data)


@principals_app.command("create")
def principals_create(name: Annotated[str, typer.Argument(help="Its name, e.g. ci deploys.")],
                      namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Create a service principal with no access: grant it a Role, then issue it a key."""
    client = settings.client()
    data = client.post(f"{_iam(client, namespace)[1]}/service-principals", {"name": name})
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(PRINCIPAL_COLUMNS, [data])


@principals_app.command("show")
def principals_show(principal: PrincipalArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """One service principal."""
    client = settings.client()
    data = service_principal_of(client, _iam(client, namespace)[1], principal)
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(PRINCIPAL_COLUMNS, [data])


# --- keys ----------------------------------------------------------------------------------------


def _new_key_file(path: Path) -> int:
    """A file of its own for the key, readable by its owner only, made before the key is
    issued: a path that cannot take it costs no key."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise CliError(f"{path} could not be created ({exc.strerror}); --save takes a new file.", Exit.USAGE,
                       code="UNWRITABLE_FILE") from None


def _issue(client: OccClient, body: dict[str, Any], save: Path | None) -> dict[str, Any]:
    """POST the key; with ``save``, write it as a key file ``occ --key-file`` reads (``data.key``)
    and answer without it."""
    if save is None:
        return client.post("/api/auth/service-keys", body)
    descriptor = _new_key_file(save)
    try:
        issued = client.post("/api/auth/service-keys", body)
    except BaseException:
        os.close(descriptor)
        save.unlink()
        raise
    with os.fdopen(descriptor, "w") as file:
        json.dump({"data": issued}, file, indent=2)
        file.write("\n")
    return {k: v for k, v in issued.items() if k != "key"}


@keys_app.command("list")
def keys_list(
    namespace: NamespaceOption,
    principal: Annotated[str, typer.Option("--principal", help="The service principal: its id (sp_…) or name.")],
    as_json: JsonOption = False,
) -> None:
    """A service principal's API keys, newest first: names and dates, never a key (OCC keeps only
    digests). A revoked key is gone; an expired one is listed as expired."""
    client = settings.client()
    namespace_id, iam = _iam(client, namespace)
    _show_keys(client, {"servicePrincipalId": service_principal_of(client, iam, principal)["id"],
                        "namespaceId": namespace_id}, as_json)


def _show_keys(client: OccClient, query: dict[str, str], as_json: bool) -> None:
    data = every_page(client, f"/api/auth/service-keys?{urlencode(query)}", "serviceKeys")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(KEY_COLUMNS, data)


@keys_app.command("create")
def keys_create(
    namespace: NamespaceOption,
    principal: Annotated[str, typer.Option("--principal", help="The service principal: its id (sp_…) or name.")],
    name: KeyNameOption,
    expires_in_days: ExpiresOption = None,
    save: SaveOption = None,
    as_json: JsonOption = False,
) -> None:
    """Issue an API key for a service principal of the Namespace. The key is shown once."""
    client = settings.client()
    namespace_id, iam = _iam(client, namespace)
    body: dict[str, Any] = {"servicePrincipalId": service_principal_of(client, iam, principal)["id"],
                            "namespaceId": namespace_id, "name": name}
    _issue_and_show(client, body, expires_in_days=expires_in_days, save=save, as_json=as_json)


def _issue_and_show(client: OccClient, body: dict[str, Any], *, expires_in_days: int | None, save: Path | None,
                    as_json: bool) -> None:
    """Issue the key ``body`` asks for and show it once: on stdout only (its own ``key:`` line, or
    ``--json``'s ``key``), or in ``save``; the note about it goes to stderr and never holds it."""
    if expires_in_days is not None:
        body["expiresIn"] = expires_in_days * 86_400
    issued = _issue(client, body, save)
    if save is not None:
        output.note(f"The key is in {save} (OCC keeps only its digest; use it with --key-file {save}).")
    else:
        output.note("The key is shown once: OCC keeps only its digest. Store it now.")
    if json_wanted(as_json):
        return output.print_json(issued)
    scope = [("namespace", issued["namespaceId"])] if issued.get("namespaceId") else []  # none: the Installation's
    output.print_fields([("id", issued["id"]), ("name", issued["name"]),
                         ("service principal", issued["servicePrincipalId"]), *scope,
                         ("expires", issued["expiresAt"])], title="API key")
    if "key" in issued:  # on a line of its own, never folded: it is copied whole
        sys.stdout.write(f"key: {issued['key']}\n")


@keys_app.command("revoke")
def keys_revoke(key: Annotated[str, typer.Argument(help="The key's id (key_…), as `keys list` or `keys create` "
                                                   "shows it.")],
                as_json: JsonOption = False) -> None:
    """Revoke an API key: OCC refuses it from now on (its service principal and Roles stay)."""
    data = settings.client().delete(f"/api/auth/service-keys/{key}")
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"API key {data['id']}: revoked")


# --- the Installation's service principals and their keys ----------------------------------------

INSTALLATION_PRINCIPALS = "/installation/service-principals"


def installation_principal_of(client: OccClient, wanted: str) -> dict[str, Any]:
    if wanted.startswith("sp_"):
        return client.get(f"{INSTALLATION_PRINCIPALS}/{wanted}")
    named = every_page(client, f"{INSTALLATION_PRINCIPALS}?{urlencode({'q': wanted})}", "servicePrincipals")
    return _find(named, wanted, kind="Installation service principal", prefix="sp_")


def _installation_rows(principals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**p, "roles": ", ".join(p["installationRoles"]) or "-"} for p in principals]


def _show_installation_principal(data: dict[str, Any], as_json: bool) -> None:
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(INSTALLATION_PRINCIPAL_COLUMNS, _installation_rows([data]))


@installation_principals_app.command("list")
def installation_principals_list(
    search: Annotated[str, typer.Option("--search", "-q", help="Only those whose name or id contains this.")] = "",
    as_json: JsonOption = False,
) -> None:
    """The Installation's service principals by name, with their Installation Roles and keys."""
    client = settings.client()
    path = INSTALLATION_PRINCIPALS + (f"?{urlencode({'q': search})}" if search else "")
    data = every_page(client, path, "servicePrincipals")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(INSTALLATION_PRINCIPAL_COLUMNS, _installation_rows(data))


@installation_principals_app.command("show")
def installation_principals_show(principal: PrincipalArgument, as_json: JsonOption = False) -> None:
    """One Installation service principal: its Installation Roles and how many keys it has."""
    _show_installation_principal(installation_principal_of(settings.client(), principal), as_json)


@installation_principals_app.command("create")
def installation_principals_create(name: Annotated[str, typer.Argument(help="Its name, e.g. fleet exports.")],
                                   as_json: JsonOption = False) -> None:
    """Create an Installation service principal with no Roles (operators bind Installation Roles),
    then issue it a key with `occ access installation keys create`."""
    _show_installation_principal(settings.client().post(INSTALLATION_PRINCIPALS, {"name": name}), as_json)


@installation_principals_app.command("delete")
def installation_principals_delete(principal: PrincipalArgument, as_json: JsonOption = False) -> None:
    """Delete an Installation service principal with its keys and Role bindings: its keys stop
    working at once."""
    client = settings.client()
    found = installation_principal_of(client, principal)
    client.delete(f"{INSTALLATION_PRINCIPALS}/{found['id']}")
    data = {"id": found["id"], "name": found["name"], "status": "deleted"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"Service principal {found['name']} ({found['id']}): deleted; its keys no longer work")


InstallationPrincipalOption = Annotated[str, typer.Option("--principal", help="The Installation service principal: "
                                                          "its id (sp_…) or name.")]


@installation_keys_app.command("list")
def installation_keys_list(principal: InstallationPrincipalOption, as_json: JsonOption = False) -> None:
    """An Installation service principal's API keys, newest first: names and dates, never a key."""
    client = settings.client()
    _show_keys(client, {"servicePrincipalId": installation_principal_of(client, principal)["id"]}, as_json)


@installation_keys_app.command("create")
def installation_keys_create(
    principal: InstallationPrincipalOption,
    name: KeyNameOption,
    expires_in_days: ExpiresOption = None,
    save: SaveOption = None,
    as_json: JsonOption = False,
) -> None:
    """Issue an API key for an Installation service principal. The key is shown once."""
    client = settings.client()
    body: dict[str, Any] = {"servicePrincipalId": installation_principal_of(client, principal)["id"], "name": name}
    _issue_and_show(client, body, expires_in_days=expires_in_days, save=save, as_json=as_json)


installation_keys_app.command("revoke")(keys_revoke)
