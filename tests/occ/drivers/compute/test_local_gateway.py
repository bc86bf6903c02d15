"""The local ComputeDriver against the real OpenClaw runtime (``make runtime``).

Run one at a time: each gateway takes ~1.2 GB and ~20 s of two cores to become ready. Every
process a test starts is stopped by PID in ``finally``.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.configurations import ConfigurationCreate, ConfigurationUpdate
from occ.commands.secrets import SecretCreate
from occ.drivers.compute import forget_compute_drivers, gateway_rpc
from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE, ComputeError, SecretReference
from occ.drivers.compute.files import GATEWAY_TITLES, AgentPaths, GatewayRecord
from occ.drivers.compute.local import PASSWORD_ENV, LocalComputeDriver, child_environment
from occ.drivers.compute.local import render_config as render
from occ.drivers.secrets import get_secret_driver
from occ.ids import IdPrefix, new_id
from occ.models import Secret
from occ.runtime import Runtime
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.configurations import configuration_create, configuration_update
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from provisioning.jobs.context import revision_context, revision_ref
from provisioning.jobs.credentials import ensure_credentials
from tests.conftest import service_missing
from tests.fakes.fake_openai import REPLY, FakeOpenAI
from tests.occ.drivers.compute.local_support import files_containing, port_range, stop_every_gateway

pytestmark = [pytest.mark.gateway, pytest.mark.slow]

MODEL_KEY = "sk-harness-key-for-the-fake-model-5d1e"
SECOND_REPLY = "SECOND-REVISION-REPLY-7"
READY_WITHIN_SECONDS = 240.0
VALIDATE_TIMEOUT_SECONDS = 180


@pytest.fixture
def runtime() -> Runtime:
    installed = Runtime(Path(settings.OCC_RUNTIME_DIR))
    if not installed.is_installed():
        service_missing("OpenClaw runtime not installed: run make runtime")
    return installed


def fake_document(base_url: str) -> dict:
    """A Configuration whose primary model is the loopback fake (as compute-and-runtime.md B6)."""
    return {
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "fake/echo-model", "fallbacks": []},
                                "models": {"fake/echo-model": {"alias": "Echo"}}}},
        "models": {"mode": "merge", "providers": {"fake": {
            "baseUrl": base_url, "apiKey": "replaced-by-the-driver", "api": "openai-completions",
            "models": [{"id": "echo-model", "name": "Echo", "reasoning": False, "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 32000, "maxTokens": 1024}],
        }}},
        "tools": {"profile": "coding", "deny": ["browser", "canvas"]},
    }


def validate(runtime: Runtime, config: dict, folder: Path) -> dict:
    """``openclaw config validate --json`` on ``config``, with the environment a gateway gets."""
    paths = AgentPaths(folder)
    paths.ensure()
    config_path = paths.config(new_id(IdPrefix.REVISION))
    config_path.parent.mkdir(parents=True)
    config_path.write_text(json.dumps(config))
    node, entry = runtime.require()
    env = child_environment(runtime=runtime, paths=paths, config_path=config_path, port=config["gateway"]["port"],
                            secret_values={PASSWORD_ENV: "validate-password", "OCC_MODEL_API_KEY": "validate-key"})
    result = subprocess.run([str(node), str(entry), "config", "validate", "--json"], cwd=paths.root, env=env,
                            capture_output=True, text=True, timeout=VALIDATE_TIMEOUT_SECONDS, check=False)
    start = result.stdout.find("{")
    assert start >= 0, f"no JSON from config validate (exit {result.returncode}): {result.stderr[-2000:]}"
    return {"exit": result.returncode, **json.loads(result.stdout[start:])}


@pytest.mark.parametrize("document", [
    pytest.param(fake_document("http://127.0.0.1:9/v1"), id="custom-provider"),
    pytest.param({"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}},
                  "gateway": {"trustedProxies": ["10.0.0.0/8"]}}, id="builtin-provider"),
])
def test_the_runtime_accepts_the_rendered_config(runtime, tmp_path, document):
    folder = tmp_path / "agents" / new_id(IdPrefix.AGENT)
    config = render(document, port=19000, paths=AgentPaths(folder), deliver_model_key=True)

    verdict = validate(runtime, config, folder)

    assert verdict["valid"] is True, verdict
    assert verdict["exit"] == 0


def test_the_validation_can_fail(runtime, tmp_path):
    """The check above is real: a key the runtime does not know is refused."""
    folder = tmp_path / "agents" / new_id(IdPrefix.AGENT)
    config = render({"gateway": {"notARealKey": True}}, port=19000, paths=AgentPaths(folder), deliver_model_key=False)

    verdict = validate(runtime, config, folder)

    assert verdict["valid"] is False
    assert verdict["exit"] != 0
    assert any("notARealKey" in issue["message"] for issue in verdict["issues"])


# --- the driver, end to end --------------------------------------------------------------------------


def chat(port: int, password: str, text: str) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=180,
                      headers={"Authorization": f"Bearer {password}"},
                      json={"model": "openclaw", "messages": [{"role": "user", "content": text}]})


def reply_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text[:500]
    return response.json()["choices"][0]["message"]["content"]


def prepare_until_ready(driver, revision, ctx) -> float:
    started = time.monotonic()
    while time.monotonic() - started < READY_WITHIN_SECONDS:
        readiness = driver.prepare_revision(revision, ctx)
        if readiness.ready:
            return time.monotonic() - started
        assert readiness.pending_reason == "REVISION_INCOMPLETE"
        time.sleep(1.0)
    raise AssertionError(f"the gateway was not ready within {READY_WITHIN_SECONDS} s")


def record_of(driver, agent_id) -> GatewayRecord:
    record = GatewayRecord.read(driver.agent_paths(agent_id).record)
    assert record is not None
    return record


def test_deploy_chat_replace_stop_and_delete_on_a_real_gateway(runtime, tmp_path, settings, admin_actor,
                                                                ready_namespace, capsys):
    settings.OCC_COMPUTE_DRIVER = "local"
    forget_compute_drivers()
    driver = LocalComputeDriver(data_dir=tmp_path / "data", runtime=runtime, port_range=port_range(),
                                ready_timeout=READY_WITHIN_SECONDS, stop_grace=15)
    first_model, second_model = FakeOpenAI().start(), FakeOpenAI(reply=SECOND_REPLY).start()
    ns = ready_namespace.id
    try:
        harness = secret_create(actor=admin_actor, namespace_id=ns,
                                command=SecretCreate(name="fake-model-key", value=MODEL_KEY))
        configuration = configuration_create(actor=admin_actor, namespace_id=ns,
                                             command=ConfigurationCreate(
                                                 kind="agent", values=fake_document(first_model.base_url)))
        agent = agent_create(actor=admin_actor, namespace_id=ns,
                             command=AgentCreate(
                                 name="gateway-e2e", configuration_id=configuration.id,
                                 harness_auth={"method": "api_key",
                                               "source": {"kind": "secret", "namespaceId": ns, "id": harness.id}},
                                 initial_workspace_files={"USER.md": "The user likes short answers.\n"}))
        agent_secret_access_grant(actor=admin_actor, namespace_id=ns, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[harness.id]))
        # First revision: the worker keeps the gateway password and hands it over by reference;
        # prepare starts the gateway and is pending until /readyz answers 200.
        first = agent_deploy(actor=admin_actor, namespace_id=ns, agent_id=agent.id)
        agent_ref = ensure_credentials(agent, driver)
        driver.provision_runtime_credentials(agent_ref)
        first_ref, first_ctx = revision_ref(first, agent), revision_context(first)
        assert driver.prepare_revision(first_ref, first_ctx).ready is False
        waited = prepare_until_ready(driver, first_ref, first_ctx)
        assert driver.activate_revision(first_ref, first_ctx).ready is True
        serving = record_of(driver, agent.id)
        assert serving.revision_id == first.id
        password_secret = Secret.objects.get(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE)
        password = get_secret_driver(password_secret.driver_id).with_value(password_secret.backend_name, str)

        assert reply_of(chat(serving.port, password, "hello")) == REPLY
        assert chat(serving.port, "not-the-password", "hello").status_code == 401
        assert any(r["path"].endswith("/chat/completions") and r["stream"] and r["authorized"]
                   for r in first_model.requests), "the gateway must stream from the fake model with a key"
        assert (driver.agent_paths(agent.id).workspace / "USER.md").exists()

        # OCC as an operator of the real gateway's RPC: the chat above is a session; a method
        # that needs a scope the socket was not given is refused by the gateway itself.
        password_ref = SecretReference(secret_id=password_secret.id, driver_id=password_secret.driver_id,
                                       backend_name=password_secret.backend_name)
        listed = driver.operator_call(first_ref, gateway_password=password_ref, method="sessions.list", params={},
                                      scopes=[gateway_rpc.READ], timeout=30)
        assert isinstance(listed, dict)
        assert listed["count"] >= 1, listed
        with pytest.raises(ComputeError) as refused:
            driver.operator_call(first_ref, gateway_password=password_ref, method="exec.approval.list", params={},
                                 scopes=[gateway_rpc.READ], timeout=30)
        assert refused.value.code == gateway_rpc.SCOPE_MISSING
        approvals = driver.operator_call(first_ref, gateway_password=password_ref, method="exec.approval.list",
                                         params={}, scopes=[gateway_rpc.APPROVALS], timeout=30)
        assert approvals == [], "nothing asked for an approval"

        # Second revision (the fake model behind it answers differently) replaces the first.
        configuration_update(actor=admin_actor, namespace_id=ns, configuration_id=configuration.id,
                             command=ConfigurationUpdate(values=fake_document(second_model.base_url)))
        second = agent_deploy(actor=admin_actor, namespace_id=ns, agent_id=agent.id)
        second_ref, second_ctx = revision_ref(second, agent), revision_context(second)
        assert driver.prepare_revision(second_ref, second_ctx).ready is True, "a replacement only stages"
        assert record_of(driver, agent.id).process == serving.process
        activated_at = time.monotonic()
        assert driver.activate_revision(second_ref, second_ctx).ready is True
        activation = time.monotonic() - activated_at
        replaced = record_of(driver, agent.id)
        assert replaced.revision_id == second.id
        assert replaced.process.pid != serving.process.pid
        assert not supervisor.is_same_process(serving.process, titles=GATEWAY_TITLES)
        assert reply_of(chat(replaced.port, password, "hello again")) == SECOND_REPLY
        driver.retire_revision(first_ref)
        assert not driver.agent_paths(agent.id).revision_dir(first.id).exists()
        assert record_of(driver, agent.id).alive()

        leaks = files_containing(driver.data_dir, [MODEL_KEY, password])
        assert leaks == [], "a secret value reached a file"
        assert driver.agent_paths(agent.id).runtime_log.exists(), "the runtime's own log lives in the Agent folder"

        # Stop, then delete: processes, port and files gone.
        driver.stop_revision(second_ref)
        assert not record_of(driver, agent.id).alive()
        assert not supervisor.port_is_open(replaced.port)
        driver.delete_runtime_credentials(agent_ref)
        assert not driver.agent_paths(agent.id).root.exists()
        with capsys.disabled():
            print(f"\n[gateway e2e] first start to ready {waited:.1f} s; activation of the replacement "
                  f"{activation:.1f} s")
    finally:
        stop_every_gateway(driver)
        first_model.stop()
        second_model.stop()
        forget_compute_drivers()
