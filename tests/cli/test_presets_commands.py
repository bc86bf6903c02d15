"""``occ presets`` as a process against OCC's real web stack on loopback (pytest-django's live
server: no worker, so ``apply --no-wait`` stops at admission, which is what the CLI adds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from occ_cli.client import Exit

from occ.commands.secrets import SecretCreate
from occ.models import AgentProvisioningWork, Namespace
from occ.services.secrets import secret_create
from tests.conftest import mark_namespace_ready
from tests.factories import AgentFactory, ConfigurationFactory

OCC = Path(sys.executable).with_name("occ")
CANARY = "sk-cli-preset-canary-0c7d"
VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5.5"}}}}


@pytest.fixture
def occ(live_server, bootstrap):
    mark_namespace_ready(Namespace.objects.get(name="default"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(OCC_URL=live_server.url, OCC_API_KEY=bootstrap.key_token, COLUMNS="200", NO_COLOR="1")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(OCC), *args], capture_output=True, text=True, env=env, timeout=60, check=False)
    return run


def data(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.django_db(transaction=True)
def test_list_show_create_and_apply_a_preset(occ, admin_actor, tmp_path):
    listed = data(occ("presets", "list", "-n", "default", "--json"))
    assert [row["name"] for row in listed] == ["Standard OpenClaw"]
    assert listed[0]["variables"] == ["apiKey", "model", "name"]
    shown = data(occ("presets", "show", "Standard OpenClaw", "-n", "default", "--json"))
    assert shown["template"]["agent"]["harnessAuth"] == {"method": "api_key", "secret": "{{ vars.apiKey }}"}

    template = tmp_path / "preset.json"
    template.write_text(json.dumps({
        "variables": {"name": {"type": "string"}, "key": {"type": "password"},
                      "concurrent": {"type": "number", "default": 1}},
        "agent": {"name": "{{ vars.name }}", "harnessAuth": {"method": "api_key", "secret": "{{ vars.key }}"}},
        "configuration": {"values": {**VALUES, "agents": {"defaults": {
            **VALUES["agents"]["defaults"], "maxConcurrent": "{{ vars.concurrent }}"}}}}}))
    created = data(occ("presets", "create", "cli preset", "-n", "default", "-f", str(template), "--json"))
    assert created["id"].startswith("pre_")
    assert "cli preset" in occ("presets", "list", "-n", "default").stdout

    secret = secret_create(actor=admin_actor, namespace_id=created["namespaceId"],
                           command=SecretCreate(name="preset-key", value=CANARY))
    missing = occ("presets", "apply", "cli preset", "-n", "default", "--var", "name=b", "--no-wait")
    assert missing.returncode == Exit.USAGE
    assert "--secret key=SECRET" in missing.stderr
    wrong = occ("presets", "apply", "cli preset", "-n", "default", "--var", "concurrent=many", "--no-wait")
    assert wrong.returncode == Exit.USAGE
    assert "wants a number" in wrong.stderr
    unknown = occ("presets", "apply", "cli preset", "-n", "default", "--var", "name=b", "--var", "colour=red",
                  "--secret", "key=preset-key", "--no-wait")
    assert unknown.returncode == Exit.API_ERROR
    assert "colour" in unknown.stderr
    applied = data(occ("presets", "apply", created["id"], "-n", "default", "--var", "name=from-preset",
                       "--var", "concurrent=3", "--secret", "key=preset-key", "--no-wait", "--json"))
    assert applied["provisioning"]["workId"]
    plan = AgentProvisioningWork.objects.get().plan
    assert plan["name"] == "from-preset"
    assert plan["harnessAuth"]["source"]["id"] == secret.id
    assert plan["configuration"]["values"]["agents"]["defaults"]["maxConcurrent"] == 3


@pytest.mark.django_db(transaction=True)
def test_save_an_agent_as_a_preset_then_apply_it(occ, admin_actor):
    namespace = Namespace.objects.get(name="default")
    secret = secret_create(actor=admin_actor, namespace_id=namespace.id,
                           command=SecretCreate(name="saved-key", value=CANARY))
    configuration = ConfigurationFactory(namespace=namespace, values=VALUES)
    AgentFactory(namespace=namespace, name="source-bot", configuration=configuration,
                 harness_auth_method="api_key", harness_secret=secret)
    both = occ("presets", "create", "x", "-n", "default", "--from-agent", "source-bot", "-f", "-")
    assert both.returncode == Exit.USAGE
    assert "--from-agent" in both.stderr
    saved = data(occ("presets", "create", "From source", "-n", "default", "--from-agent", "source-bot", "--json"))
    assert saved["template"]["agent"]["harnessAuth"]["source"]["id"] == secret.id
    assert saved["template"]["configuration"]["values"] == VALUES
    assert CANARY not in json.dumps(saved)
    again = occ("presets", "create", "From source", "-n", "default", "--from-agent", "source-bot")
    assert again.returncode == Exit.API_ERROR
    assert "already exists" in again.stderr
    # The saved Preset has no variables: the new Agent's name is the only thing to add.
    nameless = occ("presets", "apply", "From source", "-n", "default", "--no-wait")
    assert nameless.returncode == Exit.API_ERROR
    assert "name" in nameless.stderr
    applied = data(occ("presets", "apply", "From source", "-n", "default", "--name", "copy-bot", "--no-wait",
                       "--json"))
    assert applied["provisioning"]["workId"]
    plan = AgentProvisioningWork.objects.get().plan
    assert (plan["name"], plan["harnessAuth"]["source"]["id"]) == ("copy-bot", secret.id)
