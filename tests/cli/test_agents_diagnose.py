"""``occ agents diagnose`` as a process against OCC's real web stack on loopback (pytest-django's
live server) and the fake compute driver: the checks as a table or JSON, the exit code a failed
check means, the revision chosen, and the runtime's silence as a clear error (issue 28)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from occ_cli.client import Exit

from occ.models import AgentRevision, Namespace
from tests.agents_support import make_revision
from tests.conftest import mark_namespace_ready
from tests.factories import AgentFactory

OCC = Path(sys.executable).with_name("occ")

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def occ(live_server, bootstrap, fake_compute):
    mark_namespace_ready(Namespace.objects.get(name="default"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(OCC_URL=live_server.url, OCC_API_KEY=bootstrap.key_token, COLUMNS="200", NO_COLOR="1")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(OCC), *args], capture_output=True, text=True, env=env, timeout=60, check=False)
    return run


@pytest.fixture
def revisions() -> tuple[AgentRevision, AgentRevision]:
    agent = AgentFactory(namespace=Namespace.objects.get(name="default"), name="diag-bot")
    # Unpinned (no compute backend recorded): any driver, here the fake one, may be asked.
    return make_revision(agent, 1, compute=None), make_revision(agent, 2, compute=None)


def serve(fake_compute, revision: AgentRevision) -> None:
    """The fake backend's gateway runs ``revision``, as a finished deployment leaves it."""
    with fake_compute._store.edit() as state:
        state["gateways"][revision.agent_id] = {"running": True, "serving": revision.id}


def test_failed_checks_are_a_table_and_exit_failed(occ, revisions):
    done = occ("agents", "diagnose", "diag-bot", "-n", "default")
    assert done.returncode == Exit.FAILED, done.stderr
    lines = done.stdout.splitlines()
    assert f"Diagnostics of {revisions[1].id}" in done.stdout, "the latest revision by default"
    assert any(all(word in line for word in ("gateway", "process", "failed", "GATEWAY_NOT_RUNNING"))
               for line in lines)
    assert any("REVISION_NOT_SERVING" in line for line in lines)


def test_json_names_the_revision_asked_for(occ, revisions):
    for wanted in ("1", revisions[0].id):
        done = occ("agents", "diagnose", "diag-bot", "-n", "default", "--revision", wanted, "--json")
        assert done.returncode == Exit.FAILED, done.stderr
        data = json.loads(done.stdout)
        assert data["revisionId"] == revisions[0].id
        assert [(c["component"], c["check"], c["state"]) for c in data["checks"]] == [
            ("gateway", "process", "failed"), ("gateway", "revision", "failed")]


def test_no_failed_check_exits_zero(occ, revisions, fake_compute):
    serve(fake_compute, revisions[1])
    done = occ("agents", "diagnose", "diag-bot", "-n", "default", "--json")
    assert done.returncode == Exit.OK, done.stderr
    assert {c["state"] for c in json.loads(done.stdout)["checks"]} == {"succeeded"}


def test_an_unknown_revision_number_is_not_found(occ, revisions):
    done = occ("agents", "diagnose", "diag-bot", "-n", "default", "--revision", "9")
    assert done.returncode == Exit.NOT_FOUND
    assert "no revision #9" in done.stderr


def test_unavailable_evidence_is_a_clear_error(occ, revisions, fake_compute):
    fake_compute.script("diagnose", revisions[1].id, ["error:AGENT_GATEWAY_UNAVAILABLE"])
    done = occ("agents", "diagnose", "diag-bot", "-n", "default")
    assert done.returncode == Exit.UNAVAILABLE
    assert "evidence is unavailable now" in done.stderr
    assert "Try again" in done.stderr
    assert done.stdout == ""
