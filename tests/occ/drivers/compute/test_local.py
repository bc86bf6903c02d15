"""The local ComputeDriver without the real runtime: rendering, the child's environment, PID
verification, and the prepare/activate/retire/stop/maintain semantics against a stub gateway
(a small Python HTTP server started exactly as the driver starts ``openclaw gateway``).

No database: the driver gets everything as arguments, and Secret values come from a
SecretDriver in memory."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from occ.documents import PluginWarning, RevisionSpec
from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.base import (
    GATEWAY_PASSWORD_PURPOSE,
    AgentRef,
    ComputeError,
    NamespaceRef,
    RestartDue,
    RevisionRef,
)
from occ.drivers.compute.files import GATEWAY_TITLES, AgentPaths, GatewayRecord, remove_folder
from occ.drivers.compute.local import PASSWORD_ENV, LocalComputeDriver, child_environment, render_config
from occ.drivers.secrets.base import SECRET_DRIVERS
from occ.ids import IdPrefix, new_id
from occ.openclaw.document import CUSTOM_PROVIDER_KEY_ENV, model_key_env
from occ.runtime import Runtime
from tests.occ.drivers.compute.local_support import (
    MODEL_KEY,
    TOOL_TOKEN,
    MemorySecretDriver,
    StubRuntime,
    context,
    files_containing,
    new_agent,
    port_range,
    revision_ref,
    sha256,
    stop_every_gateway,
    stored_secret,
    value_of,
)

# Bounds for waiting on processes (a stub gateway ready, a killed process gone): far beyond
# what an idle machine needs, so a loaded one still finishes; the outcome is what is asserted.
READY_SECONDS = 120.0
WAIT_SECONDS = 60.0
OPENAI_DOCUMENT = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}
CUSTOM_DOCUMENT = {
    "agents": {"defaults": {"model": {"primary": "fake/echo-model"}}},
    "models": {"providers": {"fake": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                                      "apiKey": "literal-in-document", "models": []}}},
}
PATHS = AgentPaths(Path("/data/agents/agt_x"))


# --- rendering ----------------------------------------------------------------------------------


@pytest.mark.parametrize("document", [
    pytest.param({}, id="empty-document"),
    pytest.param({"gateway": {"mode": "remote", "bind": "lan", "port": 1, "customBindHost": "0.0.0.0",
                              "auth": {"mode": "token", "token": "from-the-document"},
                              "http": {"endpoints": {"chatCompletions": {"enabled": False}}}}},
                 id="document-claims-every-driver-key"),
    pytest.param({"gateway": "not-an-object", "logging": ["x"], "agents": {"defaults": "nope"}},
                 id="wrong-types-replaced"),
    pytest.param({"logging": {"file": "/tmp/elsewhere.log", "level": "debug"},
                  "agents": {"defaults": {"workspace": "/etc"}}, "env": {"shellEnv": {"enabled": True}}},
                 id="paths-and-shell-env-claimed"),
])
def test_driver_owned_keys_override_the_document(document):
    config = render_config(document, port=19120, paths=PATHS, deliver_model_key=True)

    assert config["gateway"]["mode"] == "local"
    assert config["gateway"]["bind"] == "loopback"
    assert config["gateway"]["port"] == 19120
    assert "customBindHost" not in config["gateway"]
    assert config["gateway"]["auth"] == {
        "mode": "password", "password": {"source": "env", "provider": "default", "id": PASSWORD_ENV}}
    assert config["gateway"]["http"]["endpoints"]["chatCompletions"]["enabled"] is True
    assert config["logging"]["file"] == "/data/agents/agt_x/logs/openclaw.log"
    assert config["agents"]["defaults"]["workspace"] == "/data/agents/agt_x/workspace"
    assert config["env"]["shellEnv"]["enabled"] is False


def test_rendering_keeps_the_rest_of_the_document_and_never_edits_it():
    document = {"tools": {"profile": "coding"}, "logging": {"level": "debug"}, **OPENAI_DOCUMENT}
    before = json.dumps(document, sort_keys=True)

    config = render_config(document, port=19000, paths=PATHS, deliver_model_key=True)

    assert config["tools"] == {"profile": "coding"}
    assert config["logging"]["level"] == "debug"
    assert config["agents"]["defaults"]["model"] == {"primary": "openai/gpt-5"}
    assert json.dumps(document, sort_keys=True) == before


@pytest.mark.parametrize(("deliver", "expected"), [
    pytest.param(True, "${" + CUSTOM_PROVIDER_KEY_ENV + "}", id="harness-key-referenced-from-env"),
    pytest.param(False, "literal-in-document", id="no-harness-key-left-alone"),
])
def test_custom_provider_key_is_an_environment_reference(deliver, expected):
    config = render_config(CUSTOM_DOCUMENT, port=19000, paths=PATHS, deliver_model_key=deliver)

    assert config["models"]["providers"]["fake"]["apiKey"] == expected


@pytest.mark.parametrize(("document", "expected"), [
    pytest.param(OPENAI_DOCUMENT, "OPENAI_API_KEY", id="openai"),
    pytest.param({"agents": {"defaults": {"model": "anthropic/claude-x"}}}, "ANTHROPIC_API_KEY",
                 id="anthropic-model-as-string"),
    pytest.param({}, "OPENAI_API_KEY", id="no-model-runtime-default-openai"),
    pytest.param(CUSTOM_DOCUMENT, CUSTOM_PROVIDER_KEY_ENV, id="custom-provider"),
    pytest.param({"agents": {"defaults": {"model": {"primary": "google/gemini"}}}}, None, id="unknown-builtin"),
])
def test_model_key_variable(document, expected):
    assert model_key_env(document) == expected


@pytest.mark.parametrize(("method", "document", "code"), [
    pytest.param("api_key", OPENAI_DOCUMENT, None, id="api-key-openai"),
    pytest.param("api_key", CUSTOM_DOCUMENT, None, id="api-key-custom"),
    pytest.param(None, OPENAI_DOCUMENT, "HARNESS_AUTH_UNSUPPORTED", id="no-harness-auth"),
    pytest.param("codex_pat", OPENAI_DOCUMENT, "HARNESS_AUTH_UNSUPPORTED", id="codex-pat"),
    pytest.param("api_key", {"agents": {"defaults": {"model": "google/gemini"}}},
                 "HARNESS_AUTH_PROVIDER_UNSUPPORTED", id="provider-we-cannot-deliver"),
])
def test_validate_harness_auth(tmp_path, method, document, code):
    driver = LocalComputeDriver(data_dir=tmp_path, runtime=StubRuntime(tmp_path))
    if code is None:
        driver.validate_harness_auth(method=method, spec=RevisionSpec(configuration=document))
        return
    with pytest.raises(ComputeError) as raised:
        driver.validate_harness_auth(method=method, spec=RevisionSpec(configuration=document))
    assert raised.value.code == code
    assert raised.value.retryable is False


# --- the child's environment -------------------------------------------------------------------------


def test_child_environment_is_built_from_scratch():
    host = {"DATABASE_URL": "postgres://x", "OCC_SECRET_KEYS": "k", "HOME": "/root", "HTTPS_PROXY": "http://p:3128",
            "PATH": "/host/bin"}
    env = child_environment(runtime=StubRuntime(Path("/rt")), paths=PATHS, config_path=Path("/c/openclaw.json"),
                            port=19000, host_env=host,
                            secret_values={"TOOL_TOKEN": "t", PASSWORD_ENV: "pw", "HOME": "/bound-cannot-win"})

    assert "DATABASE_URL" not in env
    assert "OCC_SECRET_KEYS" not in env
    assert env["HTTPS_PROXY"] == "http://p:3128"
    assert env["HOME"] == "/data/agents/agt_x/home"
    assert env["OPENCLAW_STATE_DIR"] == "/data/agents/agt_x/state"
    assert env["OPENCLAW_CONFIG_PATH"] == "/c/openclaw.json"
    assert env["OPENCLAW_CONFIG_READONLY"] == "1"
    assert env["OPENCLAW_GATEWAY_PORT"] == "19000"
    assert env["TOOL_TOKEN"] == "t"
    assert env[PASSWORD_ENV] == "pw"
    assert env["PATH"].split(os.pathsep)[0] != "/host/bin"


# --- PID verification -----------------------------------------------------------------------------


@pytest.fixture
def other_process():
    """A process that is not a gateway: a recycled PID as far as the driver knows."""
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=WAIT_SECONDS)


@pytest.mark.parametrize("mismatch", [
    pytest.param("start-time", id="same-pid-other-start-time"),
    pytest.param("argv", id="same-pid-same-start-other-command"),
])
def test_a_recycled_pid_is_never_signalled(tmp_path, other_process, mismatch):
    actual = supervisor.ProcessIdentity(other_process.pid, supervisor.process_started(other_process.pid) or "",
                                        ("sleep", "60"))
    recorded = (supervisor.ProcessIdentity(actual.pid, "ticks:1", actual.argv) if mismatch == "start-time"
                else supervisor.ProcessIdentity(actual.pid, actual.started, ("node", "openclaw.mjs", "gateway")))
    agent_id, revision_id = new_id(IdPrefix.AGENT), new_id(IdPrefix.REVISION)
    driver = LocalComputeDriver(data_dir=tmp_path, runtime=StubRuntime(tmp_path), stop_grace=1)
    paths = driver.agent_paths(agent_id)
    paths.ensure()
    GatewayRecord(agent_id=agent_id, revision_id=revision_id, port=19000, state="running", process=recorded,
                  started_at=time.time()).write(paths.record)
    revision = revision_ref(type("A", (), {"id": agent_id, "namespace_id": new_id(IdPrefix.NAMESPACE)})(),
                            1, {}, revision_id=revision_id)

    assert supervisor.is_same_process(actual)
    assert not supervisor.is_same_process(recorded)
    driver.stop_revision(revision)
    driver.retire_revision(revision)

    time.sleep(0.3)
    assert other_process.poll() is None, "the recycled PID was signalled"
    assert GatewayRecord.read(paths.record).state == "stopped"


def test_the_recorded_process_itself_is_signalled(other_process):
    identity = supervisor.ProcessIdentity(other_process.pid, supervisor.process_started(other_process.pid) or "",
                                          ("sleep", "60"))

    assert supervisor.stop(identity, grace=5.0) is True
    assert other_process.wait(timeout=WAIT_SECONDS) == -signal.SIGTERM


def test_a_process_title_counts_as_its_command_line(other_process):
    started = supervisor.process_started(other_process.pid) or ""
    recorded = supervisor.ProcessIdentity(other_process.pid, started, ("node", "openclaw.mjs", "gateway"))

    assert not supervisor.is_same_process(recorded)
    assert supervisor.is_same_process(recorded, titles=("sleep",))


# --- driver semantics against the stub gateway ---------------------------------------------------


@pytest.fixture
def driver(tmp_path):
    local = LocalComputeDriver(data_dir=tmp_path / "data", runtime=StubRuntime(tmp_path), port_range=port_range(),
                               ready_timeout=READY_SECONDS, stop_grace=5)
    try:
        yield local
    finally:
        stop_every_gateway(local)


@pytest.fixture(autouse=True)
def memory_secrets(monkeypatch):
    monkeypatch.setitem(SECRET_DRIVERS.classes, "memory",
                        f"{MemorySecretDriver.__module__}.{MemorySecretDriver.__name__}")
    MemorySecretDriver.values.clear()
    yield MemorySecretDriver.values
    MemorySecretDriver.values.clear()


@pytest.fixture
def world():
    """An Agent with its gateway password, its model key and one bound Secret (refs only)."""
    return new_agent(), stored_secret(MODEL_KEY), stored_secret(TOOL_TOKEN)


def wait_ready(driver, revision, ctx, *, seconds=READY_SECONDS):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if driver.prepare_revision(revision, ctx).ready:
            return
        time.sleep(0.1)
    raise AssertionError("the gateway never became ready")


def password_of(agent: AgentRef) -> str:
    return value_of(agent.runtime_credentials[GATEWAY_PASSWORD_PURPOSE])


def record_of(driver, agent) -> GatewayRecord:
    record = GatewayRecord.read(driver.agent_paths(agent.id).record)
    assert record is not None
    return record


def test_first_prepare_starts_and_stays_pending_until_readyz(driver, world):
    agent, harness, tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT, files={"AGENTS.md": "# Be brief\n"})
    ctx = context(agent, harness, {"TOOL_TOKEN": tool})

    first = driver.prepare_revision(revision, ctx)

    assert (first.ready, first.pending_reason) == (False, "REVISION_INCOMPLETE")
    assert (first.namespace_id, first.agent_id, first.revision_id) == (agent.namespace_id, agent.id, revision.id)
    started = record_of(driver, agent)
    assert started.revision_id == revision.id
    assert started.state == "running"
    wait_ready(driver, revision, ctx)
    assert record_of(driver, agent).process == started.process, "a pending prepare must not start another gateway"
    paths = driver.agent_paths(agent.id)
    assert (paths.workspace / "AGENTS.md").read_text() == "# Be brief\n"
    assert driver.get_gateway_endpoint(revision) == f"ws://127.0.0.1:{started.port}"


def test_files_are_private_and_secret_values_only_reach_the_environment(driver, world):
    agent, harness, tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    wait_ready(driver, revision, context(agent, harness, {"TOOL_TOKEN": tool}))
    paths = driver.agent_paths(agent.id)
    password = password_of(agent)

    for private in (paths.config(revision.id), paths.record):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    assert stat.S_IMODE(paths.root.stat().st_mode) == 0o700
    assert files_containing(driver.data_dir, [MODEL_KEY, TOOL_TOKEN, password]) == []
    received = json.loads((paths.root / "stub-env.json").read_text())
    assert received["OPENAI_API_KEY"] == sha256(MODEL_KEY)
    assert received["TOOL_TOKEN"] == sha256(TOOL_TOKEN)
    assert received[PASSWORD_ENV] == sha256(password)
    config = json.loads(paths.config(revision.id).read_text())
    assert config["gateway"]["port"] == record_of(driver, agent).port


def test_custom_provider_key_arrives_under_its_reference(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, CUSTOM_DOCUMENT)
    wait_ready(driver, revision, context(agent, harness))
    paths = driver.agent_paths(agent.id)

    received = json.loads((paths.root / "stub-env.json").read_text())
    assert received[CUSTOM_PROVIDER_KEY_ENV] == sha256(MODEL_KEY)
    assert "OPENAI_API_KEY" not in received
    assert json.loads(paths.config(revision.id).read_text())["models"]["providers"]["fake"]["apiKey"] == (
        "${" + CUSTOM_PROVIDER_KEY_ENV + "}")


def test_replacement_stages_then_activation_restarts_on_the_new_revision(driver, world):
    agent, harness, _tool = world
    ctx = context(agent, harness)
    first = revision_ref(agent, 1, OPENAI_DOCUMENT)
    second = revision_ref(agent, 2, {**OPENAI_DOCUMENT, "tools": {"profile": "minimal"}})
    wait_ready(driver, first, ctx)
    serving = record_of(driver, agent)

    staged = driver.prepare_revision(second, ctx)

    assert staged.ready is True
    assert record_of(driver, agent).process == serving.process, "a replacement prepare must not restart"
    paths = driver.agent_paths(agent.id)
    assert json.loads(paths.config(second.id).read_text())["tools"] == {"profile": "minimal"}

    activated = driver.activate_revision(second, ctx)

    assert activated.ready is True
    replaced = record_of(driver, agent)
    assert replaced.revision_id == second.id
    assert replaced.process.pid != serving.process.pid
    assert replaced.port == serving.port, "the Agent keeps its port while it runs"
    assert not supervisor.is_same_process(serving.process)
    again = driver.activate_revision(second, ctx)
    assert again.ready is True
    assert record_of(driver, agent).process == replaced.process

    driver.retire_revision(first)

    assert not paths.revision_dir(first.id).exists()
    assert paths.config(second.id).exists()
    assert record_of(driver, agent).alive(), "retiring the predecessor never touches the serving gateway"


def test_stop_signals_only_the_gateway_serving_that_revision(driver, world):
    agent, harness, _tool = world
    ctx = context(agent, harness)
    serving = revision_ref(agent, 2, OPENAI_DOCUMENT)
    older = revision_ref(agent, 1, OPENAI_DOCUMENT)
    wait_ready(driver, serving, ctx)
    port = record_of(driver, agent).port

    driver.stop_revision(older)
    assert record_of(driver, agent).alive()

    driver.stop_revision(serving)
    driver.stop_revision(serving)  # idempotent

    record = record_of(driver, agent)
    assert record.state == "stopped"
    assert not record.alive()
    assert not supervisor.port_is_open(port)
    assert driver.get_gateway_endpoint(serving) is None
    assert driver.agent_paths(agent.id).config(serving.id).exists(), "stop keeps state and staged files"


def test_stop_after_a_third_revision_failed_to_start_leaves_no_gateway_running(driver, world):
    """The scenario of tests/provisioning/jobs/test_kubernetes_jobs.py on this driver: revision 3
    is active (published before activation) but its gateway died before ready. Unlike the
    Kubernetes driver, activation here has already stopped revision 2's gateway (no rollback);
    stop, called as the stop job calls it (the active revision, then every other), leaves no
    gateway and records the gateway stopped."""
    agent, harness, _tool = world
    ctx = context(agent, harness)
    first, second = revision_ref(agent, 1, OPENAI_DOCUMENT), revision_ref(agent, 2, OPENAI_DOCUMENT)
    third = revision_ref(agent, 3, {**OPENAI_DOCUMENT, "stubCrash": True})
    wait_ready(driver, first, ctx)
    assert driver.prepare_revision(second, ctx).ready
    assert driver.activate_revision(second, ctx).ready
    serving_second = record_of(driver, agent).process
    assert driver.prepare_revision(third, ctx).ready
    with pytest.raises(ComputeError) as failed:
        driver.activate_revision(third, ctx)
    assert failed.value.code == "GATEWAY_EXITED"
    assert not supervisor.is_same_process(serving_second)
    crashed = record_of(driver, agent)
    assert crashed.revision_id == third.id

    for revision in (third, second, first):
        driver.stop_revision(revision)

    record = record_of(driver, agent)
    assert record.state == "stopped"
    assert not record.alive()
    assert not supervisor.port_is_open(crashed.port)


def test_retire_of_the_serving_revision_stops_it(driver, world):
    """Agent deletion retires every revision: no replacement owns the gateway any more."""
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    wait_ready(driver, revision, context(agent, harness))
    process = record_of(driver, agent).process

    driver.retire_revision(revision)

    assert not supervisor.is_same_process(process)
    assert not driver.agent_paths(agent.id).revision_dir(revision.id).exists()


def test_a_start_that_dies_before_ready_costs_an_attempt_then_starts_again(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, {**OPENAI_DOCUMENT, "stubCrash": True})
    ctx = context(agent, harness)
    assert driver.prepare_revision(revision, ctx).ready is False
    crashed = record_of(driver, agent).process
    deadline = time.monotonic() + WAIT_SECONDS
    while supervisor.process_started(crashed.pid) is not None and time.monotonic() < deadline:
        time.sleep(0.1)

    with pytest.raises(ComputeError) as raised:
        driver.prepare_revision(revision, ctx)

    assert (raised.value.code, raised.value.retryable) == ("GATEWAY_EXITED", True)
    assert driver.prepare_revision(revision, ctx).ready is False
    assert record_of(driver, agent).process.pid != crashed.pid


def kill(process) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + WAIT_SECONDS
    while supervisor.process_started(process.pid) is not None and time.monotonic() < deadline:
        time.sleep(0.1)


def test_maintain_reports_a_dead_gateway_and_restart_revision_restarts_it(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    ctx = context(agent, harness)
    wait_ready(driver, revision, ctx)
    assert driver.maintain() == [], "a live gateway is not reported"
    dead = record_of(driver, agent).process
    kill(dead)

    assert driver.maintain() == [RestartDue(agent_id=agent.id, revision_id=revision.id)]
    assert not record_of(driver, agent).alive(), "maintain only reports; the worker decides"

    driver.restart_revision(revision, ctx)

    restarted = record_of(driver, agent)
    assert restarted.alive()
    assert restarted.process.pid != dead.pid
    assert (restarted.revision_id, restarted.restarts) == (revision.id, 1)
    driver.restart_revision(revision, ctx)
    assert record_of(driver, agent).process == restarted.process, "a live gateway is left alone"


def test_a_restart_never_replaces_another_revision_and_waits_for_its_backoff(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    other = revision_ref(agent, 2, OPENAI_DOCUMENT)
    ctx = context(agent, harness)
    wait_ready(driver, revision, ctx)
    dead = record_of(driver, agent)
    kill(dead.process)

    driver.restart_revision(other, ctx)
    assert record_of(driver, agent) == dead, "a dead gateway of another revision is not this one's to start"

    driver.restart_revision(revision, ctx)
    restarted = record_of(driver, agent)
    assert restarted.alive()
    kill(restarted.process)

    assert driver.maintain() == [], "the second restart waits for its backoff"
    driver.restart_revision(revision, ctx)
    assert record_of(driver, agent).process == restarted.process, "nothing restarted before the backoff"


def test_maintain_leaves_stopped_agents_alone(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    wait_ready(driver, revision, context(agent, harness))
    driver.stop_revision(revision)

    assert driver.maintain() == []

    assert not record_of(driver, agent).alive()


def test_diagnose_reports_without_changing_anything(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    other = revision_ref(agent, 2, OPENAI_DOCUMENT)
    wait_ready(driver, revision, context(agent, harness))
    record = record_of(driver, agent)

    checks = {(c.component, c.check): (c.state, c.code) for c in driver.diagnose(revision)}
    assert checks == {
        ("runtime", "installed"): ("succeeded", None), ("gateway", "process"): ("succeeded", None),
        ("gateway", "revision"): ("succeeded", None), ("gateway", "readyz"): ("succeeded", None),
        (("gateway", f"port:{record.port}")): ("succeeded", None),
    }
    assert dict((c.check, c.code) for c in driver.diagnose(other))["revision"] == "SERVING_ANOTHER_REVISION"
    assert record_of(driver, agent) == record

    driver.stop_revision(revision)
    stopped = {c.check: (c.state, c.code) for c in driver.diagnose(revision)}
    assert stopped["process"] == ("failed", "GATEWAY_NOT_RUNNING")


def test_two_agents_get_ports_a_stride_apart(driver, world):
    agent, harness, _tool = world
    other = new_agent(agent.namespace_id)
    driver.prepare_revision(revision_ref(agent, 1, OPENAI_DOCUMENT), context(agent, harness))
    driver.prepare_revision(revision_ref(other, 1, OPENAI_DOCUMENT), context(other, harness))

    ports = sorted([record_of(driver, agent).port, record_of(driver, other).port])
    assert ports[1] - ports[0] >= 120


def test_delete_runtime_credentials_stops_the_gateway_and_removes_the_agent_folder(driver, world, memory_secrets):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    wait_ready(driver, revision, context(agent, harness))
    process = record_of(driver, agent).process

    driver.delete_runtime_credentials(agent)
    driver.delete_runtime_credentials(agent)  # idempotent

    assert not supervisor.is_same_process(process)
    assert not driver.agent_paths(agent.id).root.exists()
    password = agent.runtime_credentials[GATEWAY_PASSWORD_PURPOSE]
    assert password.backend_name in memory_secrets, "the worker removes the password it keeps, not the driver"


def test_a_sweep_that_read_the_record_before_the_delete_does_not_bring_the_folder_back(driver, world, monkeypatch):
    """The sweep reads a serving gateway's record, the Agent's delete stops that gateway and
    removes its folder, then the sweep finds the gateway dead: it must not recreate the folder
    to note the exit (the CI run of stop 34 found the folder back after the Agent was gone)."""
    agent, harness, _tool = world
    wait_ready(driver, revision_ref(agent, 1, OPENAI_DOCUMENT), context(agent, harness))
    root = driver.agent_paths(agent.id).root
    real_read = GatewayRecord.read

    def read_then_deleted(path):
        record = real_read(path)
        monkeypatch.setattr(GatewayRecord, "read", real_read)
        driver.delete_runtime_credentials(agent)
        return record

    monkeypatch.setattr(GatewayRecord, "read", read_then_deleted)
    driver.maintain()

    assert not root.exists(), sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_folder_is_removed_whole_while_a_late_writer_adds_files_to_it(tmp_path):
    """The race CI found: a stopped gateway's exit watcher writes its record into the Agent's
    folder while the folder is being removed; ``rmtree`` alone left the folder behind."""
    leftovers = []
    for attempt in range(20):
        folder = tmp_path / f"agent-{attempt}"
        for n in range(200):
            (folder / "revisions" / str(n % 10)).mkdir(parents=True, exist_ok=True)
            (folder / "revisions" / str(n % 10) / f"{n}.json").write_text("{}")
        removing = threading.Event()
        done = threading.Event()

        def write_late(folder: Path = folder, removing: threading.Event = removing,
                       done: threading.Event = done) -> None:
            removing.wait()
            n = 0
            while not done.is_set():  # as the exit watcher does: by name, never creating the folder
                with contextlib.suppress(OSError):
                    (folder / f"exit-{n}.json").write_text("{}")
                n += 1

        writer = threading.Thread(target=write_late)
        writer.start()
        removing.set()
        remove_folder(folder)
        done.set()
        writer.join()
        if folder.exists():
            leftovers.append(sorted(p.name for p in folder.iterdir()))
    assert leftovers == []
    assert remove_folder(tmp_path / "never-there") is None, "a missing folder is already removed"


def test_a_lock_that_must_not_create_is_not_taken_on_a_missing_or_removed_file(tmp_path):
    lock = tmp_path / "agent" / ".lock"
    with supervisor.file_lock(lock, timeout=0.0, create=False) as taken:
        assert taken is False
    assert not lock.parent.exists(), "nothing was created"

    with supervisor.file_lock(lock, timeout=5.0) as held:
        assert held is True
        with supervisor.file_lock(lock, timeout=0.0, create=False) as taken:
            assert taken is False, "held elsewhere"
    lock.unlink()
    with supervisor.file_lock(lock, timeout=0.0, create=False) as taken:
        assert taken is False, "removed by its holder"


def test_runtime_credentials_are_the_references_the_worker_hands_over(driver, memory_secrets):
    agent = new_agent()
    without = AgentRef(id=agent.id, namespace_id=agent.namespace_id, name=agent.name)

    assert driver.runtime_credentials_status(agent) is True
    assert driver.observe_runtime_credentials(agent).owner == agent.id
    driver.provision_runtime_credentials(agent)
    assert driver.runtime_credentials_status(without) is False
    assert driver.observe_runtime_credentials(without).found is False
    with pytest.raises(ComputeError) as raised:
        driver.provision_runtime_credentials(without)
    assert (raised.value.code, raised.value.retryable) == ("RUNTIME_CREDENTIALS_MISSING", True)
    memory_secrets.clear()
    assert driver.runtime_credentials_status(agent) is False, "a reference without its value is missing"


def test_a_start_without_the_gateway_password_is_refused(driver, world):
    _agent, harness, _tool = world
    agent = new_agent(password=None)

    with pytest.raises(ComputeError) as raised:
        driver.prepare_revision(revision_ref(agent, 1, OPENAI_DOCUMENT), context(agent, harness))

    assert (raised.value.code, raised.value.retryable) == ("RUNTIME_CREDENTIALS_MISSING", True)


def test_namespace_folder_is_created_and_removed(driver):
    ref = NamespaceRef(id=new_id(IdPrefix.NAMESPACE), name="team")

    assert driver.ensure_namespace(ref).done is True
    assert driver.ensure_namespace(ref).done is True
    assert (driver.data_dir / "namespaces" / ref.id).is_dir()
    assert driver.delete_namespace(ref).done is True
    assert not (driver.data_dir / "namespaces" / ref.id).exists()
    assert driver.delete_namespace(ref).done is True


def test_a_missing_runtime_is_a_retryable_failure(tmp_path, world):
    agent, harness, _tool = world
    driver = LocalComputeDriver(data_dir=tmp_path / "data", runtime=Runtime(tmp_path / "no-runtime"),
                                port_range=port_range())

    with pytest.raises(ComputeError) as raised:
        driver.prepare_revision(revision_ref(agent, 1, OPENAI_DOCUMENT), context(agent, harness))

    assert (raised.value.code, raised.value.retryable) == ("RUNTIME_NOT_INSTALLED", True)


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_a_gateway_stopped_by_another_process_is_reaped_by_its_parent(tmp_path):
    """A worker process that spawned a gateway collects it after another process killed it."""
    identity = supervisor.spawn(["sleep", "60"], env={"PATH": os.environ["PATH"]}, cwd=tmp_path,
                                log_path=tmp_path / "gateway.log")
    try:
        os.kill(identity.pid, signal.SIGKILL)  # as another worker process would stop it
        deadline = time.monotonic() + WAIT_SECONDS
        while _state(identity.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _state(identity.pid) == "Z", "killed, not yet collected: a zombie"
        supervisor.reap_children()
        assert _state(identity.pid) is None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(identity.pid, signal.SIGKILL)
        supervisor.reap_children()


@pytest.mark.parametrize(("channels", "plugins", "expected"), [
    pytest.param({"slack": {"enabled": True}}, None, {"slack": {"enabled": True}}, id="enabled-slack-trusted"),
    pytest.param({"slack": {"botToken": {"source": "env", "id": "SLACK_BOT_TOKEN"}}}, {"entries": {}},
                 {"slack": {"enabled": True}}, id="configured-without-enabled-trusted"),
    pytest.param({"slack": {"enabled": False}}, None, None, id="disabled-slack-left-alone"),
    pytest.param({"slack": {"enabled": True}}, {"entries": {"slack": {"enabled": False, "x": 1}}},
                 {"slack": {"enabled": False, "x": 1}}, id="explicit-choice-kept"),
    pytest.param({}, None, None, id="no-channels"),
])
def test_enabled_channel_plugins_are_trusted(channels, plugins, expected):
    document = {"channels": channels, **({"plugins": plugins} if plugins is not None else {})}

    config = render_config(document, port=19000, paths=PATHS, deliver_model_key=True)

    assert config.get("plugins", {}).get("entries", {}) == (expected or {})


# --- plugins: the effective-state check runs while the gateway starts ------------------------------

PLUGIN_SNAPSHOT = {"driver": {"id": "openclaw", "implementation": "occ.openclaw-curated/1"},
                   "plugins": {"occ-plugin:workboard": {"enabled": True}}}


class WholeStubRuntime(StubRuntime):
    """``openclaw gateway`` and ``openclaw plugins …`` both stood in (stub_runtime.py)."""

    def require(self) -> tuple[Path, Path]:
        return Path(sys.executable), Path(__file__).with_name("stub_runtime.py")


@pytest.fixture
def plugin_driver(tmp_path, settings):
    settings.OCC_OPENCLAW_PLUGIN_CATALOG = ""
    local = LocalComputeDriver(data_dir=tmp_path / "data", runtime=WholeStubRuntime(tmp_path),
                               port_range=port_range(), ready_timeout=READY_SECONDS, stop_grace=5)
    try:
        yield local
    finally:
        stop_every_gateway(local)


def _plugin_revision(driver, agent, behaviour: dict):
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    revision = RevisionRef(**{**revision.__dict__, "spec": RevisionSpec.from_stored(
        {**revision.spec.document(), "plugins": PLUGIN_SNAPSHOT})})
    root = driver.agent_paths(agent.id).root
    root.mkdir(parents=True, exist_ok=True)
    (root / "stub-plugins.json").write_text(json.dumps(behaviour))
    return revision


def test_plugins_are_verified_while_the_gateway_starts(plugin_driver, world):
    agent, harness, _ = world
    revision = _plugin_revision(plugin_driver, agent, {})
    ctx = context(agent, harness)

    plugin_driver.prepare_revision(revision, ctx)

    paths = plugin_driver.agent_paths(agent.id)
    calls = (paths.root / "stub-calls.log").read_text().splitlines()
    assert calls == ["plugins list --json"], "checked once, on the config the gateway was started with"
    config = json.loads(paths.config(revision.id).read_text())
    assert config["plugins"]["entries"]["workboard"] == {"enabled": True}
    wait_ready(plugin_driver, revision, ctx)
    assert (paths.root / "stub-calls.log").read_text().splitlines() == calls  # readiness checks it no more


def test_a_gateway_whose_runtime_reads_the_plugins_otherwise_is_stopped(plugin_driver, world):
    agent, harness, _ = world
    revision = _plugin_revision(plugin_driver, agent, {"list": "disagree"})

    with pytest.raises(ComputeError) as failed:
        plugin_driver.prepare_revision(revision, context(agent, harness))

    assert failed.value.code == "PLUGIN_POLICY_UNVERIFIED"
    record = record_of(plugin_driver, agent)
    assert record.state == "failed"
    assert record.process is not None
    assert not supervisor.is_same_process(record.process, titles=GATEWAY_TITLES)  # stopped, never ready


def test_a_codex_selection_starts_the_gateway_without_it_and_warns(plugin_driver, world):
    """Codex plugins run only inside a ChatGPT-signed-in Codex harness, which these gateways are
    not: the revision starts, its readiness warns PLUGIN_AUTH_REQUIRED, nothing is installed."""
    agent, harness, _ = world
    linear = "codex-plugin:linear@openai-curated-remote"
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    revision = RevisionRef(**{**revision.__dict__, "spec": RevisionSpec.from_stored({
        **revision.spec.document(), "plugins": {"driver": {"id": "codex", "implementation": "occ/codex-plugin"},
                                                "plugins": {linear: {"enabled": True}}}})})
    ctx = context(agent, harness)

    plugin_driver.prepare_revision(revision, ctx)
    wait_ready(plugin_driver, revision, ctx)

    readiness = plugin_driver.prepare_revision(revision, ctx)
    assert readiness.ready
    assert readiness.warnings == (PluginWarning(plugin_id=linear, code="PLUGIN_AUTH_REQUIRED"),)
    paths = plugin_driver.agent_paths(agent.id)
    assert "codex" not in json.loads(paths.config(revision.id).read_text()).get("plugins", {}).get("entries", {})
    assert "plugins install" not in (paths.root / "stub-calls.log").read_text()
