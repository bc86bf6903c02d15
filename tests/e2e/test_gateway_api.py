"""Issue 3 end to end: a newcomer's Agent deployed through the JSON API onto a real OpenClaw gateway.

OCC runs as ``make run`` runs it (web, Celery worker and beat as separate processes, the
filesystem broker, the ``local`` compute driver; SQLite, or PostgreSQL when the suite runs
there) and the model is a loopback fake OpenAI-compatible server. With the bootstrap key
only: wait for ``default`` to be ready, create the model-key Secret, a Configuration and an
Agent, grant the Agent's principal the Secret, deploy, talk to the gateway, replace the
revision, stop, delete — and find nothing left: no process, no file, no runtime credential,
and no secret value in any file.

Each gateway takes ~1.2 GB and 20 to 40 s to start; this test runs one at a time. Every process
it started is stopped by PID (or its own process group) in ``finally``.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from django.conf import settings as django_settings

from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.drivers.compute.files import GATEWAY_TITLES, GatewayRecord
from occ.drivers.secrets import get_secret_driver
from occ.models import EncryptedSecretValue, Secret
from occ.runtime import Runtime
from tests.conftest import service_missing
from tests.e2e.stack import OccStack, attached, stack_database, wait_until
from tests.fakes.fake_openai import REPLY, FakeOpenAI
from tests.occ.drivers.compute.local_support import files_containing, port_range

pytestmark = [pytest.mark.gateway, pytest.mark.slow]

MODEL_KEY = "sk-e2e-model-key-never-on-disk-3b9d"
SECOND_REPLY = "SECOND-REVISION-REPLY-E2E"
# Generous: each wait returns once its condition holds. A gateway takes 20-40 s of two idle
# cores to become ready and several times that on a loaded machine (load average about 10).
NAMESPACE_READY_SECONDS = 180
DEPLOYMENT_SECONDS = 300
STOP_SECONDS = 120
DELETE_SECONDS = 240
GATEWAY_STOP_GRACE_SECONDS = 5.0


def fake_model_configuration(base_url: str) -> dict[str, Any]:
    """The Configuration of the no-internet path in README: the fake model is the primary."""
    return {
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "fake/echo-model"}}},
        "models": {"mode": "merge", "providers": {"fake": {
            "baseUrl": base_url, "api": "openai-completions",
            "models": [{"id": "echo-model", "name": "Echo"}],
        }}},
    }


def chat(url: str, password: str, text: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", timeout=180, headers={"Authorization": f"Bearer {password}"},
                      json={"model": "openclaw", "messages": [{"role": "user", "content": text}]})


def reply_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text[:500]
    return response.json()["choices"][0]["message"]["content"]


@pytest.fixture
def runtime() -> Runtime:
    installed = Runtime(Path(django_settings.OCC_RUNTIME_DIR))
    if not installed.is_installed():
        service_missing("OpenClaw runtime not installed: run make runtime")
    return installed


class Run:
    """The test's view of one stack: API calls, polling, and what the driver's files say."""

    def __init__(self, stack: OccStack, api: httpx.Client, gateways: list[supervisor.ProcessIdentity]) -> None:
        self.stack = stack
        self.api = api
        self.gateways = gateways  # every gateway process seen, for the test's cleanup

    def call(self, method: str, path: str, body: Any = None, *, expect: int) -> Any:
        response = self.api.request(method, path, json=body) if body is not None else self.api.request(method, path)
        assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text[:800]}"
        return response.json()["data"] if response.content else None

    def deployment(self, agent_path: str, revision_id: str) -> dict[str, Any]:
        def finished() -> dict[str, Any] | None:
            status = self.call("GET", f"{agent_path}/deployments/{revision_id}", expect=200)
            assert status["status"] != "failed", f"deployment failed: {status}\n{self.stack.tails()}"
            return status if status["status"] == "succeeded" else None

        return wait_until(finished, timeout=DEPLOYMENT_SECONDS, interval=1.0, diagnose=self.stack.tails,
                          what=f"deployment {revision_id} to succeed")

    def record(self, agent_id: str) -> GatewayRecord:
        record = GatewayRecord.read(self.stack.data_dir / "agents" / agent_id / "gateway.json")
        assert record is not None, "the local driver keeps a gateway record per Agent"
        if record.process is not None and record.process not in self.gateways:
            self.gateways.append(record.process)
        return record

    def gateway_info(self, agent_id: str) -> dict[str, Any]:
        """What a local operator runs: ``manage.py occ_gateway info <agent> --json`` (no password)."""
        info = json.loads(self.stack.manage("occ_gateway", "info", agent_id, "--json"))
        assert "password" not in info
        return info


def stop_gateways(data_dir: Path, seen: list[supervisor.ProcessIdentity]) -> None:
    """Cleanup: every gateway the test saw or the driver recorded, by verified PID (a PID that
    is no longer that gateway is not signalled)."""
    recorded = [GatewayRecord.read(path) for path in (data_dir / "agents").glob("*/gateway.json")]
    for process in [*seen, *(r.process for r in recorded if r is not None and r.process is not None)]:
        supervisor.stop(process, grace=GATEWAY_STOP_GRACE_SECONDS, titles=GATEWAY_TITLES)


def gateway_password(database, agent_id: str) -> str:
    """The Agent's runtime credential, read through the SecretDriver (as the driver reads it)."""
    with attached(database):
        secret = Secret.objects.get(owner_agent_id=agent_id, purpose=GATEWAY_PASSWORD_PURPOSE)
        return get_secret_driver(secret.driver_id).with_value(secret.backend_name, str)


def test_a_newcomer_deploys_talks_to_replaces_stops_and_deletes_an_agent_through_the_api(
        runtime, tmp_path, settings, django_db_blocker, capsys):
    secret_key = Fernet.generate_key().decode()
    settings.OCC_SECRET_KEYS = [secret_key]  # this process reads the stack's Secrets with the stack's key
    first_model, second_model = FakeOpenAI().start(), FakeOpenAI(reply=SECOND_REPLY).start()
    figures: dict[str, float] = {}
    gateways: list[supervisor.ProcessIdentity] = []
    with contextlib.ExitStack() as cleanup, django_db_blocker.unblock():
        # Undone in reverse: the stack's processes, then gateways, the database, the fake models.
        cleanup.callback(second_model.stop)
        cleanup.callback(first_model.stop)
        database = cleanup.enter_context(stack_database(tmp_path / "stack" / "data"))
        stack = OccStack(tmp_path / "stack", database=database, secret_key=secret_key, gateway_ports=port_range())
        cleanup.callback(stop_gateways, stack.data_dir, gateways)
        cleanup.callback(stack.stop)
        stack.start()
        run = Run(stack, cleanup.enter_context(stack.api()), gateways)

        # The default Namespace becomes ready (bootstrap queued it; the worker runs it).
        default = next(ns for ns in run.call("GET", "/namespaces", expect=200)["namespaces"] if ns["name"] == "default")
        ns = default["id"]
        wait_until(lambda: run.call("GET", f"/namespaces/{ns}", expect=200)["status"] == "ready",
                   timeout=NAMESPACE_READY_SECONDS, what="the default Namespace to be ready", diagnose=stack.tails)

        # A model-key Secret, a Configuration, an Agent, and the Agent's own access to the Secret.
        harness = run.call("POST", f"/namespaces/{ns}/secrets", {"name": "model-key", "value": MODEL_KEY}, expect=201)
        configuration = run.call("POST", f"/namespaces/{ns}/configurations",
                                 {"kind": "agent", "values": fake_model_configuration(first_model.base_url)},
                                 expect=201)
        agent = run.call("POST", f"/namespaces/{ns}/agents", {
            "name": "first-agent", "configurationId": configuration["id"],
            "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": harness["id"]}},
            "initialWorkspaceFiles": {"USER.md": "The user likes short answers.\n"},
        }, expect=201)
        agt = agent["id"]
        agent_path = f"/namespaces/{ns}/agents/{agt}"
        granted = run.call("POST", f"{agent_path}/secret-access", {"secretIds": [harness["id"]]}, expect=200)
        assert granted["secretIds"] == [harness["id"]]

        # Deploy: the first revision starts the gateway; the deployment succeeds once it is active.
        accepted = time.monotonic()
        first = run.call("POST", f"{agent_path}/deploy", expect=202)
        run.deployment(agent_path, first["id"])
        figures["first deploy accepted -> succeeded"] = time.monotonic() - accepted
        assert run.call("GET", agent_path, expect=200)["activeRevisionId"] == first["id"]
        serving = run.record(agt)
        assert (serving.revision_id, serving.state) == (first["id"], "running")
        info = run.gateway_info(agt)
        assert (info["activeRevisionId"], info["ready"]) == (first["id"], True)
        assert info["gateway"]["url"] == f"http://127.0.0.1:{serving.port}"
        diagnostics = run.call("POST", f"{agent_path}/deployments/{first['id']}/diagnostics", expect=200)
        assert {c["state"] for c in diagnostics["checks"]} == {"succeeded"}, diagnostics
        assert (stack.data_dir / "agents" / agt / "workspace" / "USER.md").exists()

        password = gateway_password(database, agt)
        assert reply_of(chat(info["gateway"]["url"], password, "hello")) == REPLY
        assert chat(info["gateway"]["url"], "not-the-password", "hello").status_code == 401
        assert any(r["path"].endswith("/chat/completions") and r["stream"] and r["authorized"]
                   for r in first_model.requests), "the gateway streams from the fake model, with a key"

        # A changed Configuration and a second revision replace the first.
        run.call("PATCH", f"/namespaces/{ns}/configurations/{configuration['id']}",
                 {"values": fake_model_configuration(second_model.base_url)}, expect=200)
        accepted = time.monotonic()
        second = run.call("POST", f"{agent_path}/deploy", expect=202)
        assert second["id"] != first["id"]
        run.deployment(agent_path, second["id"])
        figures["replacement accepted -> succeeded"] = time.monotonic() - accepted
        assert run.call("GET", agent_path, expect=200)["activeRevisionId"] == second["id"]
        replaced = run.record(agt)
        assert (replaced.revision_id, replaced.state) == (second["id"], "running")
        assert replaced.process.pid != serving.process.pid
        assert not supervisor.is_same_process(serving.process, titles=GATEWAY_TITLES), "the first gateway is gone"
        assert not (stack.data_dir / "agents" / agt / "revisions" / first["id"]).exists(), "first revision retired"
        assert (stack.data_dir / "agents" / agt / "revisions" / second["id"] / "openclaw.json").exists()
        url = run.gateway_info(agt)["gateway"]["url"]
        assert reply_of(chat(url, password, "hello again")) == SECOND_REPLY
        assert run.call("GET", f"{agent_path}/deployments/{first['id']}", expect=200)["status"] == "succeeded"

        leaks = files_containing(stack.data_dir, [MODEL_KEY, password]) + files_containing(stack.log_dir,
                                                                                           [MODEL_KEY, password])
        assert leaks == [], "a secret value reached a file"

        # Stop: the worker stops the gateway and clears the active revision.
        stopped = run.call("POST", f"{agent_path}/stop", expect=202)
        assert stopped["desiredRuntimeState"] == "stopped"
        wait_until(lambda: "activeRevisionId" not in run.call("GET", agent_path, expect=200), timeout=STOP_SECONDS,
                   what="the stop to finish", diagnose=stack.tails)
        assert run.record(agt).state == "stopped"
        assert not supervisor.is_same_process(replaced.process, titles=GATEWAY_TITLES), "the gateway is gone"
        assert not supervisor.port_is_open(replaced.port)
        assert run.gateway_info(agt)["gateway"] is None

        # Delete: the Agent, its files and its runtime credential go; the harness Secret stays.
        assert run.call("DELETE", agent_path, expect=202)["status"] == "deleting"
        wait_until(lambda: run.api.get(agent_path).status_code == 404, timeout=DELETE_SECONDS,
                   what="the Agent to be deleted", diagnose=stack.tails)
        assert not (stack.data_dir / "agents" / agt).exists(), "the Agent's files are gone"
        assert [p.pid for p in run.gateways if supervisor.is_same_process(p, titles=GATEWAY_TITLES)] == []
        assert run.call("GET", f"/namespaces/{ns}/secrets/{harness['id']}", expect=200)["id"] == harness["id"]
        with attached(database):
            assert list(Secret.objects.filter(namespace_id=ns).values_list("id", flat=True)) == [harness["id"]]
            harness_backend = Secret.objects.get(id=harness["id"]).backend_name
            assert list(EncryptedSecretValue.objects.values_list("backend_name", flat=True)) == [harness_backend]

        leaks = files_containing(stack.data_dir, [MODEL_KEY, password]) + files_containing(stack.log_dir,
                                                                                           [MODEL_KEY, password])
        assert leaks == [], "a secret value reached a file"

    assert stack.outlived() == [], "a process of the stack outlived the test"
    assert [p.pid for p in gateways if supervisor.is_same_process(p, titles=GATEWAY_TITLES)] == []
    with capsys.disabled():
        print("\n[e2e] " + "; ".join(f"{name} {seconds:.1f} s" for name, seconds in figures.items()))
