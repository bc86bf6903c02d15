"""``occ sessions`` and ``occ approvals`` as a process against OCC's real web stack on loopback
(pytest-django's live server), the Agents' gateways loopback stand-ins of the RPC (real
WebSockets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from occ.models import Namespace
from occ.services.agent_sessions import agent_sessions_refresh
from tests.conftest import mark_namespace_ready
from tests.fakes.fake_gateway_rpc import FakeGateway, fake_gateways, running_agent  # noqa: F401

OCC = Path(sys.executable).with_name("occ")
CLI = Path(__file__).resolve().parents[2] / "cli"  # this checkout's CLI, whichever one the venv installed
PASSWORD = "stand-in-gateway-password-cli-3"
NOW_MS = int(time.time() * 1000)


@pytest.fixture
def occ(live_server, bootstrap):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(OCC_URL=live_server.url, OCC_API_KEY=bootstrap.key_token, COLUMNS="200", NO_COLOR="1",
               PYTHONPATH=os.pathsep.join([str(CLI), env.get("PYTHONPATH", "")]))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(OCC), *args], capture_output=True, text=True, env=env, timeout=60, check=False)
    return run


def data(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.django_db(transaction=True)
def test_sessions_list_show_export_and_approvals_approve_once(occ, fake_compute, fake_gateways, tmp_path):  # noqa: F811
    namespace = Namespace.objects.get(name="default")
    mark_namespace_ready(namespace)
    gateway = FakeGateway(PASSWORD, sessions=[{"key": "agent:main:main", "channel": "webchat", "updatedAt": NOW_MS,
                                               "displayName": "Main chat", "totalTokens": 42}],
                          histories={"agent:main:main": [
                              {"role": "user", "content": "what is the weather"},
                              {"role": "assistant", "content": [{"type": "toolCall", "name": "weather",
                                                                 "arguments": {"city": "Oslo"}}]},
                              {"role": "assistant", "content": "Sunny in Oslo."}]},
                          approvals={"exec": [{"id": "cli-1", "createdAtMs": NOW_MS, "expiresAtMs": NOW_MS + 60_000,
                                               "request": {"command": "make deploy", "sessionKey": "agent:main:main"}}],
                                     "plugin": []}).start()
    fake_gateways.append(gateway)
    agent = running_agent(namespace, gateway, fake_compute, name="weather-bot")
    agent_sessions_refresh(agent_id=agent.id)

    listed = data(occ("sessions", "list", "--json"))
    assert [(row["agentName"], row["key"], row["totalTokens"]) for row in listed["sessions"]] == [
        ("weather-bot", "agent:main:main", 42)]
    session_id = listed["sessions"][0]["id"]
    table = occ("sessions", "list", "-n", "default", "--agent", "weather-bot")
    assert table.returncode == 0
    assert session_id in table.stdout
    shown = occ("sessions", "show", session_id, "--agent", "weather-bot", "-n", "default")
    assert shown.returncode == 0, shown.stderr
    assert "what is the weather" in shown.stdout
    assert '→ weather {"city":"Oslo"}' in shown.stdout
    searched = data(occ("sessions", "show", session_id, "-a", "weather-bot", "-n", "default", "-s", "sunny", "--json"))
    assert [entry["text"] for entry in searched["entries"]] == ["Sunny in Oslo."]
    exported = tmp_path / "t.md"
    assert occ("sessions", "export", session_id, "-a", "weather-bot", "-n", "default", "-o", str(exported)
               ).returncode == 0
    assert exported.read_text().startswith("# Main chat")
    assert "Sunny in Oslo." in exported.read_text()

    inbox = data(occ("approvals", "list", "--json"))
    assert [(a["id"], a["command"]) for a in inbox["approvals"]] == [("cli-1", "make deploy")]
    approved = occ("approvals", "approve", "cli-1", "--agent", "weather-bot", "-n", "default")
    assert approved.returncode == 0, approved.stderr
    again = occ("approvals", "deny", "cli-1", "--agent", "weather-bot", "-n", "default")
    assert again.returncode != 0
    assert "already been answered" in again.stderr
    assert gateway.calls("exec.approval.resolve") == [{"id": "cli-1", "decision": "allow-once"}]
