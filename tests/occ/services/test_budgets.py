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
from occ.errors import Conflict, InvalidRequest
from occ.models import BUDGET_EXCEEDED, Agent, AuditEvent, Budget, ControllerWork, UsageDay
from occ.models.work import revision_reconcile_key
from occ.services.agent_lifecycle import agent_start
from occ.services.budgets import SIGNATURE_HEADER, budget_delete, budget_override, budget_set, budgets_enforce
from occ.services.secrets import secret_create
from occ.services.usage_collection import usage_collect
from project import celery_app
from provisioning import tasks
from tests.agents_support import make_revision
from tests.factories import AgentFactory, SecretFactory, grant
from tests.occ.services.usage_support import day_key, figures

NOW = timezone.now()
TODAY = NOW.astimezone(UTC).date()
HOOK_KEY = "budget-hook-signing-key-5e0"


class Hook(BaseHTTPRequestHandler):
    """A webhook receiver on loopback: it answers 503 to its first ``failures`` requests, then 204."""

    received: list[tuple[dict[str, str], bytes]] = []
    failures = 0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((dict(self.headers), body))
        failing = len(type(self).received) <= type(self).failures
        self.send_response(503 if failing else 204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hook(settings, monkeypatch) -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    """The receiver's URL and what it received. Loopback is allowed as an operator would allow
    a network (OCC_OUTGOING_ALLOWED_NETWORKS), and the webhook task runs here, with its declared
    retries (Celery's eager ``apply``), when a commit sends it."""
    Hook.received, Hook.failures = [], 0
    settings.OCC_OUTGOING_ALLOWED_NETWORKS = ["127.0.0.0/8"]

    def run_here(name: str, args: tuple[str, ...] = (), **options: Any) -> None:
        if name == tasks.send_budget_webhook.name:  # other messages (the pause's stop nudge) are dropped
            tasks.send_budget_webhook.apply(args=args)

    monkeypatch.setattr(celery_app, "send_task", run_here)
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


def enforce(capture) -> None:
    """One enforcement pass, its commits' webhooks sent (``capture``: the on-commit fixture)."""
    with capture(execute=True):
        budgets_enforce(now=NOW)


def test_each_threshold_is_announced_once_with_a_signed_webhook_and_100_percent_pauses(
        ready_namespace, admin_actor, hook, django_capture_on_commit_callbacks):
    url, received = hook
    key = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=SecretCreate(name="budget-hook", value=HOOK_KEY))
    agent = running_agent(ready_namespace)
    budget_set(actor=admin_actor, namespace_id=ready_namespace.id, command=BudgetSet(
        agent_id=agent.id, period="day", limit=Decimal("1.00"), webhook_url=url, webhook_secret_id=key.id))

    for cost, expected in (("0.40", []), ("0.55", [50]), ("0.60", [50]), ("0.85", [50, 80]), ("1.02", [50, 80, 100]),
                           ("1.50", [50, 80, 100])):
        spent(agent, cost)
        enforce(django_capture_on_commit_callbacks)
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


def test_lifting_a_budget_is_not_undone_by_an_agent_that_cannot_start(ready_namespace, admin_actor):
    """Removing a Namespace budget starts the Agents it paused; one that cannot start (here: it
    never ran) stays stopped, no longer marked as paused by a budget, with the refusal audited,
    and neither the removal nor the other Agent's start is rolled back."""
    agent = running_agent(ready_namespace)
    budget = budget_set(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=BudgetSet(period="day", limit=Decimal(1)))
    spent(agent, "2")
    budgets_enforce(now=NOW)
    stuck = AgentFactory(namespace=ready_namespace)
    Agent.objects.filter(id=stuck.id).update(desired_runtime_state="stopped", stopped_reason=BUDGET_EXCEEDED)

    budget_delete(actor=admin_actor, namespace_id=ready_namespace.id, budget_id=budget.id)

    assert not Budget.objects.filter(id=budget.id).exists()
    agent.refresh_from_db()
    stuck.refresh_from_db()
    assert (agent.desired_runtime_state, agent.stopped_reason) == ("running", "")
    assert (stuck.desired_runtime_state, stuck.stopped_reason) == ("stopped", "")
    refused = AuditEvent.objects.get(action="openclaw.budgets.resume_refused", resource_id=stuck.id)
    assert "never run" in refused.details["message"]
    assert AuditEvent.objects.filter(action="openclaw.budgets.delete", actor_id=admin_actor.id).count() == 1


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


def webhook_tries(budget_id: str) -> list[tuple[int, str, int | None, bool]]:
    return [(e.details["try"], e.details["outcome"], e.details["status"], e.details["final"])
            for e in AuditEvent.objects.filter(action="openclaw.budgets.webhook").order_by("occurred_at")
            if e.details["budgetId"] == budget_id]


def test_a_failing_receiver_gets_the_webhook_again_with_backoff_until_it_answers(
        ready_namespace, admin_actor, hook, django_capture_on_commit_callbacks, caplog):
    url, received = hook
    Hook.failures = 2
    key = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=SecretCreate(name="budget-hook", value=HOOK_KEY))
    agent = running_agent(ready_namespace)
    budget = budget_set(actor=admin_actor, namespace_id=ready_namespace.id, command=BudgetSet(
        agent_id=agent.id, period="day", limit=Decimal("1.00"), webhook_url=url, webhook_secret_id=key.id))
    spent(agent, "0.60")

    with caplog.at_level("INFO", logger="occ.services.budgets"):
        enforce(django_capture_on_commit_callbacks)

    assert len(received) == 3, "two 503s, then delivered"
    bodies = [json.loads(body) for _, body in received]
    assert {b["eventId"] for b in bodies} == {AuditEvent.objects.get(action="openclaw.budgets.threshold").id}, \
        "every try is the same event (a receiver can drop repeats)"
    assert [b["threshold"] for b in bodies] == [50, 50, 50]
    signatures = [headers[SIGNATURE_HEADER] for headers, _ in received]
    for signature, (_, body) in zip(signatures, received, strict=True):
        assert signature == "sha256=" + hmac.new(HOOK_KEY.encode(), body, hashlib.sha256).hexdigest()
    assert webhook_tries(budget.id) == [(1, "failed", 503, False), (2, "failed", 503, False),
                                        (3, "delivered", 204, True)]
    tries = [r.getMessage() for r in caplog.records if "budget webhook" in r.getMessage()]
    assert [f"try={n} " in line for n, line in zip((1, 2, 3), tries, strict=True)] == [True] * 3
    recorded = caplog.text + json.dumps([e.details for e in AuditEvent.objects.all()])
    assert HOOK_KEY not in recorded
    assert not any(s.removeprefix("sha256=") in recorded for s in signatures)
    assert url not in recorded, "a webhook URL can hold a token: never logged nor audited"


def test_a_receiver_that_keeps_failing_is_given_up_after_the_declared_tries(
        ready_namespace, admin_actor, hook, django_capture_on_commit_callbacks, settings):
    url, received = hook
    Hook.failures = 1000
    budget = budget_set(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=BudgetSet(period="day", limit=Decimal("1.00"), webhook_url=url))
    agent = running_agent(ready_namespace)
    spent(agent, "0.90")
    enforce(django_capture_on_commit_callbacks)

    attempts = settings.OCC_BUDGET_WEBHOOK_ATTEMPTS
    assert len(received) == attempts
    assert [t[0] for t in webhook_tries(budget.id)] == list(range(1, attempts + 1))
    assert [t[3] for t in webhook_tries(budget.id)] == [False] * (attempts - 1) + [True]
    task = tasks.send_budget_webhook
    assert (task.max_retries, task.retry_backoff, task.retry_jitter) == (
        attempts - 1, settings.OCC_BUDGET_WEBHOOK_BACKOFF_SECONDS, True), "bounded, with backoff and jitter"
    assert thresholds(budget.namespace_id) == [80], "enforcement went on"


@pytest.mark.parametrize("url", [
    pytest.param("http://127.0.0.1:8080/hook", id="loopback"),
    pytest.param("http://localhost/hook", id="localhost"),
    pytest.param("http://169.254.169.254/latest/meta-data/", id="cloud-metadata"),
    pytest.param("http://10.0.0.7/hook", id="private"),
    pytest.param("http://100.64.1.1/hook", id="shared-address-space"),
    pytest.param("http://[::1]/hook", id="ipv6-loopback"),
    pytest.param("http://[::ffff:10.0.0.1]/hook", id="ipv4-mapped-private"),
    pytest.param("http://0.0.0.0/hook", id="unspecified"),
    pytest.param("https://user:pass@hooks.example.com/x", id="credentials-in-url"),
    pytest.param("https://xn--/hook", id="malformed-international-name"),
])
def test_a_webhook_url_the_outgoing_policy_forbids_is_refused_at_its_place(ready_namespace, admin_actor, url):
    with pytest.raises(InvalidRequest) as refused:
        budget_set(actor=admin_actor, namespace_id=ready_namespace.id,
                   command=BudgetSet(period="month", limit=Decimal("5"), webhook_url=url))
    assert [d.path for d in refused.value.details] == ["/webhookUrl"]
    assert refused.value.message.startswith("This webhook URL is refused:")
    assert url not in refused.value.message
    assert not Budget.objects.exists()


def test_an_allowed_network_admits_a_private_receiver_and_a_webhook_is_checked_again_before_it_is_sent(
        ready_namespace, admin_actor, hook, django_capture_on_commit_callbacks, settings):
    url, received = hook
    budget = budget_set(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=BudgetSet(period="day", limit=Decimal("1.00"), webhook_url=url))
    settings.OCC_OUTGOING_ALLOWED_NETWORKS = []  # the operator took the network back
    spent(running_agent(ready_namespace), "0.55")
    enforce(django_capture_on_commit_callbacks)
    assert received == []
    assert webhook_tries(budget.id) == [(1, "refused", None, True)], "refused once, not retried"
