"""Budgets after a collection pass: thresholds announced once (audit + signed webhook over real
HTTP), the Agent paused at 100 %, and started again only by a raise or an administrator's override."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from datetime import UTC, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from occ.commands.budgets import BudgetSet
from occ.commands.secrets import SecretCreate
from occ.errors import Conflict
from occ.models import BUDGET_EXCEEDED, Agent, AuditEvent, ControllerWork, UsageDay
from occ.models.work import revision_reconcile_key
from occ.services.agent_lifecycle import agent_start
from occ.services.budgets import SIGNATURE_HEADER, budget_override, budget_set, budgets_enforce
from occ.services.secrets import secret_create
from occ.services.usage_collection import usage_collect
from tests.agents_support import make_revision
from tests.factories import AgentFactory, SecretFactory, grant
from tests.occ.services.usage_support import day_key, figures

NOW = timezone.now()
TODAY = NOW.astimezone(UTC).date()
HOOK_KEY = "budget-hook-signing-key-5e0"


class Hook(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    Hook.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/occ-budget", Hook.received
    server.shutdown()
    thread.join(timeout=10)


def running_agent(namespace) -> Agent:
    """Running on a revision its work activated (so a start can bring it back)."""
    agent = AgentFactory(namespace=namespace)
    harness = SecretFactory(namespace=namespace)
    grant(agent.service_principal, "operate:secret", namespace=namespace, resource_kind="secret",
          resource_id=harness.id)
    revision = make_revision(agent, 1, harnessAuth={"method": "api_key", "source": {
        "kind": "secret", "namespaceId": namespace.id, "id": harness.id}})
    ControllerWork.objects.create(idempotency_key=revision_reconcile_key(revision.id), job="revision",
                                  namespace=namespace, agent_id=agent.id, revision_id=revision.id, actor_id="prn_x",
                                  state="succeeded", reason_code="REVISION_ACTIVATED",
                                  available_at=NOW, completed_at=NOW,
                                  created_at=NOW, updated_at=NOW)
    Agent.objects.filter(id=agent.id).update(active_revision=revision, desired_runtime_state="running")
    agent.refresh_from_db()
    return agent


def spent(agent: Agent, cost: str) -> None:
    UsageDay.objects.update_or_create(
        agent_id=agent.id, day=TODAY, provider="openai", model="gpt-5",
        defaults={"namespace_id": agent.namespace_id, "agent_name": agent.name, "cost": Decimal(cost),
                  "collected_at": NOW})


def thresholds(agent_or_namespace_id: str) -> list[int]:
    return [e.details["threshold"] for e in AuditEvent.objects.filter(
        action="openclaw.budgets.threshold", resource_id=agent_or_namespace_id).order_by("occurred_at")]


def test_each_threshold_is_announced_once_with_a_signed_webhook_and_100_percent_pauses(
        ready_namespace, admin_actor, hook):
    url, received = hook
    key = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=SecretCreate(name="budget-hook", value=HOOK_KEY))
    agent = running_agent(ready_namespace)
    budget_set(actor=admin_actor, namespace_id=ready_namespace.id, command=BudgetSet(
        agent_id=agent.id, period="day", limit=Decimal("1.00"), webhook_url=url, webhook_secret_id=key.id))

    for cost, expected in (("0.40", []), ("0.55", [50]), ("0.60", [50]), ("0.85", [50, 80]), ("1.02", [50, 80, 100]),
                           ("1.50", [50, 80, 100])):
        spent(agent, cost)
        budgets_enforce(now=NOW)
        assert thresholds(agent.id) == expected, cost

    bodies = [json.loads(body) for _, body in received]
    assert [b["threshold"] for b in bodies] == [50, 80, 100]
    assert bodies[-1]["paused"] is True
    assert bodies[-1]["spend"] == "1.02000000"
    for headers, body in received:
        assert headers[SIGNATURE_HEADER] == "sha256=" + hmac.new(HOOK_KEY.encode(), body, hashlib.sha256).hexdigest()
        assert HOOK_KEY not in body.decode()
    agent.refresh_from_db()
    assert (agent.desired_runtime_state, agent.stopped_reason) == ("stopped", BUDGET_EXCEEDED)
    stops = ControllerWork.objects.filter(agent_id=agent.id, agent_target="stopped")
    assert stops.count() == 1, "paused once, not once per pass"
    assert stops.get().actor_id == admin_actor.id, "the stop acts as the administrator who set the budget"
    assert AuditEvent.objects.filter(action="openclaw.agents.budget_pause", resource_id=agent.id).count() == 1
    assert not any(HOOK_KEY in json.dumps(e.details) for e in AuditEvent.objects.all())


def test_a_paused_agent_starts_only_after_a_raise_or_an_override(ready_namespace, admin_actor):
    agent = running_agent(ready_namespace)
    budget = budget_set(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=BudgetSet(agent_id=agent.id, period="month", limit=Decimal("2")))
    spent(agent, "3")
    budgets_enforce(now=NOW)
    with pytest.raises(Conflict) as refused:
        agent_start(actor=admin_actor, namespace_id=ready_namespace.id, agent_id=agent.id)
    assert refused.value.code == "BUDGET_EXCEEDED"

    budget_set(actor=admin_actor, namespace_id=ready_namespace.id,
               command=BudgetSet(agent_id=agent.id, period="month", limit=Decimal("2.5")))  # still under spend
    agent.refresh_from_db()
    assert agent.desired_runtime_state == "stopped"
    budget_set(actor=admin_actor, namespace_id=ready_namespace.id,
               command=BudgetSet(agent_id=agent.id, period="month", limit=Decimal("10")))
    agent.refresh_from_db()
    assert (agent.desired_runtime_state, agent.stopped_reason) == ("running", "")
    assert ControllerWork.objects.filter(agent_id=agent.id, idempotency_key__contains=":start:").count() == 1

    spent(agent, "11")
    budgets_enforce(now=NOW)
    agent.refresh_from_db()
    assert agent.stopped_reason == BUDGET_EXCEEDED
    budget_override(actor=admin_actor, namespace_id=ready_namespace.id, budget_id=budget.id)
    agent.refresh_from_db()
    assert agent.desired_runtime_state == "running"
    budgets_enforce(now=NOW)
    agent.refresh_from_db()
    assert agent.desired_runtime_state == "running", "overridden for the rest of the month"
    assert AuditEvent.objects.filter(action="openclaw.budgets.override", actor_id=admin_actor.id).count() == 1


def test_a_namespace_budget_pauses_every_running_agent_of_the_namespace(ready_namespace, admin_actor):
    first, second = running_agent(ready_namespace), running_agent(ready_namespace)
    budget_set(actor=admin_actor, namespace_id=ready_namespace.id, command=BudgetSet(period="day", limit=Decimal(1)))
    spent(first, "0.7")
    spent(second, "0.4")
    budgets_enforce(now=NOW)
    assert set(Agent.objects.filter(namespace=ready_namespace, stopped_reason=BUDGET_EXCEEDED)
               .values_list("id", flat=True)) == {first.id, second.id}
    assert thresholds(ready_namespace.id) == [100]


def test_collection_pass_enforces_after_writing_and_the_overshoot_is_one_pass_of_spend(
        ready_namespace, admin_actor, usage_gateways, usage_driver):
    """The budget sees spend once a pass stored it: the Agent stops at the first pass at or past
    the limit, so what it spent beyond the limit is what it spent since the pass before."""
    agent = running_agent(ready_namespace)
    budget_set(actor=admin_actor, namespace_id=ready_namespace.id,
               command=BudgetSet(agent_id=agent.id, period="day", limit=Decimal("1")))
    gateway = usage_gateways.add(agent.id)
    per_interval = [0.3, 0.3, 0.3, 0.3]  # spend between passes
    total, overshoot = 0.0, None
    for step, cost in enumerate(per_interval):
        total += cost
        gateway.days = {day_key(TODAY): [figures("gpt-5", 100 * (step + 1), 10, total)]}
        usage_collect(driver=usage_driver, now=NOW)
        agent.refresh_from_db()
        if agent.desired_runtime_state == "stopped":
            overshoot = total - 1
            break
    assert overshoot is not None
    assert 0 <= overshoot <= max(per_interval)
    assert agent.stopped_reason == BUDGET_EXCEEDED


def test_the_next_day_starts_a_new_day_budget(ready_namespace, admin_actor):
    agent = running_agent(ready_namespace)
    budget_set(actor=admin_actor, namespace_id=ready_namespace.id,
               command=BudgetSet(agent_id=agent.id, period="day", limit=Decimal("1")))
    spent(agent, "0.6")
    budgets_enforce(now=NOW)
    budgets_enforce(now=NOW + timedelta(days=1))  # tomorrow: nothing spent yet, nothing announced
    assert thresholds(agent.id) == [50]
