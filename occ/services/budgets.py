"""Budgets on a Namespace or an Agent, per UTC day or month, enforced after each usage pass.

At 50, 80 and 100 % of the limit (each once per period) an audit event and, when the budget
names one, a signed webhook, sent by a task and tried again with backoff while it fails. At
100 % every Agent the budget covers that runs is paused: its desired state becomes stopped
with ``stopped_reason = "budget_exceeded"`` and a stop work row is queued (acting as the
administrator who set the budget). It starts again only when its
budgets are back under 100 % after an administrator raises or removes one, or when an
administrator overrides the budget for the rest of the period — both audited.

Spend is what the last pass collected, so an Agent overshoots its budget by at most what it
spends in one collection interval (``OCC_USAGE_COLLECTION_SECONDS``) plus the stop's own time.

Only administrators (``installation:administer``) set, remove and override budgets: the pause
acts on Agents in the whole Namespace. A webhook URL must be one the outgoing-URL policy allows
(``occ.services.outgoing_urls``: public addresses only, unless an operator allowed a network).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from occ import nudges
from occ.commands.budgets import BudgetSet
from occ.drivers.secrets import get_secret_driver
from occ.errors import Conflict, InvalidRequest, NotFound
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import (
    BUDGET_EXCEEDED,
    BUDGET_THRESHOLDS,
    Agent,
    AgentStatus,
    AgentTarget,
    AuditEvent,
    AuditOutcome,
    Budget,
    ControllerWork,
    DesiredRuntimeState,
    Secret,
    WorkJob,
)
from occ.models.work import agent_stopped_key
from occ.selectors.agents import get_agent
from occ.selectors.budgets import budget_percent, budget_spend, budgets_over, period_start
from occ.selectors.namespaces import get_live_namespace
from occ.services.agent_lifecycle import agent_start
from occ.services.audit import audit_record
from occ.services.budget_guards import today_utc
from occ.services.outgoing_urls import RefusedDestination, check_outgoing_url, outgoing_destination
from occ.services.work import work_enqueue

logger = logging.getLogger(__name__)
SIGNATURE_HEADER = "X-OCC-Signature"
THRESHOLD_ACTION = "openclaw.budgets.threshold"


# --- administrators' writes -----------------------------------------------------------------------


def budget_set(*, actor: Actor, namespace_id: str, command: BudgetSet) -> Budget:
    """Create or replace the budget of the Namespace or of ``command.agent_id`` for the period;
    then start the Agents it paused that no budget holds back any more."""
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        if command.webhook_url:
            _check_webhook_url(command)
        namespace = get_live_namespace(namespace_id)
        agent = get_agent(namespace, command.agent_id) if command.agent_id else None
        secret = None
        if command.webhook_secret_id:
            secret = Secret.objects.filter(namespace=namespace, id=command.webhook_secret_id,
                                           owner_agent__isnull=True).first()
            if secret is None:
                raise InvalidRequest("webhookSecretId names no Secret of this Namespace.")
        budget, created = Budget.objects.select_for_update().get_or_create(
            namespace=namespace, agent=agent, period=command.period,
            defaults={"limit": command.limit, "set_by": actor.id})
        previous = None if created else budget.limit
        budget.limit, budget.set_by = command.limit, actor.id
        budget.webhook_url, budget.webhook_secret = command.webhook_url or "", secret
        if previous is not None and command.limit > previous:
            budget.notified_percent = 0  # announce the thresholds of the new limit again
        budget.save()
        audit_record(actor=actor, action="openclaw.budgets.set", namespace_id=namespace.id,
                     resource_kind=Kind.AGENT if agent else Kind.NAMESPACE,
                     resource_id=agent.id if agent else namespace.id,
                     details={"budgetId": budget.id, "period": budget.period, "limit": str(budget.limit),
                              "previousLimit": None if previous is None else str(previous),
                              "webhook": bool(budget.webhook_url), "webhookSecretId": secret.id if secret else None})
        _resume_covered(actor, budget)
    return budget


def _check_webhook_url(command: BudgetSet) -> None:
    """The outgoing-URL policy (``occ.services.outgoing_urls``) on the webhook, at its place."""
    try:
        check_outgoing_url(command.webhook_url or "")
    except RefusedDestination as refused:
        raise command.refused("webhook_url", f"This webhook URL is refused: {refused}") from None


def budget_delete(*, actor: Actor, namespace_id: str, budget_id: str) -> None:
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        budget = _budget(namespace_id, budget_id)
        audit_record(actor=actor, action="openclaw.budgets.delete", namespace_id=namespace_id,
                     resource_kind=Kind.AGENT if budget.agent_id else Kind.NAMESPACE,
                     resource_id=budget.agent_id or namespace_id,
                     details={"budgetId": budget.id, "period": budget.period, "limit": str(budget.limit)})
        covered = _covered_agents(budget)
        budget.delete()
        for agent in covered:
            _resume(actor, agent)


def budget_override(*, actor: Actor, namespace_id: str, budget_id: str) -> Budget:
    """An administrator lets the budget's Agents run past 100 % until its period ends, and
    starts those it paused (unless another budget still holds one back)."""
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        budget = _budget(namespace_id, budget_id)
        today = today_utc()
        budget.override_period = period_start(budget.period, today)
        budget.save(update_fields=["override_period", "updated_at"])
        audit_record(actor=actor, action="openclaw.budgets.override", namespace_id=namespace_id,
                     resource_kind=Kind.AGENT if budget.agent_id else Kind.NAMESPACE,
                     resource_id=budget.agent_id or namespace_id,
                     details={"budgetId": budget.id, "period": budget.period,
                              "periodStart": budget.override_period.isoformat(),
                              "spend": str(budget_spend(budget, today)), "limit": str(budget.limit)})
        _resume_covered(actor, budget)
    return budget


def _budget(namespace_id: str, budget_id: str) -> Budget:
    budget = Budget.objects.select_for_update().filter(namespace_id=namespace_id, id=budget_id).first()
    if budget is None:
        raise NotFound("The budget does not exist.")
    return budget


def _covered_agents(budget: Budget) -> list[Agent]:
    agents = Agent.objects.filter(namespace_id=budget.namespace_id, status=AgentStatus.ACTIVE)
    return list(agents.filter(id=budget.agent_id) if budget.agent_id else agents)


def _resume_covered(actor: Actor, budget: Budget) -> None:
    for agent in _covered_agents(budget):
        _resume(actor, agent)


def _resume(actor: Actor, agent: Agent) -> None:
    """Start an Agent a budget paused, once no budget holds it back (as ``actor``). An Agent that
    cannot start (its last revision's Secret is gone, say) does not undo the budget's change: it
    stays stopped, no longer marked as paused by a budget, and the refusal is audited with the
    start's own words (a savepoint keeps the rest of the transaction)."""
    if agent.stopped_reason != BUDGET_EXCEEDED or budgets_over(agent, today_utc()):
        return
    try:
        with transaction.atomic():
            agent_start(actor=actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    except Conflict as refused:
        Agent.objects.filter(id=agent.id, stopped_reason=BUDGET_EXCEEDED).update(stopped_reason="")
        audit_record(actor=actor, action="openclaw.budgets.resume_refused", namespace_id=agent.namespace_id,
                     resource_kind=Kind.AGENT, resource_id=agent.id,
                     details={"code": refused.code, "message": refused.message})


# --- enforcement after each pass --------------------------------------------------------------------


@dataclass(frozen=True)
class Crossing:
    """A threshold one budget crossed, for its webhook."""

    budget_id: str
    namespace_id: str
    agent_id: str | None
    period: str
    period_start: date
    threshold: int
    spend: Decimal
    limit: Decimal
    webhook_url: str
    webhook_secret_id: str | None


def budgets_enforce(*, now: datetime) -> list[Crossing]:
    """Announce newly crossed thresholds and pause what is over 100 %. A budget with a webhook
    has it sent, once its transaction committed, by a task of its own (``budget_webhook_deliver``)."""
    today = today_utc(now)
    crossings = []
    for budget_id in Budget.objects.values_list("id", flat=True).order_by("id"):
        crossing = _enforce_one(budget_id, today)
        if crossing is not None:
            crossings.append(crossing)
    return crossings


def _enforce_one(budget_id: str, today: date) -> Crossing | None:
    with transaction.atomic():
        budget = Budget.objects.select_for_update().filter(id=budget_id).first()
        if budget is None:
            return None
        start = period_start(budget.period, today)
        if budget.notified_period != start:
            budget.notified_percent, budget.notified_period = 0, start
        spend = budget_spend(budget, today)
        percent = budget_percent(spend, budget.limit)
        reached = max((t for t in BUDGET_THRESHOLDS if percent >= t), default=0)
        crossing = None
        if reached > budget.notified_percent:
            budget.notified_percent = reached
            event = audit_record(actor=None, source=Source.WORKER.value, action=THRESHOLD_ACTION,
                         namespace_id=budget.namespace_id,
                         resource_kind=Kind.AGENT if budget.agent_id else Kind.NAMESPACE,
                         resource_id=budget.agent_id or budget.namespace_id,
                         details={"budgetId": budget.id, "threshold": reached, "period": budget.period,
                                  "periodStart": start.isoformat(), "spend": str(spend), "limit": str(budget.limit)})
            crossing = Crossing(budget.id, budget.namespace_id, budget.agent_id, budget.period, start, reached, spend,
                                budget.limit, budget.webhook_url, budget.webhook_secret_id)
            if budget.webhook_url:
                transaction.on_commit(functools.partial(nudges.send_budget_webhook, event.id))
        budget.save(update_fields=["notified_percent", "notified_period", "updated_at"])
        if spend >= budget.limit and budget.override_period != start:
            for agent in _covered_agents(budget):
                _pause(agent, budget)
    return crossing


def _pause(agent: Agent, budget: Budget) -> None:
    """Inside the budget's transaction: stop a running Agent with the reason, as the budget's setter."""
    agent = Agent.objects.select_for_update().get(id=agent.id)
    if agent.desired_runtime_state != DesiredRuntimeState.RUNNING or agent.status != AgentStatus.ACTIVE:
        return
    stops = ControllerWork.objects.filter(agent_id=agent.id, agent_target=AgentTarget.STOPPED)
    sequence = stops.aggregate(n=Count("idempotency_key"))["n"] + 1
    agent.desired_runtime_state, agent.stopped_reason = DesiredRuntimeState.STOPPED, BUDGET_EXCEEDED
    agent.save(update_fields=["desired_runtime_state", "stopped_reason", "updated_at"])
    work_enqueue(key=agent_stopped_key(agent.id, sequence), job=WorkJob.AGENT_STOP, namespace_id=agent.namespace_id,
                 actor_id=budget.set_by, agent_id=agent.id, agent_target=AgentTarget.STOPPED)
    audit_record(actor=None, source=Source.WORKER.value, action="openclaw.agents.budget_pause",
                 namespace_id=agent.namespace_id, resource_kind=Kind.AGENT, resource_id=agent.id,
                 details={"budgetId": budget.id, "period": budget.period, "limit": str(budget.limit),
                          "attempt": sequence, "actingAs": budget.set_by})


# --- the webhook ------------------------------------------------------------------------------------


class WebhookNotDelivered(Exception):
    """One try of a budget webhook failed in a way another try may not (an error status, a
    timeout, a refused connection); its message names the status or the error class only."""


def webhook_body(crossing: Crossing, *, event_id: str, now: datetime) -> bytes:
    return json.dumps({
        "event": "budget.threshold", "eventId": event_id, "budgetId": crossing.budget_id,
        "namespaceId": crossing.namespace_id, "agentId": crossing.agent_id, "period": crossing.period,
        "periodStart": crossing.period_start.isoformat(), "threshold": crossing.threshold,
        "spend": str(crossing.spend), "limit": str(crossing.limit), "paused": crossing.threshold >= 100,
        "sentAt": now.isoformat(),
    }, separators=(",", ":")).encode()


def webhook_signature(key: str, body: bytes) -> str:
    return "sha256=" + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


def _crossing_of(event: AuditEvent, budget: Budget) -> Crossing:
    details = event.details
    return Crossing(budget.id, budget.namespace_id, budget.agent_id, details["period"],
                    date.fromisoformat(details["periodStart"]), int(details["threshold"]),
                    Decimal(details["spend"]), Decimal(details["limit"]), budget.webhook_url,
                    budget.webhook_secret_id)


def budget_webhook_deliver(*, event_id: str, attempt: int, final: bool, now: datetime | None = None) -> None:
    """One try of the webhook of threshold event ``event_id`` (the thin task
    ``provisioning.send_budget_webhook`` calls it, and retries it with backoff while it raises
    ``WebhookNotDelivered``, at most ``OCC_BUDGET_WEBHOOK_ATTEMPTS`` tries in all).

    The POST goes to the budget's webhook URL as it is now, signed with its Secret's value
    (HMAC-SHA256 of the body) when it names one; to the address the outgoing-URL policy checked
    (``occ.services.outgoing_urls``), within ``OCC_BUDGET_WEBHOOK_TIMEOUT_SECONDS``, no
    redirects. Every try is logged and recorded as an audit event (``openclaw.budgets.webhook``:
    the try, delivered or not, the status or the error class; never the URL, the body's
    signature or the Secret). Nothing to send (the event, the budget or its webhook gone) returns
    quietly; a URL the policy refuses is recorded and not tried again."""
    event = AuditEvent.objects.filter(id=event_id, action=THRESHOLD_ACTION).first()
    budget = Budget.objects.filter(id=event.details.get("budgetId")).first() if event is not None else None
    if event is None or budget is None or not budget.webhook_url:
        return
    crossing = _crossing_of(event, budget)
    try:
        destination = outgoing_destination(crossing.webhook_url)
    except RefusedDestination:
        _record_try(crossing, event_id, attempt, outcome="refused", final=True)
        return
    body = webhook_body(crossing, event_id=event_id, now=now or timezone.now())
    headers = {"Content-Type": "application/json", "User-Agent": "occ-budgets", **destination.headers}
    secret = Secret.objects.filter(id=crossing.webhook_secret_id).first() if crossing.webhook_secret_id else None
    if secret is not None:
        headers[SIGNATURE_HEADER] = get_secret_driver(secret.driver_id).with_value(
            secret.backend_name, lambda value: webhook_signature(value, body))
    try:
        # trust_env off: no proxy from the environment, the request goes to the checked address.
        with httpx.Client(timeout=float(settings.OCC_BUDGET_WEBHOOK_TIMEOUT_SECONDS), follow_redirects=False,
                          trust_env=False) as client:
            response = client.post(destination.pinned_url, content=body, headers=headers,
                                   extensions=destination.extensions)
    except httpx.HTTPError as exc:
        _record_try(crossing, event_id, attempt, outcome="failed", error=type(exc).__name__, final=final)
        raise WebhookNotDelivered(type(exc).__name__) from None
    if response.status_code >= 300:
        _record_try(crossing, event_id, attempt, outcome="failed", status=response.status_code, final=final)
        raise WebhookNotDelivered(f"answered {response.status_code}")
    _record_try(crossing, event_id, attempt, outcome="delivered", status=response.status_code, final=True)


def _record_try(crossing: Crossing, event_id: str, attempt: int, *, outcome: str, final: bool,
                status: int | None = None, error: str | None = None) -> None:
    log = logger.info if outcome == "delivered" else logger.warning
    log("budget webhook budget=%s event=%s try=%d outcome=%s status=%s error=%s final=%s", crossing.budget_id,
        event_id, attempt, outcome, status, error, final)
    audit_record(actor=None, source=Source.WORKER.value, action="openclaw.budgets.webhook",
                 namespace_id=crossing.namespace_id, resource_kind=Kind.AGENT if crossing.agent_id else Kind.NAMESPACE,
                 resource_id=crossing.agent_id or crossing.namespace_id,
                 outcome=AuditOutcome.SUCCEEDED if outcome == "delivered" else AuditOutcome.FAILED,
                 details={"budgetId": crossing.budget_id, "thresholdEventId": event_id,
                          "threshold": crossing.threshold, "try": attempt, "outcome": outcome, "status": status,
                          "error": error, "final": final})
