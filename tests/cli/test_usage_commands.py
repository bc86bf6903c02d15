"""``occ usage`` and ``occ budgets`` as a process against OCC's web stack on loopback."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from occ.models import Budget, ControllerWork, Namespace, UsageDay
from occ.models.work import revision_reconcile_key
from tests.agents_support import make_revision
from tests.conftest import mark_namespace_ready
from tests.factories import AgentFactory

OCC = Path(sys.executable).with_name("occ")
CLI_SOURCE = Path(__file__).resolve().parents[2] / "cli"  # this checkout's CLI, first on the path

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def occ(live_server, bootstrap):
    mark_namespace_ready(Namespace.objects.get(name="default"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(OCC_URL=live_server.url, OCC_API_KEY=bootstrap.key_token, COLUMNS="200", NO_COLOR="1",
               PYTHONPATH=str(CLI_SOURCE))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(OCC), *args], capture_output=True, text=True, env=env, timeout=60, check=False)
    return run


def test_usage_as_a_table_json_and_csv_and_a_budget_set_and_listed(occ):
    namespace = Namespace.objects.get(name="default")
    agent = AgentFactory(namespace=namespace, name="spender")
    today = timezone.now().date()
    UsageDay.objects.create(namespace_id=namespace.id, agent_id=agent.id, agent_name="spender", day=today,
                            provider="openai", model="gpt-5", input_tokens=1234, output_tokens=56,
                            cache_read_tokens=7, cost=Decimal("0.4321"), collected_at=timezone.now())

    table = occ("usage", "-n", "default")
    assert table.returncode == 0, table.stderr
    assert "spender" in table.stdout
    assert "0.43210000" in table.stdout
    by_model = json.loads(occ("usage", "-n", "default", "--by", "model", "--agent", "spender", "--json").stdout)
    assert [(row["model"], row["inputTokens"]) for row in by_model["rows"]] == [("gpt-5", 1234)]
    exported = list(csv.reader(io.StringIO(occ("usage", "-n", "default", "--csv").stdout)))
    assert exported[1][2:5] == ["spender", "openai", "gpt-5"]

    made = occ("budgets", "set", "12.5", "-n", "default", "--period", "day", "--agent", "spender", "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["limit"] == "12.50000000"
    assert Budget.objects.get().agent_id == agent.id
    listed = occ("budgets", "list", "-n", "default")
    assert "spender" in listed.stdout
    assert "12.50000000" in listed.stdout


def test_an_agent_a_budget_paused_reads_paused_in_agents_list_and_status(occ):
    namespace = Namespace.objects.get(name="default")
    for name, reason in (("paused-bot", "budget_exceeded"), ("stopped-bot", "")):
        agent = AgentFactory(namespace=namespace, name=name, desired_runtime_state="stopped", stopped_reason=reason)
        revision = make_revision(agent, 1)
        now = timezone.now()
        ControllerWork.objects.create(idempotency_key=revision_reconcile_key(revision.id), job="revision",
                                      namespace=namespace, agent_id=agent.id, revision_id=revision.id,
                                      actor_id="prn_x", state="succeeded", reason_code="REVISION_ACTIVATED",
                                      available_at=now, completed_at=now, created_at=now, updated_at=now)
    listed = occ("agents", "list", "-n", "default")
    assert listed.returncode == 0, listed.stderr
    rows = {name: line for line in listed.stdout.splitlines() for name in ("paused-bot", "stopped-bot")
            if name in line}
    assert "paused: budget exceeded" in rows["paused-bot"]
    assert "paused" not in rows["stopped-bot"]
    assert "stopped" in rows["stopped-bot"]
    shown = occ("agents", "status", "paused-bot", "-n", "default")
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"runtime\s+paused: budget exceeded", shown.stdout)
