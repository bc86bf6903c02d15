"""Issue 14 end to end: an Agent with plugin selections deployed onto a real OpenClaw gateway.

OCC runs as ``make run`` runs it (web, worker, beat; the ``local`` compute driver) with the
``openclaw`` PluginDriver. The Agent selects a bundled plugin with tool overrides, one npm
plugin that installs (``@openclaw/synology-chat`` at its exact version, from the npm
registry) and one that the runtime genuinely refuses (``left-pad@1.3.0``: a real package that
is no OpenClaw plugin, added to this test's copy of the catalog). The deployment ends
``succeeded`` with exactly one ``PLUGIN_INSTALL_FAILED`` warning. The running gateway itself is
then asked (``openclaw gateway call`` over its WebSocket, with its password): its plugin
inventory has the installed and the bundled plugin enabled and active and the refused one not
loaded, its tool catalog carries the bundled plugin's tools, and the tool policy it runs with
(``config.get``'s runtime config) grants and denies exactly what the selections say, the
operator's deny kept. A second revision reuses the installed copy and, the refusal remembered,
warns again without a second attempt at the refused spec.

Heavy: a gateway (~1.2 GB) and two npm installs (30-130 s each on a loaded machine). Every
process it started is stopped by PID in ``finally``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.plugins.catalog import CATALOG_FILE
from occ.runtime import Runtime
from tests.e2e.stack import OccStack, stack_database, wait_until
from tests.e2e.test_gateway_api import (
    NAMESPACE_READY_SECONDS,
    Run,
    fake_model_configuration,
    gateway_password,
    runtime,
    stop_gateways,
)
from tests.fakes.fake_openai import FakeOpenAI
from tests.occ.drivers.compute.local_support import port_range

pytestmark = [pytest.mark.gateway, pytest.mark.slow]
__all__ = ["runtime"]  # the fixture, shared with the gateway API test

MODEL_KEY = "sk-e2e-plugins-model-key-5c1e"
INSTALLS = "occ-plugin:synology-chat"
REFUSED = "occ-plugin:left-pad"
BUNDLED = "occ-plugin:workboard"
# A real npm package at an exact version that is not an OpenClaw plugin: the runtime refuses
# it ("package.json missing openclaw.extensions") with its normal non-zero exit. Not official,
# so the non-interactive install needs --force.
LEFT_PAD = {"id": "left-pad", "name": "Left pad", "description": "Not an OpenClaw plugin.", "categories": [],
            "tools": [], "package": "left-pad", "version": "1.3.0", "force": True,
            "integrity": "sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQGinBN9yTQT3bFlCBy/aVx2HrNcqQGsdot8ghrjyrvMC"
                         "oEA=="}
SELECTIONS = {
    INSTALLS: {"enabled": True},
    REFUSED: {"enabled": True},
    BUNDLED: {"enabled": True, "toolDefaults": {"approval": "none"},
              "tools": {"workboard_list": {"enabled": True}, "workboard_move": {"enabled": False}}},
}
# Two npm installs and a gateway on a loaded two-core machine.
DEPLOYMENT_SECONDS = 900


def plugin_catalog(tmp_path: Path) -> Path:
    document = json.loads(CATALOG_FILE.read_text())
    document["npm"].append(LEFT_PAD)
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(document))
    return path


def ask_gateway(runtime: Runtime, scratch: Path, port: int, password: str, method: str,
                params: dict | None = None) -> dict:
    """One RPC to the running gateway on 127.0.0.1:``port`` (``openclaw gateway call``, from a
    scratch state directory of its own: the Agent's is the gateway's)."""
    node, entry = runtime.require()
    scratch.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([str(node), str(entry), "gateway", "call", method, "--url", f"ws://127.0.0.1:{port}",
                             "--password", password, "--json", "--params", json.dumps(params or {})],
                            capture_output=True, text=True, timeout=180, cwd=scratch, stdin=subprocess.DEVNULL,
                            env={"PATH": runtime.bin_path(), "HOME": str(scratch), "LANG": "C.UTF-8",
                                 "OPENCLAW_STATE_DIR": str(scratch / "state"), "OPENCLAW_HIDE_BANNER": "1",
                                 "NO_COLOR": "1"})
    assert result.returncode == 0, f"gateway call {method} failed: {result.stdout[-1500:]}{result.stderr[-1500:]}"
    return json.loads(result.stdout)


def test_plugins_install_warn_and_reach_the_effective_config_of_a_real_gateway(runtime, tmp_path, settings,
                                                                                django_db_blocker):
    secret_key = Fernet.generate_key().decode()
    settings.OCC_SECRET_KEYS = [secret_key]
    model = FakeOpenAI().start()
    gateways: list[supervisor.ProcessIdentity] = []
    catalog = plugin_catalog(tmp_path)
    with contextlib.ExitStack() as cleanup, django_db_blocker.unblock():
        cleanup.callback(model.stop)
        database = cleanup.enter_context(stack_database(tmp_path / "stack" / "data", suffix="plugins"))
        stack = OccStack(tmp_path / "stack", database=database, secret_key=secret_key, gateway_ports=port_range(),
                         extra_env={"OCC_OPENCLAW_PLUGIN_CATALOG": str(catalog), "OCC_PLUGIN_DRIVER": "openclaw"})
        cleanup.callback(stop_gateways, stack.data_dir, gateways)
        cleanup.callback(stack.stop)
        stack.start()
        run = Run(stack, cleanup.enter_context(stack.api()), gateways)

        default = next(ns for ns in run.call("GET", "/namespaces", expect=200)["namespaces"] if ns["name"] == "default")
        ns = default["id"]
        wait_until(lambda: run.call("GET", f"/namespaces/{ns}", expect=200)["status"] == "ready",
                   timeout=NAMESPACE_READY_SECONDS, what="the default Namespace to be ready", diagnose=stack.tails)
        capabilities = run.call("GET", "/installation", expect=200)["capabilities"]
        assert capabilities["pluginPolicies"]["driver"]["id"] == "openclaw"

        harness = run.call("POST", f"/namespaces/{ns}/secrets", {"name": "model-key", "value": MODEL_KEY}, expect=201)
        configuration = run.call("POST", f"/namespaces/{ns}/configurations", {
            "kind": "agent", "values": {**fake_model_configuration(model.base_url), "tools": {"deny": ["canvas"]}},
        }, expect=201)
        agent = run.call("POST", f"/namespaces/{ns}/agents", {
            "name": "plugin-agent", "configurationId": configuration["id"], "plugins": SELECTIONS,
            "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": harness["id"]}},
        }, expect=201)
        agt = agent["id"]
        agent_path = f"/namespaces/{ns}/agents/{agt}"
        assert agent["plugins"] == SELECTIONS
        run.call("POST", f"{agent_path}/secret-access", {"secretIds": [harness["id"]]}, expect=200)

        first = run.call("POST", f"{agent_path}/deploy", expect=202)
        assert first["plugins"]["driver"] == {"id": "openclaw", "implementation": "occ.openclaw-curated/1"}
        assert first["plugins"]["plugins"] == SELECTIONS
        status = wait_until(lambda: _finished(run, agent_path, first["id"]), timeout=DEPLOYMENT_SECONDS,
                            interval=2.0, diagnose=stack.tails, what="the plugin deployment to finish")
        assert status["status"] == "succeeded", status
        assert status["warnings"] == [{"pluginId": REFUSED, "code": "PLUGIN_INSTALL_FAILED"}]
        assert run.record(agt).revision_id == first["id"]
        assert run.gateway_info(agt)["ready"] is True

        # The effective config: the refused plugin disabled, the installed one and the bundled one
        # enabled, grants in alsoAllow (no allow list), the disabled tool and the operator's deny kept.
        agent_dir = stack.data_dir / "agents" / agt
        config_path = agent_dir / "revisions" / first["id"] / "openclaw.json"
        config = json.loads(config_path.read_text())
        entries = config["plugins"]["entries"]
        assert entries["left-pad"]["enabled"] is False
        assert entries["synology-chat"]["enabled"] is True
        assert entries["workboard"]["enabled"] is True
        assert config["tools"]["alsoAllow"] == ["workboard_list"]
        assert config["tools"]["deny"] == ["canvas", "workboard_move"]
        # The running gateway, asked: what it loaded and the tool policy it enforces.
        port, password = run.record(agt).port, gateway_password(database, agt)
        scratch = tmp_path / "gateway-call"
        inventory = {p["id"]: p for p in ask_gateway(runtime, scratch, port, password, "plugins.list")["plugins"]}
        assert inventory["synology-chat"]["enabled"] is True
        assert inventory["synology-chat"]["runtime"]["state"] == "active"
        assert inventory["synology-chat"]["version"] == "2026.9.4"
        assert inventory["workboard"]["enabled"] is True
        assert inventory["workboard"]["runtime"]["state"] == "active"
        assert "left-pad" not in inventory or inventory["left-pad"]["runtime"]["state"] != "active"
        running = ask_gateway(runtime, scratch, port, password, "config.get")
        assert running["appliedConfigHash"] == running["configRevisionHash"], "the gateway runs the revision's config"
        policy = running["runtimeConfig"]["tools"]
        assert policy["alsoAllow"] == ["workboard_list"]
        assert "allow" not in policy
        assert policy["deny"] == ["canvas", "workboard_move"]
        assert running["runtimeConfig"]["plugins"]["entries"]["left-pad"]["enabled"] is False
        groups = ask_gateway(runtime, scratch, port, password, "tools.catalog")["groups"]
        catalog_tools = {t["id"]: t for group in groups for t in group["tools"]}
        assert catalog_tools["workboard_list"]["pluginId"] == "workboard"
        assert catalog_tools["workboard_move"]["pluginId"] == "workboard"  # in the catalog, denied by the policy
        spec = json.loads((config_path.parent / "plugins.json").read_text())
        assert spec["natives"][INSTALLS]["npm"]["version"] == "2026.9.4"
        assert oct(config_path.parent.joinpath("plugins.json").stat().st_mode & 0o777) == "0o600"
        # The requested map is unchanged by the warning.
        assert run.call("GET", agent_path, expect=200)["plugins"] == SELECTIONS

        # A second revision with the same spec reuses the installed copy (no second install).
        second = run.call("POST", f"{agent_path}/deploy", expect=202)
        status = wait_until(lambda: _finished(run, agent_path, second["id"]), timeout=DEPLOYMENT_SECONDS,
                            interval=2.0, diagnose=stack.tails, what="the second deployment to finish")
        assert status["status"] == "succeeded", status
        assert status["warnings"] == [{"pluginId": REFUSED, "code": "PLUGIN_INSTALL_FAILED"}]
        log = (agent_dir / "logs" / "plugins.log").read_text()
        assert log.count("plugins install npm:@openclaw/synology-chat@2026.9.4") == 1
        assert log.count("plugins install npm:left-pad@1.3.0") == 1, "a refusal is remembered by exact spec"
        assert "npm:left-pad@1.3.0: refused by the runtime before" in log
        assert "plugins inspect" not in log  # the install record is read from the runtime's state database
        assert run.record(agt).revision_id == second["id"]


def _finished(run: Run, agent_path: str, revision_id: str) -> dict | None:
    status = run.call("GET", f"{agent_path}/deployments/{revision_id}", expect=200)
    return status if status["status"] in ("succeeded", "failed") else None
