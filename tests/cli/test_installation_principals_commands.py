"""Issue 27 on the command line: ``occ access installation`` (the console's Members, Service
principals page) as a process against OCC's real web stack on loopback (pytest-django's live
server): an Installation service principal created, listed, shown, given a key that works once an
Installation Role is bound to it, the key revoked, the principal deleted."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from occ_cli.client import Exit

from occ.models import AccessBinding, AuditEvent, Namespace, Principal, Role, ServiceKey
from occ.services.bootstrap import ADMINISTRATOR_ROLE_NAME
from tests.conftest import mark_namespace_ready
from tests.factories import NamespaceFactory, grant, key_for, service_principal

OCC = Path(sys.executable).with_name("occ")
CLI_SOURCE = Path(__file__).resolve().parents[2] / "cli"  # this checkout's CLI, first on the path

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def occ(live_server, bootstrap):
    mark_namespace_ready(Namespace.objects.get(name="default"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(OCC_URL=live_server.url, OCC_API_KEY=bootstrap.key_token, COLUMNS="200", NO_COLOR="1",
               PYTHONPATH=str(CLI_SOURCE))

    def run(*args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
        given = {**env, "OCC_API_KEY": key} if key else env
        return subprocess.run([str(OCC), "access", "installation", *args], capture_output=True, text=True,
                              env=given, timeout=60, check=False)
    return run


def data(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _cells(line: str) -> list[str]:
    return [part.strip() for part in re.split("[│┃]", line) if part.strip()]


def test_an_installation_principal_from_creation_to_deletion(occ):
    service_principal("other bot", NamespaceFactory())  # a Namespace's: never listed here
    principal = data(occ("service-principals", "create", "fleet exports", "--json"))
    assert (principal["name"], principal["namespaceId"], principal["keyCount"]) == ("fleet exports", None, 0)
    assert Principal.objects.get(id=principal["id"]).namespace_id is None

    table = occ("service-principals", "list")
    assert table.returncode == 0, table.stderr
    heading = next(line for line in table.stdout.splitlines() if "NAME" in line)
    assert _cells(heading) == ["ID", "NAME", "ROLES", "KEYS", "CREATED"]
    assert "other bot" not in table.stdout
    row = next(line for line in table.stdout.splitlines() if principal["id"] in line)
    assert _cells(row)[1:4] == ["fleet exports", "-", "0"]
    assert [p["id"] for p in data(occ("service-principals", "list", "-q", "FLEET", "--json"))] == [principal["id"]]

    # The key: once, on stdout only; it acts once an operator binds an Installation Role.
    shown = occ("keys", "create", "--principal", "fleet exports", "--name", "exports")
    assert shown.returncode == 0, shown.stderr
    token = next(line for line in shown.stdout.splitlines() if line.startswith("key: ")).removeprefix("key: ")
    assert token.startswith("occ_sk_")
    assert token not in shown.stderr
    assert "shown once" in shown.stderr
    assert "namespace" not in shown.stdout  # an Installation key has no Namespace
    assert not [e for e in AuditEvent.objects.all() if token in json.dumps(e.details)]
    AccessBinding.objects.create(principal_id=principal["id"], namespace=None,
                                 role=Role.objects.get(name=ADMINISTRATOR_ROLE_NAME, namespace__isnull=True))
    shown_again = data(occ("service-principals", "show", principal["id"], "--json"))
    assert (shown_again["installationRoles"], shown_again["keyCount"]) == ([ADMINISTRATOR_ROLE_NAME], 1)
    assert data(occ("service-principals", "list", "--json", key=token))  # its own key reads the list now

    keys = data(occ("keys", "list", "--principal", "fleet exports", "--json"))
    assert [(k["name"], k["namespaceId"], k["state"]) for k in keys] == [("exports", None, "active")]
    assert token not in occ("keys", "list", "--principal", principal["id"]).stdout
    assert data(occ("keys", "revoke", keys[0]["id"], "--json")) == {"id": keys[0]["id"], "revoked": True}
    assert occ("service-principals", "list", key=token).returncode == Exit.AUTH  # 401: revoked

    deleted = data(occ("service-principals", "delete", "fleet exports", "--json"))
    assert deleted == {"id": principal["id"], "name": "fleet exports", "status": "deleted"}
    assert not Principal.objects.filter(id=principal["id"]).exists()
    assert AuditEvent.objects.filter(action="openclaw.iam.service_principals.delete",
                                     resource_id=principal["id"]).exists()
    assert occ("service-principals", "show", principal["id"]).returncode == Exit.NOT_FOUND


def test_a_namespace_administrator_is_refused(occ):
    namespace = Namespace.objects.get(name="default")
    admin = service_principal("ns admin", namespace)
    grant(admin, "administer:namespace", "read:namespace", namespace=namespace)
    refused = occ("service-principals", "create", "sneaky", key=key_for(admin, namespace=namespace))
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
def test_an_unknown_principal_is_a_clear_message_and_not_found(occ, args, says):
    done = occ(*args)
    assert done.returncode == Exit.NOT_FOUND, done.stderr
    assert says in done.stderr
    assert done.stdout == ""
    assert not ServiceKey.objects.filter(name="k").exists()
