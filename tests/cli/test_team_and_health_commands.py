"""Issue 27 on the command line, as a process against OCC's real web stack on loopback
(pytest-django's live server): the Agents list's health columns (as the console's list), the
Configuration's name where an id is shown, the team commands (``occ members``, ``occ agents
share|shares|unshare``), and tables that never break an id at 80 columns."""

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

from occ.models import Agent, AuditEvent, Configuration, Namespace, Principal, Secret
from tests.agents_support import make_revision
from tests.conftest import mark_namespace_ready
from tests.factories import AgentFactory, ConfigurationFactory, SecretFactory, service_principal

OCC = Path(sys.executable).with_name("occ")
PASSWORD = "a-long-cli-member-password-1"
ID = re.compile(r"\b(?:agt|rev|cfg|prn|sp|rb|ab)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def occ(live_server, bootstrap):
    mark_namespace_ready(Namespace.objects.get(name="default"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(OCC_URL=live_server.url, OCC_API_KEY=bootstrap.key_token, COLUMNS="200", NO_COLOR="1")

    def run(*args: str, stdin: str | None = None, columns: int = 200) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(OCC), *args], input=stdin, capture_output=True, text=True,
                              env={**env, "COLUMNS": str(columns)}, timeout=60, check=False)
    return run


def data(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def whole_ids(table: str) -> set[str]:
    return set(ID.findall(table))


def test_agents_list_shows_health_and_names_the_configuration(occ):
    namespace = Namespace.objects.get(name="default")
    draft = AgentFactory(namespace=namespace, name="draft-bot")
    deployed = AgentFactory(namespace=namespace, name="live-bot")
    Configuration.objects.filter(id=deployed.configuration_id).update(name="support bot")
    first = make_revision(deployed, 1)
    make_revision(deployed, 2)
    Agent.objects.filter(id=deployed.id).update(active_revision=first, desired_runtime_state="running")

    listed = {agent["name"]: agent for agent in data(occ("agents", "list", "-n", "default", "--json"))}
    assert listed["live-bot"]["model"] == "openai/gpt-5"
    assert listed["live-bot"]["lastDeploy"]["revision"] == 2
    assert listed["draft-bot"]["runtime"]["state"] == "none"

    table = occ("agents", "list", "-n", "default").stdout
    head = table.splitlines()[1]
    for column in ("RUNTIME", "MODEL", "VERSION", "LAST DEPLOY"):
        assert column in head
    assert "DESIRED" not in head  # health, not desired state
    live = next(line for line in table.splitlines() if "live-bot" in line)
    assert "openai/gpt-5" in live
    assert "v2" in live  # the last deploy
    assert first.id[:12] in live  # the version: a label, its id is in --json
    assert first.id not in live
    assert listed["live-bot"]["runtime"]["state"] in live
    assert "none" in next(line for line in table.splitlines() if "draft-bot" in line)

    # At 80 columns every id is still whole (copyable into the next command).
    narrow = occ("agents", "list", "-n", "default", columns=80).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert {draft.id, deployed.id} <= whole_ids(narrow)

    Configuration.objects.filter(id=draft.configuration_id).update(name="draft config")
    status = occ("agents", "status", "draft-bot", "-n", "default").stdout
    assert f"{draft.configuration_id} (draft config)" in status
    shown = occ("agents", "update", "live-bot", "-n", "default", "--no-rollback").stdout
    assert "support bot" in shown

    assert "support bot" in occ("revisions", "list", "live-bot", "-n", "default").stdout
    revisions = occ("revisions", "list", "live-bot", "-n", "default", columns=80).stdout
    assert max(len(line) for line in revisions.splitlines()) <= 80
    assert {first.id} <= whole_ids(revisions)
    assert data(occ("revisions", "list", "live-bot", "-n", "default", "--json"))[0]["configurationName"] == (
        "support bot")


def test_agents_list_and_a_name_walk_every_page(occ):
    """The API answers 100 Agents a page at most: the list shows all 105, each once, and a name
    on the second page still resolves."""
    namespace = Namespace.objects.get(name="default")
    configuration = ConfigurationFactory(namespace=namespace)
    made = [AgentFactory(namespace=namespace, configuration=configuration, name=f"fleet-{index:03d}")
            for index in range(105)]
    listed = [agent["id"] for agent in data(occ("agents", "list", "-n", "default", "--json"))]
    assert listed == [agent.id for agent in made]
    table = occ("agents", "list", "-n", "default").stdout
    assert whole_ids(table) == {agent.id for agent in made}
    assert sum("fleet-" in line for line in table.splitlines()) == 105
    status = occ("agents", "status", "fleet-104", "-n", "default")
    assert status.returncode == 0, status.stderr
    assert made[-1].id in status.stdout


def test_secrets_list_and_a_name_walk_every_page(occ):
    namespace = Namespace.objects.get(name="default")
    made = [SecretFactory(namespace=namespace, name=f"key-{index:03d}") for index in range(103)]
    listed = [secret["id"] for secret in data(occ("secrets", "list", "-n", "default", "--json"))]
    assert listed == [secret.id for secret in made]
    table = occ("secrets", "list", "-n", "default").stdout
    assert sum("key-" in line for line in table.splitlines()) == 103
    # A name on the second page resolves (the Secret is deleted by that name).
    deleted = occ("secrets", "delete", "key-102", "-n", "default")
    assert deleted.returncode == 0, deleted.stderr
    assert not Secret.objects.filter(id=made[-1].id).exists()


def test_members_add_list_disable_enable_password_and_remove(occ):
    added = occ("members", "add", "ana", "--name", "Ana Lima", "--role", "Viewer", "-n", "default", "--json",
                stdin=PASSWORD + "\n")
    person = data(added)
    assert (person["username"], person["name"], person["active"]) == ("ana", "Ana Lima", True)
    assert person["roles"] == ["Viewer on default"]
    assert PASSWORD not in added.stdout + added.stderr
    assert [p["username"] for p in data(occ("members", "list", "-q", "lima", "--json"))] == ["ana"]
    table = occ("members", "list", columns=80).stdout
    assert "ana" in table
    assert person["principalId"] in whole_ids(table)

    assert data(occ("members", "disable", "ana", "--json"))["active"] is False
    assert data(occ("members", "enable", person["principalId"], "--json"))["active"] is True
    assert data(occ("members", "password", "ana", "--json", stdin="a-long-one-time-password-2\n"))[
        "mustChangePassword"] is True
    assert AuditEvent.objects.filter(resource_id=person["principalId"]).count() >= 4  # each change audited

    refused = occ("members", "add", "bruno", "--role", "No such role", stdin=PASSWORD)
    assert refused.returncode == Exit.NOT_FOUND
    assert "Viewer" in refused.stderr  # the Roles there are
    assert occ("members", "add", "carla", stdin="").returncode == Exit.USAGE  # no password, nothing sent

    removed = data(occ("members", "remove", "ana", "--json"))
    assert removed["status"] == "removed"
    assert not Principal.objects.filter(id=person["principalId"]).exists()
    assert occ("members", "show", "ana").returncode == Exit.NOT_FOUND


def test_share_an_agent_list_who_has_access_and_revoke(occ):
    namespace = Namespace.objects.get(name="default")
    agent = AgentFactory(namespace=namespace, name="helpdesk")
    teammate = service_principal("ci bot", namespace=namespace)

    shared = data(occ("agents", "share", "helpdesk", "ci bot", "-n", "default", "--level", "deploy", "--json"))
    assert (shared["subjectId"], shared["level"], shared["source"]) == (teammate.id, "deploy", "direct")
    entries = data(occ("agents", "shares", "helpdesk", "-n", "default", "--json"))
    assert ("ci bot", "deploy", "direct") in {(e["subjectName"], e["level"], e["source"]) for e in entries}
    table = occ("agents", "shares", "helpdesk", "-n", "default", columns=80).stdout
    assert teammate.id in whole_ids(table)

    again = data(occ("agents", "share", agent.id, teammate.id, "-n", "default", "--level", "chat", "--json"))
    assert again["level"] == "chat"  # replaced, not added
    assert [e["level"] for e in data(occ("agents", "shares", "helpdesk", "-n", "default", "--json"))
            if e["subjectId"] == teammate.id] == ["chat"]
    assert occ("agents", "share", "helpdesk", "nobody", "-n", "default").returncode == Exit.NOT_FOUND
    assert occ("agents", "share", "helpdesk", "ci bot", "-n", "default", "--level", "own").returncode == Exit.USAGE

    revoked = data(occ("agents", "unshare", "helpdesk", "ci bot", "-n", "default", "--json"))
    assert revoked["status"] == "revoked"
    assert teammate.id not in {e["subjectId"] for e in data(occ("agents", "shares", "helpdesk", "-n", "default",
                                                                 "--json"))}
    assert AuditEvent.objects.filter(action="openclaw.agents.unshare", resource_id=agent.id).exists()
    assert occ("agents", "unshare", "helpdesk", "ci bot", "-n", "default").returncode == Exit.NOT_FOUND


def test_replace_a_secret_value_retry_credential_access_and_read_the_runtime(occ):
    """The console's Replace value, Retry credential access and Runtime panel, from a terminal."""
    created = data(occ("secrets", "create", "model-key", "-n", "default", "--json", stdin="sk-cli-old-0001\n"))
    replaced = occ("secrets", "update", "model-key", "-n", "default", "--json", stdin="sk-cli-new-0002\n")
    assert data(replaced)["id"] == created["id"]
    assert "sk-cli-new-0002" not in replaced.stdout + replaced.stderr
    assert AuditEvent.objects.filter(action="openclaw.secrets.update", resource_id=created["id"]).count() == 1
    assert occ("secrets", "update", "model-key", "-n", "default", stdin="").returncode == Exit.USAGE

    namespace = Namespace.objects.get(name="default")
    agent = AgentFactory(namespace=namespace, name="keyed", harness_auth_method="api_key",
                         harness_secret=Secret.objects.get(id=created["id"]))
    granted = data(occ("agents", "grant", "keyed", "-n", "default", "--json"))
    assert granted == {"agentId": agent.id, "secretIds": [created["id"]]}
    assert AuditEvent.objects.filter(action="openclaw.agents.secret_access.grant", resource_id=agent.id).exists()

    runtime = data(occ("agents", "runtime", "keyed", "-n", "default", "--json"))
    assert (runtime["agentId"], runtime["desiredRuntimeState"]) == (agent.id, "stopped")
    assert "desired" in occ("agents", "runtime", "keyed", "-n", "default").stdout
