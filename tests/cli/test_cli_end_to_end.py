"""The ``occ`` command line end to end against a real OCC on loopback.

OCC runs as ``make run`` runs it (gunicorn, a Celery worker and beat; SQLite in its own data
folder, or a PostgreSQL database of its own when the suite runs there) with the ``fake``
compute driver, its world in one JSON file the processes share: every deployment succeeds
at once and no gateway starts. The CLI is the installed console script, run as a process
with the stack's ``OCC_URL`` and ``OCC_DATA_DIR`` (so it reads the bootstrap key file itself):
Namespace → Secret from stdin → Configuration → Agent → deploy → status → stop → delete,
then one-request provisioning, every ``--json`` answer parsed, the documented exit codes of
each kind of failure, and the Secret's value in no argv, output or log.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from occ_cli.client import Exit

from tests.e2e.stack import REMOVED_ENV, OccStack, stack_database

pytestmark = [pytest.mark.slow]

OCC = Path(sys.executable).with_name("occ")
CANARY = "sk-cli-canary-7f3e9a51d2c84b60"
NAMESPACE = "cli-team"
FAKE_MODEL_VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5.5"}}}}
CLI_TIMEOUT_SECONDS = 300


@dataclass
class Result:
    argv: list[str]
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        assert self.code == 0, f"{self.argv} exited {self.code}:\n{self.stderr}"
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        """The JSON error report (stderr, with --json), whose exit code matches the process's."""
        assert self.stdout == "", self.stdout
        report = json.loads(self.stderr.strip().splitlines()[-1])
        assert report["exitCode"] == self.code
        return report["error"]


@dataclass
class Cli:
    stack: OccStack
    env: dict[str, str]
    runs: list[Result]

    def __call__(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Result:
        argv = [str(OCC), *args]
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env={**self.env, **(env or {})},
                              timeout=CLI_TIMEOUT_SECONDS, check=False)
        result = Result(argv, done.returncode, done.stdout, done.stderr)
        self.runs.append(result)
        return result


@pytest.fixture(scope="module")
def cli(tmp_path_factory, django_db_blocker) -> Iterator[Cli]:
    """One OCC for the module's tests (starting one costs a minute on a loaded machine)."""
    tmp_path = tmp_path_factory.mktemp("cli")
    with contextlib.ExitStack() as cleanup, django_db_blocker.unblock():
        database = cleanup.enter_context(stack_database(tmp_path / "stack" / "data", suffix="cli"))
        stack = OccStack(tmp_path / "stack", database=database, secret_key=Fernet.generate_key().decode(),
                         gateway_ports="29100-29199",  # unused with the fake driver
                         extra_env={"OCC_COMPUTE_DRIVER": "fake", "OCC_FAKE_COMPUTE_STATE": "fake-compute.json"})
        cleanup.callback(stack.stop)
        stack.start()
        env = {k: v for k, v in os.environ.items() if k not in REMOVED_ENV and k != "OCC_API_KEY"}
        env.update(OCC_URL=stack.base_url, OCC_DATA_DIR=str(stack.data_dir), COLUMNS="200", NO_COLOR="1")
        yield Cli(stack, env, [])


def test_an_operator_runs_an_agent_from_namespace_to_deletion_with_the_cli(cli, tmp_path):
    installation = cli("installation", "--json").json()
    assert installation["id"].startswith("ins_")
    assert "embedded" in installation["capabilities"]["agentProvisioning"]["executionModes"]
    assert installation["name"] in cli("installation").stdout

    # Namespace: created and awaited until the worker made it ready; the table lists it.
    created = cli("namespaces", "create", NAMESPACE, "--json")
    namespace = created.json()
    assert (namespace["name"], namespace["status"]) == (NAMESPACE, "ready")
    assert f"Namespace {namespace['id']}: ready" in created.stderr
    assert namespace["id"] in [ns["id"] for ns in cli("namespaces", "list", "--json").json()]
    table = cli("namespaces", "list").stdout
    assert NAMESPACE in table
    assert namespace["id"] in table
    assert cli("namespaces", "show", NAMESPACE, "--json").json()["id"] == namespace["id"]

    # The model key: from stdin, never argv; the answer holds its reference only.
    secret = cli("secrets", "create", "model-key", "--namespace", NAMESPACE, "--json", stdin=CANARY + "\n").json()
    assert secret["ref"] == {"kind": "secret", "namespaceId": namespace["id"], "id": secret["id"]}
    assert [s["name"] for s in cli("secrets", "list", "-n", NAMESPACE, "--json").json()] == ["model-key"]

    body = tmp_path / "configuration.json"
    body.write_text(json.dumps({"kind": "agent", "values": FAKE_MODEL_VALUES}))
    configuration = cli("configurations", "create", "-n", NAMESPACE, "-f", str(body), "--json").json()
    assert configuration["values"] == FAKE_MODEL_VALUES
    shown = cli("configurations", "show", configuration["id"], "-n", NAMESPACE, "--json").json()
    assert (shown["id"], shown["values"]) == (configuration["id"], FAKE_MODEL_VALUES)
    assert "openai/gpt-5.5" in cli("configurations", "show", configuration["id"], "-n", NAMESPACE).stdout

    created_agent = cli("agents", "create", "first", "-n", NAMESPACE, "-c", configuration["id"],
                        "--model-secret", "model-key", "--json")
    agent = created_agent.json()
    assert agent["harnessAuth"]["source"]["id"] == secret["id"]
    assert f"may use {secret['id']}" in created_agent.stderr
    assert [a["id"] for a in cli("agents", "list", "-n", NAMESPACE, "--json").json()] == [agent["id"]]
    assert agent["id"] in cli("agents", "list", "-n", NAMESPACE).stdout

    # Deploy and wait: the deployment succeeds and the Agent serves the new revision.
    deployed = cli("agents", "deploy", "first", "-n", NAMESPACE, "--json")
    result = deployed.json()
    revision = result["revision"]
    assert result["deployment"]["status"] == "succeeded"
    assert result["agent"]["activeRevisionId"] == revision["id"]
    assert f"deployment {revision['id']}: succeeded" in deployed.stderr

    status = cli("agents", "status", agent["id"], "-n", namespace["id"], "--json").json()
    assert status["agent"]["runtime"]["state"] == "running"
    assert status["latestDeployment"]["deploymentId"] == revision["id"]
    human = cli("agents", "status", "first", "-n", NAMESPACE).stdout
    assert revision["id"] in human
    assert "running" in human

    stopped = cli("agents", "stop", "first", "-n", NAMESPACE, "--json").json()
    assert stopped["desiredRuntimeState"] == "stopped"
    assert stopped["runtime"]["state"] in ("stopped", "none")
    started = cli("agents", "start", "first", "-n", NAMESPACE, "--json").json()
    assert started["desiredRuntimeState"] == "running"
    assert (started["runtime"]["state"], started["activeRevisionId"]) == ("running", revision["id"])
    assert cli("agents", "stop", "first", "-n", NAMESPACE, "--json").json()["desiredRuntimeState"] == "stopped"

    deleted = cli("agents", "delete", "first", "-n", NAMESPACE, "--json").json()
    assert deleted == {"id": agent["id"], "namespaceId": namespace["id"], "status": "deleted"}
    gone = cli("agents", "status", agent["id"], "-n", NAMESPACE, "--json")
    assert gone.code == Exit.NOT_FOUND
    assert gone.error()["code"] == "NOT_FOUND"

    # One-request provisioning: the job, then its first deployment.
    request = tmp_path / "provision.json"
    request.write_text(json.dumps({
        "requestId": "req_3f1b2c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d", "name": "provisioned",
        "configuration": {"kind": "agent", "values": FAKE_MODEL_VALUES},
        "harnessAuth": {"method": "api_key", "source": secret["ref"]}}))
    provisioned = cli("provision", "-n", NAMESPACE, "-f", str(request), "--json")
    outcome = provisioned.json()
    assert outcome["provisioning"]["status"] == "succeeded"
    assert outcome["deployment"]["status"] == "succeeded"
    assert outcome["deployment"]["agentId"] == outcome["provisioning"]["agentId"]
    assert cli("agents", "delete", "provisioned", "-n", NAMESPACE, "--json").json()["status"] == "deleted"

    # A Namespace that still holds resources is refused, plainly; an empty one goes.
    refused = cli("namespaces", "delete", NAMESPACE)
    assert refused.code == Exit.API_ERROR
    assert "error: NAMESPACE_NOT_EMPTY:" in refused.stderr
    assert cli("configurations", "delete", configuration["id"], "-n", NAMESPACE, "--json").json()["status"] == "deleted"
    assert cli("configurations", "delete", outcome["provisioning"]["configurationId"], "-n", NAMESPACE).code == 0
    assert cli("secrets", "delete", "model-key", "-n", NAMESPACE, "--json").json()["id"] == secret["id"]
    assert cli("namespaces", "delete", NAMESPACE, "--json").json()["status"] == "deleted"
    unknown = cli("namespaces", "show", NAMESPACE, "--json")
    assert unknown.code == Exit.NOT_FOUND
    assert unknown.error()["code"] == "NOT_FOUND"

    # The value went in on stdin only: no argv, no output, no log of any OCC process.
    for run in cli.runs:
        assert not any(CANARY in arg for arg in run.argv)
        assert CANARY not in run.stdout
        assert CANARY not in run.stderr
    for log in cli.stack.log_dir.glob("*.log"):
        assert CANARY not in log.read_text(errors="replace"), log.name


def test_each_kind_of_failure_has_its_exit_code_and_a_plain_message(cli, tmp_path):
    default = next(ns for ns in cli("namespaces", "list", "--json").json() if ns["name"] == "default")

    refused_key = cli("--key-file", str(_key_file(tmp_path, "occ_not-a-real-key")), "--json", "namespaces", "list")
    assert refused_key.code == Exit.AUTH
    assert refused_key.error()["code"] == "UNAUTHENTICATED"

    from_env = cli("installation", "--json", env={"OCC_API_KEY": "occ_not-a-real-key"})
    assert from_env.code == Exit.AUTH

    missing_file = cli("installation", env={"OCC_DATA_DIR": str(tmp_path / "nowhere")})
    assert missing_file.code == Exit.AUTH
    assert "does not exist" in missing_file.stderr

    assert cli("namespaces", "show", "no-such-namespace").code == Exit.NOT_FOUND

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "not-an-agent", "values": {}}))
    refused = cli("configurations", "create", "-n", default["id"], "-f", str(bad), "--json")
    assert refused.code == Exit.API_ERROR
    error = refused.error()
    assert error["code"] == "INVALID_REQUEST"
    assert error["details"][0]["path"] == "/kind"
    plain = cli("configurations", "create", "-n", "default", "-f", str(bad))
    assert plain.code == Exit.API_ERROR
    assert "error: INVALID_REQUEST:" in plain.stderr
    assert "/kind" in plain.stderr

    empty_secret = cli("secrets", "create", "empty", "-n", "default", stdin="")
    assert empty_secret.code == Exit.USAGE
    assert "empty" in empty_secret.stderr

    assert cli("agents", "deploy").code == Exit.USAGE  # no Agent, no --namespace
    assert cli("configurations", "create", "-n", "default", "-f", str(tmp_path / "absent.json")).code == Exit.USAGE

    unreachable = cli("--url", "http://127.0.0.1:9", "installation", "--json")
    assert unreachable.code == Exit.UNAVAILABLE
    assert unreachable.error()["code"] == "UNREACHABLE"


def _key_file(folder: Path, key: str) -> Path:
    path = folder / "other-key.json"
    path.write_text(json.dumps({"data": {"key": key}}))
    return path
