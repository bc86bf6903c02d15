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
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from occ_cli.client import Exit

from occ.drivers.compute.fake import FAKE_CHAT_REPLY, FakeCompute
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


def test_configurations_list_and_the_audit_log_page_and_export(cli, tmp_path):
    document = tmp_path / "parity.json"
    document.write_text(json.dumps({"kind": "agent", "values": FAKE_MODEL_VALUES}))
    made = [cli("configurations", "create", "-n", "default", "-f", str(document), "--json").json()["id"]
            for _ in range(3)]
    named = cli("configurations", "create", "-n", "default", "-f", str(document), "--name", "cli named",
                "--json").json()
    assert named["name"] == "cli named"
    assert cli("configurations", "show", "cli named", "-n", "default", "--json").json()["id"] == named["id"]
    assert "cli named" in cli("configurations", "list", "-n", "default").stdout
    by_name = cli("agents", "create", "by-name", "-n", "default", "-c", "cli named", "--no-grant", "--json").json()
    assert by_name["configurationId"] == named["id"]
    taken = cli("configurations", "create", "-n", "default", "-f", str(document), "--name", "cli named", "--json")
    assert (taken.code, taken.error()["code"]) == (Exit.API_ERROR, "RESOURCE_CONFLICT")
    made = [*made, named["id"]][1:]
    listed = cli("configurations", "list", "-n", "default", "--json").json()
    ids = [row["id"] for row in listed]
    assert ids[:3] == made[::-1], "most recently changed first"
    assert listed[0]["model"] == "openai/gpt-5.5"
    table = cli("configurations", "list", "-n", "default", env={"COLUMNS": "80"}).stdout
    assert all(configuration in table for configuration in made), "an id is never wrapped in its middle"

    page = cli("audit", "--action", "configurations.create", "--limit", "2", "--json").json()
    assert [event["resourceId"] for event in page["events"]] == made[::-1][:2]
    older = cli("audit", "--action", "configurations.create", "--limit", "2", "--older", page["olderCursor"],
                "--json").json()
    assert older["events"][0]["resourceId"] == made[0]
    exported = cli("audit", "--action", "configurations.create", "--export", "ndjson")
    assert exported.code == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert {line["resourceId"] for line in lines} >= set(made)
    csv_text = cli("audit", "--resource", made[0], "--export", "csv").stdout
    assert csv_text.splitlines()[0].startswith("id,occurredAt,kind,outcome,action")
    assert made[0] in csv_text
    assert CANARY not in exported.stdout + csv_text


def test_update_edit_and_roll_back_an_agent_with_the_cli(cli, tmp_path):
    team = "parity-team"
    assert cli("namespaces", "create", team, "--json").json()["status"] == "ready"
    cli("secrets", "create", "model-key", "-n", team, "--json", stdin=CANARY + "\n").json()
    body = tmp_path / "configuration.json"
    body.write_text(json.dumps({"kind": "agent", "values": FAKE_MODEL_VALUES}))
    first = cli("configurations", "create", "-n", team, "-f", str(body), "--json").json()
    cli("agents", "create", "parity", "-n", team, "-c", first["id"], "--model-secret", "model-key", "--json").json()
    assert cli("agents", "deploy", "parity", "-n", team, "--json").json()["deployment"]["status"] == "succeeded"

    # update: guarded by the generation read; a stale one is a 409 and changes nothing.
    newer = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5.4"}}}}
    values = tmp_path / "values.json"
    values.write_text(json.dumps(newer))
    updated = cli("configurations", "update", first["id"], "-n", team, "-f", str(values), "--generation", "1",
                  "--json").json()
    assert (updated["generation"], updated["values"]) == (2, newer)
    stale = cli("configurations", "update", first["id"], "-n", team, "-f", str(values), "--generation", "1", "--json")
    assert stale.code == Exit.API_ERROR
    assert stale.error()["code"] in ("RESOURCE_CONFLICT", "PRECONDITION_FAILED")

    # edit: $EDITOR changes the document; a document that is not JSON is never sent.
    editor = tmp_path / "editor.py"
    editor.write_text(f"#!{sys.executable}\nimport sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text().replace('gpt-5.4', 'gpt-5.5'))\n")
    editor.chmod(0o755)
    edited = cli("configurations", "edit", first["id"], "-n", team, "--json", env={"EDITOR": str(editor)}).json()
    assert (edited["generation"], edited["values"]) == (3, FAKE_MODEL_VALUES)
    breaker = tmp_path / "breaker.py"
    breaker.write_text(f"#!{sys.executable}\nimport sys, pathlib\npathlib.Path(sys.argv[1]).write_text('{{nope')\n")
    breaker.chmod(0o755)
    broken = cli("configurations", "edit", first["id"], "-n", team, "--json", env={"EDITOR": str(breaker)})
    assert (broken.code, broken.error()["code"]) == (Exit.USAGE, "INVALID_JSON")

    # agents update to a second Configuration, deploy, diff, and roll back to revision 1.
    second = cli("configurations", "create", "-n", team, "-f", str(body), "--json").json()
    patched = cli("agents", "update", "parity", "-n", team, "-c", second["id"], "--json").json()
    assert patched["configurationId"] == second["id"]
    smoked = cli("agents", "update", "parity", "-n", team, "--smoke", "What is 2+2? => \\b4\\b",
                 "--smoke", "Say hi=>(?i)hi", "--json").json()
    assert smoked["smokeConversations"] == [{"prompt": "What is 2+2?", "expect": "\\b4\\b"},
                                            {"prompt": "Say hi", "expect": "(?i)hi"}]
    assert smoked["configurationId"] == second["id"], "the Agent's own Configuration is kept"
    assert smoked["rollbackOnFailure"] is True
    kept = cli("agents", "update", "parity", "-n", team, "--no-rollback", "--json").json()
    assert (kept["rollbackOnFailure"], len(kept["smokeConversations"])) == (False, 2)
    bad = cli("agents", "update", "parity", "-n", team, "--smoke", "hi=>((", "--json")
    assert (bad.code, bad.error()["code"]) == (Exit.API_ERROR, "INVALID_REQUEST")
    assert cli("agents", "update", "parity", "-n", team, "--smoke", "no separator", "--json").code == Exit.USAGE
    assert cli("agents", "deploy", "parity", "-n", team, "--json").json()["deployment"]["status"] == "succeeded"
    listed = cli("revisions", "list", "parity", "-n", team, "--json").json()
    assert sorted(r["revision"] for r in listed) == [1, 2]
    diff = cli("revisions", "diff", "parity", "2", "-n", team, "--json").json()
    assert diff["previousRevision"] == 1
    assert any(change["path"].startswith("/configuration") or "configuration" in change["path"]
               for change in diff["changes"]), diff
    assert "~" in cli("revisions", "diff", "parity", "2", "-n", team).stdout
    rolled = cli("revisions", "redeploy", "parity", "1", "-n", team, "--json").json()
    assert rolled["revision"]["revision"] == 3
    assert rolled["revision"]["sourceRevisionId"] == next(r["id"] for r in listed if r["revision"] == 1)
    assert rolled["deployment"]["status"] == "succeeded"

    view = cli("logs", "parity", "-n", team, "--json").json()
    assert (view["started"], type(view["lines"])) == (True, list)
    assert cli("logs", "parity", "-n", team).code == 0
    viewed = cli("audit", "--action", "runtime_logs.view", "--json").json()["events"]
    assert len(viewed) == 2
    for run in cli.runs:
        assert CANARY not in run.stdout + run.stderr


def test_presets_list_show_create_and_apply_with_the_cli(cli, tmp_path):
    listed = cli("presets", "list", "-n", "default", "--json").json()
    assert "Standard OpenClaw" in [row["name"] for row in listed]
    standard = cli("presets", "show", "Standard OpenClaw", "-n", "default", "--json").json()
    assert standard["template"]["variables"]["apiKey"] == {"type": "password", "description": "OpenAI API key"}

    template = tmp_path / "preset.json"
    template.write_text(json.dumps({
        "variables": {"name": {"type": "string"}, "key": {"type": "password"},
                      "temperature": {"type": "number", "default": 1}},
        "agent": {"name": "{{ vars.name }}", "harnessAuth": {"method": "api_key", "secret": "{{ vars.key }}"}},
        "configuration": {"values": FAKE_MODEL_VALUES}}))
    created = cli("presets", "create", "cli preset", "-n", "default", "-f", str(template), "--json").json()
    assert created["id"].startswith("pre_")
    assert "cli preset" in cli("presets", "list", "-n", "default").stdout

    secret = cli("secrets", "create", "preset-key", "-n", "default", "--json", stdin=CANARY + "\n").json()
    missing = cli("presets", "apply", "cli preset", "-n", "default", "--var", "name=from-preset", "--json")
    assert missing.code == Exit.USAGE
    assert missing.error()["code"] == "CREDENTIAL_REQUIRED"
    wrong = cli("presets", "apply", "cli preset", "-n", "default", "--var", "temperature=warm", "--json")
    assert wrong.code == Exit.USAGE
    applied = cli("presets", "apply", created["id"], "-n", "default", "--var", "name=from-preset",
                  "--secret", "key=preset-key", "--json").json()
    assert applied["provisioning"]["status"] == "succeeded"
    assert applied["deployment"]["status"] == "succeeded"
    agent = cli("agents", "status", "from-preset", "-n", "default", "--json").json()["agent"]
    assert agent["harnessAuth"]["source"]["id"] == secret["id"]
    assert all(CANARY not in " ".join(run.argv) + run.stdout + run.stderr for run in cli.runs)


def test_chat_with_a_running_agent_through_occ(cli, tmp_path):
    """``occ chat``: one turn, or a conversation read from stdin (a line a turn, one audited
    conversation); the API's stream through gunicorn, the fake gateway's reply word for word."""
    team = "chat-team"
    assert cli("namespaces", "create", team, "--json").json()["status"] == "ready"
    cli("secrets", "create", "model-key", "-n", team, "--json", stdin=CANARY + "\n").json()
    body = tmp_path / "configuration.json"
    body.write_text(json.dumps({"kind": "agent", "values": FAKE_MODEL_VALUES}))
    configuration = cli("configurations", "create", "-n", team, "-f", str(body), "--json").json()
    agent = cli("agents", "create", "talker", "-n", team, "-c", configuration["id"], "--model-secret", "model-key",
                "--json").json()

    never = cli("chat", "talker", "-n", team, "hello", "--json")
    assert (never.code, never.error()["code"]) == (Exit.API_ERROR, "AGENT_NOT_RUNNING")
    assert cli("agents", "deploy", "talker", "-n", team, "--json").json()["deployment"]["status"] == "succeeded"

    one = cli("chat", "talker", "-n", team, "hello there")
    assert (one.code, one.stdout) == (0, f"{FAKE_CHAT_REPLY} hello there\n"), one.stderr
    turn = cli("chat", agent["id"], "-n", team, "once more", "--json").json()
    assert turn["reply"] == f"{FAKE_CHAT_REPLY} once more"
    assert turn["conversationId"].startswith("cnv_")

    loop = cli("chat", "talker", "-n", team, "--json", stdin="first\nsecond\n")
    turns = [json.loads(line) for line in loop.stdout.splitlines()]
    assert loop.code == 0, loop.stderr
    assert [t["reply"] for t in turns] == [f"{FAKE_CHAT_REPLY} first", f"{FAKE_CHAT_REPLY} second"]
    assert turns[0]["conversationId"] == turns[1]["conversationId"] != turn["conversationId"]

    started = cli("audit", "--action", "conversation.start", "--resource", agent["id"], "--json").json()["events"]
    conversations = [event["details"]["conversationId"] for event in started]
    assert len(conversations) == len(set(conversations)) == 3, "each audited once: two single turns and the loop"
    assert {turn["conversationId"], turns[0]["conversationId"]} <= set(conversations)
    assert not any("first" in json.dumps(event) for event in started), "the audit never holds the text"

    cli("agents", "stop", "talker", "-n", team, "--json").json()
    stopped = cli("chat", "talker", "-n", team, "hello")
    assert stopped.code == Exit.API_ERROR
    assert "AGENT_NOT_RUNNING: The Agent is stopped. Start it" in stopped.stderr


def test_logs_follow_prints_each_new_line_until_interrupted(cli, tmp_path):
    """``occ logs --follow`` against the real web process: the lines so far, then a line the
    gateway prints while it follows, then Ctrl-C ends it cleanly; one audited view in all."""
    team = "follow-team"
    assert cli("namespaces", "create", team, "--json").json()["status"] == "ready"
    cli("secrets", "create", "model-key", "-n", team, "--json", stdin=CANARY + "\n").json()
    body = tmp_path / "configuration.json"
    body.write_text(json.dumps({"kind": "agent", "values": FAKE_MODEL_VALUES}))
    configuration = cli("configurations", "create", "-n", team, "-f", str(body), "--json").json()
    agent = cli("agents", "create", "tail", "-n", team, "-c", configuration["id"], "--model-secret", "model-key",
                "--json").json()
    assert cli("agents", "deploy", "tail", "-n", team, "--json").json()["deployment"]["status"] == "succeeded"
    world = FakeCompute(cli.stack.data_dir / "fake-compute.json")  # the world the stack's processes share
    world.print_log(agent["id"], "printed before the view")

    follower = subprocess.Popen([str(OCC), "logs", "tail", "-n", team, "--follow", "--interval", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli.env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in follower.stdout], daemon=True).start()

    def wait_for_line(wanted: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if lines.get(timeout=1) == wanted:
                    return
            except queue.Empty:
                assert follower.poll() is None, follower.stderr.read()
        raise AssertionError(f"{wanted!r} never came")

    try:
        wait_for_line("printed before the view")
        world.print_log(agent["id"], "printed while following")
        wait_for_line("printed while following")
    finally:
        follower.send_signal(signal.SIGINT)
        code = follower.wait(timeout=30)
    assert code == 0, follower.stderr.read()
    viewed = cli("audit", "--action", "runtime_logs.view", "--resource", agent["id"], "--json").json()["events"]
    assert len(viewed) == 1, "following continues the one audited view"
