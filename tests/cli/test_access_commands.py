"""Issue 27 on the command line: ``occ access`` (a Namespace's Access page) as a process against
OCC's real web stack on loopback (pytest-django's live server), with the bootstrap key and with
a key the walk itself issues; and ``occ access installation``, the Installation's own service
principals."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from occ_cli.client import Exit

from occ.models import AccessBinding, AuditEvent, Namespace, Principal, Role, Secret, ServiceKey
from occ.services.bootstrap import ADMINISTRATOR_ROLE_NAME
from tests.conftest import mark_namespace_ready
from tests.factories import AgentFactory, NamespaceFactory, grant, key_for, service_principal

OCC = Path(sys.executable).with_name("occ")
CLI_SOURCE = Path(__file__).resolve().parents[2] / "cli"  # this checkout's CLI, first on the path

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def occ(live_server, bootstrap):
    mark_namespace_ready(Namespace.objects.get(name="default"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(OCC_URL=live_server.url, OCC_API_KEY=bootstrap.key_token, COLUMNS="200", NO_COLOR="1",
               PYTHONPATH=str(CLI_SOURCE))

    def run(*args: str, key_file: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        given = ["--key-file", str(key_file)] if key_file else []
        return subprocess.run([str(OCC), *given, *args], input=stdin, capture_output=True, text=True, env=env,
                              timeout=60, check=False)
    return run


def data(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_role_granted_to_a_service_principal_its_key_works_until_revoked(occ, tmp_path):
    namespace = Namespace.objects.get(name="default")
    role = data(occ("access", "roles", "create", "-n", "default", "--name", "ns reader",
                    "--permission", "read:namespace", "-p", "read:secret", "--json"))
    assert [(p["action"], p["resourceKind"]) for p in role["permissions"]] == [("read", "namespace"),
                                                                                ("read", "secret")]
    assert "read:namespace, read:secret" in occ("access", "roles", "show", "ns reader", "-n", "default").stdout
    principal = data(occ("access", "service-principals", "create", "ci bot", "-n", "default", "--json"))
    assert data(occ("access", "service-principals", "show", "ci bot", "-n", namespace.id, "--json")) == principal

    granted = data(occ("access", "bindings", "grant", "-n", "default", "--role", "ns reader",
                       "--principal", "ci bot", "--json"))
    assert len(granted) == 1
    assert (granted[0]["subjectId"], granted[0]["roleId"], granted[0]["resourceKind"], granted[0]["resourceId"]) == (
        principal["id"], role["id"], "namespace", namespace.id)
    binding = granted[0]["id"]
    listed = occ("access", "bindings", "list", "-n", "default").stdout
    row = next(line for line in listed.splitlines() if binding in line)
    assert {"ns reader", "ci bot", "the Namespace"} <= {part.strip() for part in row.split("│")}

    # The key: shown once, on stdout only; --save writes a key file --key-file reads.
    shown = occ("access", "keys", "create", "-n", "default", "--principal", "ci bot", "--name", "shown")
    assert shown.returncode == 0, shown.stderr
    token = next(line for line in shown.stdout.splitlines() if line.startswith("key: ")).removeprefix("key: ")
    assert token not in shown.stderr
    assert "shown once" in shown.stderr
    key_file = tmp_path / "ci-bot.json"
    saved = data(occ("access", "keys", "create", "-n", "default", "--principal", principal["id"], "--name", "ci",
                     "--expires-in-days", "7", "--save", str(key_file), "--json"))
    assert "key" not in saved
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert json.loads(key_file.read_text())["data"]["id"] == saved["id"]
    assert not [e for e in AuditEvent.objects.all() if token in json.dumps(e.details)]  # identifiers only
    taken = occ("access", "keys", "create", "-n", "default", "--principal", "ci bot", "--name", "again",
                "--save", str(key_file))
    assert taken.returncode == Exit.USAGE
    assert "--save takes a new file" in taken.stderr
    assert ServiceKey.objects.filter(principal_id=principal["id"]).count() == 2  # no key issued for it

    # The list: names and dates of both keys, newest first, never a key or its digest.
    saved_token = json.loads(key_file.read_text())["data"]["key"]
    shown_id = ServiceKey.objects.get(principal_id=principal["id"], name="shown").id
    listed = data(occ("access", "keys", "list", "-n", "default", "--principal", "ci bot", "--json"))
    assert [(k["id"], k["name"], k["state"]) for k in listed] == [(saved["id"], "ci", "active"),
                                                                  (shown_id, "shown", "active")]
    assert listed[0]["expiresAt"] == saved["expiresAt"]
    table = occ("access", "keys", "list", "-n", "default", "--principal", principal["id"])
    assert table.returncode == 0, table.stderr
    heading = next(line for line in table.stdout.splitlines() if "NAME" in line)
    assert [part.strip() for part in re.split("[│┃]", heading) if part.strip()] == [
        "ID", "NAME", "CREATED", "EXPIRES", "STATE"]
    row = next(line for line in table.stdout.splitlines() if saved["id"] in line)
    assert {"ci", "active"} <= {part.strip() for part in row.split("│")}
    for secret in (token, saved_token, *ServiceKey.objects.values_list("digest", flat=True)):
        assert secret not in table.stdout + json.dumps(listed)

    # What the Role allows works with the key; what it does not is refused (403: exit 3).
    assert data(occ("namespaces", "show", namespace.id, "--json", key_file=key_file))["id"] == namespace.id
    refused = occ("secrets", "create", "planted", "-n", namespace.id, key_file=key_file, stdin="sk-not-allowed\n")
    assert refused.returncode == Exit.AUTH
    assert "FORBIDDEN" in refused.stderr
    assert not Secret.objects.filter(name="planted").exists()
    not_admin = occ("access", "roles", "list", "-n", namespace.id, key_file=key_file)
    assert not_admin.returncode == Exit.AUTH  # managing access needs installation administer
    assert occ("access", "keys", "list", "-n", namespace.id, "--principal", principal["id"],
               key_file=key_file).returncode == Exit.AUTH

    revoked = data(occ("access", "bindings", "revoke", binding, "-n", "default", "--json"))
    assert revoked["status"] == "revoked"
    assert not AccessBinding.objects.filter(id=binding).exists()
    assert occ("namespaces", "show", namespace.id, key_file=key_file).returncode == Exit.AUTH

    data(occ("access", "bindings", "grant", "-n", "default", "--role", role["id"], "--principal", principal["id"],
             "--json"))
    assert occ("namespaces", "show", namespace.id, key_file=key_file).returncode == Exit.OK
    assert data(occ("access", "keys", "revoke", saved["id"], "--json")) == {"id": saved["id"], "revoked": True}
    assert not ServiceKey.objects.filter(id=saved["id"]).exists()
    after = occ("namespaces", "show", namespace.id, key_file=key_file)
    assert after.returncode == Exit.AUTH  # 401: the key is gone
    assert occ("access", "keys", "revoke", saved["id"]).returncode == Exit.NOT_FOUND
    # A revoked key is deleted, so the list no longer has it.
    assert [k["name"] for k in data(occ("access", "keys", "list", "-n", "default", "--principal", "ci bot",
                                        "--json"))] == ["shown"]

    # A Role still bound is not deleted; once its bindings are revoked it is.
    assert occ("access", "roles", "delete", "ns reader", "-n", "default").returncode == Exit.API_ERROR
    for leftover in data(occ("access", "bindings", "list", "-n", "default", "--json")):
        if leftover["roleId"] == role["id"]:
            data(occ("access", "bindings", "revoke", leftover["id"], "-n", "default", "--json"))
    assert data(occ("access", "roles", "delete", "ns reader", "-n", "default", "--json"))["status"] == "deleted"
    assert not Role.objects.filter(id=role["id"]).exists()
    assert "ns reader" not in occ("access", "roles", "list", "-n", "default").stdout


def test_grant_on_one_agent_by_name_and_list_principals(occ):
    agent = AgentFactory(namespace=Namespace.objects.get(name="default"), name="helpdesk")
    data(occ("access", "roles", "create", "-n", "default", "--name", "agent reader", "-p", "read:agent", "--json"))
    data(occ("access", "service-principals", "create", "deployer", "-n", "default", "--json"))
    assert "deployer" in {p["name"] for p in data(occ("access", "service-principals", "list", "-n", "default",
                                                      "--json"))}
    granted = data(occ("access", "bindings", "grant", "-n", "default", "--role", "agent reader", "--principal",
                       "deployer", "--resource-kind", "agent", "--resource-id", "helpdesk", "--json"))[0]
    assert (granted["resourceKind"], granted["resourceId"]) == ("agent", agent.id)
    assert f"agent {agent.id}" in occ("access", "bindings", "show", granted["id"], "-n", "default").stdout
    nobody = occ("access", "bindings", "grant", "-n", "default", "--role", "agent reader", "--principal", "nobody")
    assert nobody.returncode == Exit.NOT_FOUND
    assert "'nobody'" in nobody.stderr
    # Granting the same again is a conflict OCC explains.
    again = occ("access", "bindings", "grant", "-n", "default", "--role", "agent reader", "--principal", "deployer",
                "--resource-kind", "agent", "--resource-id", agent.id)
    assert again.returncode == Exit.API_ERROR
    assert "already holds" in again.stderr


@pytest.mark.parametrize(("args", "exit_code", "says"), [
    pytest.param(("roles", "create", "-n", "default", "--name", "r", "--permission", "read-agent"), Exit.USAGE,
                 "ACTION:KIND", id="permission-without-colon"),
    pytest.param(("roles", "create", "-n", "default", "--name", "r", "--permission", "fly:agent"), Exit.API_ERROR,
                 "not valid for its resource kind", id="unknown-action"),
    pytest.param(("roles", "create", "-n", "default", "--name", "r", "--permission", "read:installation"),
                 Exit.API_ERROR, "cannot be granted by a Namespace Role", id="installation-kind"),
    pytest.param(("roles", "show", "no such role", "-n", "default"), Exit.NOT_FOUND, "No Role", id="unknown-role"),
    pytest.param(("bindings", "grant", "-n", "default", "--role", "no such role", "--principal", "nobody"),
                 Exit.NOT_FOUND, "no such role", id="grant-unknown-role"),
    pytest.param(("bindings", "grant", "-n", "default", "--role", "r", "--principal", "p", "--resource-kind",
                  "agent"), Exit.USAGE, "--resource-id", id="grant-resource-without-id"),
    pytest.param(("bindings", "revoke", "bnd_00000000-0000-4000-8000-000000000000", "-n", "default"),
                 Exit.NOT_FOUND, "does not exist", id="revoke-unknown-binding"),
    pytest.param(("service-principals", "show", "nobody", "-n", "default"), Exit.NOT_FOUND, "nobody",
                 id="unknown-service-principal"),
    pytest.param(("keys", "create", "-n", "default", "--principal", "nobody", "--name", "k"), Exit.NOT_FOUND,
                 "nobody", id="key-for-unknown-principal"),
    pytest.param(("keys", "list", "-n", "default", "--principal", "nobody"), Exit.NOT_FOUND, "nobody",
                 id="keys-of-unknown-principal"),
    pytest.param(("roles", "list", "-n", "nowhere"), Exit.NOT_FOUND, "nowhere", id="unknown-namespace"),
])
def test_bad_input_is_a_clear_message_and_an_exit_code(occ, args, exit_code, says):
    done = occ("access", *args)
    assert done.returncode == exit_code, done.stderr
    assert says in done.stderr
    assert done.stdout == ""  # nothing printed as data
    assert not Role.objects.filter(name="r").exists()


# --- occ access installation -----------------------------------------------------------------


def _cells(line: str) -> list[str]:
    return [part.strip() for part in re.split("[│┃]", line) if part.strip()]


def _key_file(tmp_path: Path, token: str) -> Path:
    path = tmp_path / "key.json"
    path.write_text(json.dumps({"data": {"key": token}}))
    return path


def test_an_installation_principal_from_creation_to_deletion(occ, tmp_path):
    """``occ access installation`` (the console's Members, Service principals page): created,
    listed, shown, given a key that works once an Installation Role is bound to it, the key
    revoked, the principal deleted."""
    service_principal("other bot", NamespaceFactory())  # a Namespace's: never listed here
    principal = data(occ("access", "installation", "service-principals", "create", "fleet exports", "--json"))
    assert (principal["name"], principal["namespaceId"], principal["keyCount"]) == ("fleet exports", None, 0)
    assert Principal.objects.get(id=principal["id"]).namespace_id is None

    table = occ("access", "installation", "service-principals", "list")
    assert table.returncode == 0, table.stderr
    heading = next(line for line in table.stdout.splitlines() if "NAME" in line)
    assert _cells(heading) == ["ID", "NAME", "ROLES", "KEYS", "CREATED"]
    assert "other bot" not in table.stdout
    row = next(line for line in table.stdout.splitlines() if principal["id"] in line)
    assert _cells(row)[1:4] == ["fleet exports", "-", "0"]
    found = data(occ("access", "installation", "service-principals", "list", "-q", "FLEET", "--json"))
    assert [p["id"] for p in found] == [principal["id"]]

    # The key: once, on stdout only; it acts once an operator binds an Installation Role.
    shown = occ("access", "installation", "keys", "create", "--principal", "fleet exports", "--name", "exports")
    assert shown.returncode == 0, shown.stderr
    token = next(line for line in shown.stdout.splitlines() if line.startswith("key: ")).removeprefix("key: ")
    assert token.startswith("occ_sk_")
    assert token not in shown.stderr
    assert "shown once" in shown.stderr
    assert "namespace" not in shown.stdout  # an Installation key has no Namespace
    assert not [e for e in AuditEvent.objects.all() if token in json.dumps(e.details)]
    AccessBinding.objects.create(principal_id=principal["id"], namespace=None,
                                 role=Role.objects.get(name=ADMINISTRATOR_ROLE_NAME, namespace__isnull=True))
    shown_again = data(occ("access", "installation", "service-principals", "show", principal["id"], "--json"))
    assert (shown_again["installationRoles"], shown_again["keyCount"]) == ([ADMINISTRATOR_ROLE_NAME], 1)
    own_key = _key_file(tmp_path, token)
    assert data(occ("access", "installation", "service-principals", "list", "--json", key_file=own_key))

    keys = data(occ("access", "installation", "keys", "list", "--principal", "fleet exports", "--json"))
    assert [(k["name"], k["namespaceId"], k["state"]) for k in keys] == [("exports", None, "active")]
    assert token not in occ("access", "installation", "keys", "list", "--principal", principal["id"]).stdout
    revoked = data(occ("access", "installation", "keys", "revoke", keys[0]["id"], "--json"))
    assert revoked == {"id": keys[0]["id"], "revoked": True}
    assert occ("access", "installation", "service-principals", "list", key_file=own_key).returncode == Exit.AUTH

    deleted = data(occ("access", "installation", "service-principals", "delete", "fleet exports", "--json"))
    assert deleted == {"id": principal["id"], "name": "fleet exports", "status": "deleted"}
    assert not Principal.objects.filter(id=principal["id"]).exists()
    assert AuditEvent.objects.filter(action="openclaw.iam.service_principals.delete",
                                     resource_id=principal["id"]).exists()
    assert occ("access", "installation", "service-principals", "show", principal["id"]).returncode == Exit.NOT_FOUND


def test_a_namespace_administrator_may_not_make_an_installation_principal(occ, tmp_path):
    namespace = Namespace.objects.get(name="default")
    admin = service_principal("ns admin", namespace)
    grant(admin, "administer:namespace", "read:namespace", namespace=namespace)
    refused = occ("access", "installation", "service-principals", "create", "sneaky",
                  key_file=_key_file(tmp_path, key_for(admin, namespace=namespace)))
    assert refused.returncode == Exit.AUTH
    assert "FORBIDDEN" in refused.stderr
    assert not Principal.objects.filter(name="sneaky").exists()


@pytest.mark.parametrize(("args", "says"), [
    pytest.param(("service-principals", "show", "nobody"), "nobody", id="show-unknown"),
    pytest.param(("service-principals", "delete", "nobody"), "nobody", id="delete-unknown"),
    pytest.param(("keys", "create", "--principal", "nobody", "--name", "k"), "nobody", id="key-for-unknown"),
    pytest.param(("keys", "list", "--principal", "sp_00000000-0000-4000-8000-000000000000"), "no such service",
                 id="keys-of-unknown-id"),
])
def test_an_unknown_installation_principal_is_a_clear_message_and_not_found(occ, args, says):
    done = occ("access", "installation", *args)
    assert done.returncode == Exit.NOT_FOUND, done.stderr
    assert says in done.stderr
    assert done.stdout == ""
    assert not ServiceKey.objects.filter(name="k").exists()
