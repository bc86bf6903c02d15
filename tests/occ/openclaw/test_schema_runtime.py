"""The committed schema against the pinned runtime itself (``make runtime``): the export is
what ``openclaw config schema`` prints, ``openclaw config validate`` agrees with the in-process
check, and a real gateway refuses to start on a refused document and starts on an accepted one.

Heavy (a gateway takes ~1.2 GB and ~20 s of two cores): run one at a time. Every process a
test starts is stopped by PID in ``finally``.
"""

from __future__ import annotations

import json
import random
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.files import GATEWAY_TITLES, AgentPaths
from occ.drivers.compute.local import PASSWORD_ENV, child_environment, render_config
from occ.ids import IdPrefix, new_id
from occ.openclaw import document, slack
from occ.openclaw.schema import export_schema, read_committed_schema, schema_problems
from occ.runtime import Runtime
from tests.conftest import service_missing

pytestmark = [pytest.mark.gateway, pytest.mark.slow]

VALIDATE_TIMEOUT_SECONDS = 180
READY_WITHIN_SECONDS = 240.0
EXIT_WITHIN_SECONDS = 120.0
REFUSED = {"agents": {"defaults": {"bogusKey": 1}}}
ACCEPTED = document.agent_template(provider="openai", model="gpt-5")


@pytest.fixture
def runtime() -> Runtime:
    installed = Runtime(Path(settings.OCC_RUNTIME_DIR))
    if not installed.is_installed():
        service_missing("OpenClaw runtime not installed: run make runtime")
    return installed


def staged(runtime: Runtime, values: dict[str, Any], folder: Path, port: int) -> tuple[AgentPaths, dict[str, str]]:
    """The config and environment the local driver gives a gateway for ``values``."""
    paths = AgentPaths(folder / new_id(IdPrefix.AGENT))
    paths.ensure()
    config_path = paths.config(new_id(IdPrefix.REVISION))
    config_path.parent.mkdir(parents=True)
    config_path.write_text(json.dumps(render_config(values, port=port, paths=paths, deliver_model_key=True)))
    env = child_environment(runtime=runtime, paths=paths, config_path=config_path, port=port,
                            secret_values={PASSWORD_ENV: secrets.token_urlsafe(24)})
    return paths, env


def validate(runtime: Runtime, values: dict[str, Any], folder: Path) -> dict[str, Any]:
    paths, env = staged(runtime, values, folder, port=19000)
    node, entry = runtime.require()
    result = subprocess.run([str(node), str(entry), "config", "validate", "--json"], cwd=paths.root, env=env,
                            capture_output=True, text=True, timeout=VALIDATE_TIMEOUT_SECONDS, check=False)
    start = result.stdout.find("{")
    assert start >= 0, f"no JSON from config validate (exit {result.returncode}): {result.stderr[-2000:]}"
    return json.loads(result.stdout[start:])


def test_the_committed_schema_is_what_the_pinned_runtime_prints(runtime):
    assert export_schema(runtime) == read_committed_schema()


SLACK = slack.merge_slack_settings(ACCEPTED, slack.SlackSettings(
    channel_ids=("C0123ABCD",), require_mention=True, channel_user_ids=None, dm_policy="allowlist",
    dm_user_ids=("U0123ABCD",)))


@pytest.mark.parametrize(("values", "valid"), [
    pytest.param(REFUSED, False, id="bogus-key"),
    pytest.param({"agents": {"defaults": {"skipBootstrap": "yes"}}}, False, id="wrong-type"),
    pytest.param({"channels": {"slack": {"dmPolicy": "nope"}}}, False, id="channel-option"),
    pytest.param({"models": {"providers": {"x": {"baseUrl": "http://127.0.0.1:9/v1", "models": [{"name": "m"}]}}}},
                 False, id="missing-model-id"),
    pytest.param(ACCEPTED, True, id="template"),
    pytest.param(SLACK, True, id="slack-merged"),
    pytest.param({"channels": {"slack": {"enabled": True}}}, True, id="defaults-left-out"),
])
def test_the_runtime_and_the_in_process_check_agree(runtime, tmp_path, values, valid):
    verdict = validate(runtime, values, tmp_path)
    assert verdict["valid"] is valid, verdict
    assert (schema_problems(values) == []) is valid


def test_the_runtime_says_what_we_say_for_the_issue_document(runtime, tmp_path):
    verdict = validate(runtime, REFUSED, tmp_path)
    assert [(i["path"], i["message"]) for i in verdict["issues"]] == [("agents.defaults",
                                                                       'Unrecognized key: "bogusKey"')]
    assert [(p.location, p.message) for p in schema_problems(REFUSED)] == [
        (("agents", "defaults", "bogusKey"), 'Unrecognized key: "bogusKey"')]


def start(runtime: Runtime, values: dict[str, Any], folder: Path) -> tuple[supervisor.ProcessIdentity, AgentPaths, int]:
    # A free port of our own (other runs on this machine hold some): the gateway's derived
    # ports reach base + 110.
    port = next(p for p in (random.randrange(30000, 59000, 120) for _ in range(200))
                if all(supervisor.port_is_free(p + offset) for offset in (0, 1, 2, 110)))
    paths, env = staged(runtime, values, folder, port)
    node, entry = runtime.require()
    identity = supervisor.spawn([str(node), str(entry), "gateway", "--port", str(port)], env=env, cwd=paths.root,
                                log_path=paths.gateway_log)
    return identity, paths, port


def test_the_real_gateway_refuses_the_refused_document_and_starts_on_the_accepted_one(runtime, tmp_path):
    refused, refused_paths, _ = start(runtime, REFUSED, tmp_path)
    try:
        deadline = time.monotonic() + EXIT_WITHIN_SECONDS
        while supervisor.is_same_process(refused, titles=GATEWAY_TITLES) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not supervisor.is_same_process(refused, titles=GATEWAY_TITLES), "the gateway ran on a refused config"
        assert "bogusKey" in refused_paths.gateway_log.read_text()
    finally:
        supervisor.stop(refused, grace=10.0, titles=GATEWAY_TITLES)

    accepted, accepted_paths, port = start(runtime, ACCEPTED, tmp_path)
    try:
        deadline = time.monotonic() + READY_WITHIN_SECONDS
        while not supervisor.readyz(port, timeout=1.0):
            assert supervisor.is_same_process(accepted, titles=GATEWAY_TITLES), \
                accepted_paths.gateway_log.read_text()[-2000:]
            assert time.monotonic() < deadline, "the gateway did not become ready"
            time.sleep(1.0)
    finally:
        supervisor.stop(accepted, grace=10.0, titles=GATEWAY_TITLES)
