"""The approvals inbox (issue 29): the exec and plugin approvals every Agent the person may answer
(``decide_approvals:agent``) is waiting on, read live from each running gateway with the
``operator.approvals`` scope, and one decision per approval, audited with who decided. The
gateway stays the enforcer: OCC forwards the decision (``exec.approval.resolve`` or
``plugin.approval.resolve``) and records it.

Bounded: the gateways are asked one after another, each call within
``OCC_GATEWAY_RPC_TIMEOUT_SECONDS`` and the whole inbox within ``INBOX_SECONDS``; those not
reached in time, or that did not answer, are named in the answer (``unreachable``), never waited on.

Once: the decision is claimed first by a row unique per (Agent, kind, approval id), so two people
deciding together get one 409; the gateway's own answer for an approval already answered
elsewhere (``APPROVAL_ALREADY_RESOLVED``) is a 409 too, one it no longer holds a 404. The claim
is committed before the gateway is asked and no transaction is held across the call; the decided
state and its audit event are one transaction after it. Every text shown passes the Agent's
redactor (the values of the Secrets its gateway was given), and an exec request's environment
is never shown at all.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from occ.drivers.compute.gateway_rpc import APPROVALS, REFUSED
from occ.drivers.compute.logs import Redactor, with_redactor
from occ.errors import Conflict, NotFound, NotImplementedYet
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import Agent, ApprovalDecision, ApprovalDecisionState, ApprovalKind
from occ.selectors.agent_sessions import agents_allowing
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.services.agent_gateway import GatewayNotRunning, GatewayUnavailable, gateway_call, runs
from occ.services.agent_logs import delivered_secrets
from occ.services.audit import audit_record

DECIDED = "openclaw.agents.approvals.decide"
INBOX_SECONDS = 15.0
MAX_AGENTS = 100  # gateways asked for one inbox
TEXT_CHARS = 500
APPROVAL_ID_CHARS = 200  # the runtime's ids are UUIDs (plugin ones prefixed ``plugin:``)
GATEWAY_DECISIONS = {"approve": "allow-once", "deny": "deny"}
ABANDONED_CLAIM = timedelta(minutes=2)  # a claim whose decider died before the gateway answered


class AlreadyDecided(Conflict):
    code = "APPROVAL_ALREADY_DECIDED"
    default_message = "This approval has already been answered. Refresh the inbox."


@dataclass(frozen=True)
class Approval:
    agent: Agent
    kind: str  # exec or plugin
    id: str
    session_key: str
    command: str  # the command line, or the plugin's tool (and its title)
    arguments: str  # the command's argv, or the plugin request's description, on one line
    cwd: str
    created_at: datetime | None
    expires_at: datetime | None


@dataclass(frozen=True)
class Inbox:
    approvals: list[Approval] = field(default_factory=list)
    unreachable: list[Agent] = field(default_factory=list)  # running, but not asked or not answering


def _moment(value: Any) -> datetime | None:
    return datetime.fromtimestamp(value / 1000, tz=UTC) if isinstance(value, int | float) and value > 0 else None


def _text(value: Any, redactor: Redactor) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = redactor.redact_text(" ".join(text.split()))
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS - 1] + "…"


def _approval(agent: Agent, item: Any, redactor: Redactor) -> Approval | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return None
    found = item.get("request")
    request: dict[str, Any] = found if isinstance(found, dict) else {}
    kind = ApprovalKind.PLUGIN if item.get("approvalKind") == "plugin" else ApprovalKind.EXEC
    if kind == ApprovalKind.EXEC:
        planned = request.get("systemRunPlan")
        plan: dict[str, Any] = planned if isinstance(planned, dict) else {}
        argv = request.get("commandArgv") or plan.get("argv")
        command = request.get("command") or plan.get("commandText") or " ".join(map(str, argv or []))
        arguments: Any = argv or ""
    else:
        tool = request.get("toolName") or request.get("pluginId") or "plugin"
        command = f"{tool}: {request.get('title')}" if request.get("title") else tool
        arguments = request.get("description") or ""
    return Approval(agent=agent, kind=kind, id=item["id"][:200], session_key=_text(request.get("sessionKey"), redactor),
                    command=_text(command, redactor), arguments=_text(arguments, redactor),
                    cwd=_text(request.get("cwd"), redactor), created_at=_moment(item.get("createdAtMs")),
                    expires_at=_moment(item.get("expiresAtMs")))


def _pending(agent: Agent, deadline: float) -> list[Any]:
    items: list[Any] = []
    for method in ("exec.approval.list", "plugin.approval.list"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise GatewayUnavailable("GATEWAY_RPC_TIMEOUT")
        answer = gateway_call(agent, scopes=[APPROVALS], method=method,
                              timeout=min(left, float(settings.OCC_GATEWAY_RPC_TIMEOUT_SECONDS)))
        items.extend(dict(item, approvalKind=item.get("approvalKind") or method.split(".")[0])
                     for item in (answer if isinstance(answer, list) else []) if isinstance(item, dict))
    return items


def _shaped(agent: Agent, items: list[Any]) -> list[Approval]:
    def shape(redactor: Redactor, _missing: frozenset[str]) -> list[Approval]:
        return [approval for approval in (_approval(agent, item, redactor) for item in items) if approval is not None]

    return with_redactor(delivered_secrets(agent), shape)


def approvals_pending(*, actor: Actor) -> Inbox:
    """What every running Agent the caller may answer for is waiting on, soonest expiry first."""
    agents = [agent for agent in Agent.objects.filter(agents_allowing(actor, Action.DECIDE_APPROVALS, agent=""))
              .order_by("namespace_id", "name") if runs(agent)]
    deadline = time.monotonic() + INBOX_SECONDS
    approvals: list[Approval] = []
    unreachable: list[Agent] = []
    for index, agent in enumerate(agents):
        left = deadline - time.monotonic()
        if index >= MAX_AGENTS or left <= 0.5:
            unreachable.append(agent)
            continue
        try:
            items = _pending(agent, time.monotonic() + min(left, float(settings.OCC_GATEWAY_RPC_TIMEOUT_SECONDS)))
        except (GatewayUnavailable, GatewayNotRunning, NotImplementedYet):
            unreachable.append(agent)
            continue
        approvals.extend(_shaped(agent, items))
    far = datetime.max.replace(tzinfo=UTC)
    approvals.sort(key=lambda approval: (approval.expires_at or far, approval.agent.name, approval.id))
    return Inbox(approvals=approvals, unreachable=unreachable)


def _claim(actor: Actor, agent: Agent, kind: str, approval_id: str, decision: str) -> ApprovalDecision:
    with transaction.atomic():
        ApprovalDecision.objects.filter(agent=agent, kind=kind, approval_id=approval_id,
                                        state=ApprovalDecisionState.SENDING,
                                        created_at__lt=timezone.now() - ABANDONED_CLAIM).delete()
        try:
            with transaction.atomic():
                return ApprovalDecision.objects.create(
                    namespace_id=agent.namespace_id, agent=agent, kind=kind, approval_id=approval_id,
                    decision=decision, state=ApprovalDecisionState.SENDING, decided_by=actor.id)
        except IntegrityError:
            raise AlreadyDecided() from None


def approval_decide(*, actor: Actor, namespace_id: str, agent_id: str, kind: Literal["exec", "plugin"],
                    approval_id: str, decision: Literal["approve", "deny"]) -> ApprovalDecision:
    """Answer one approval once: claimed, forwarded to the gateway, then recorded and audited."""
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    if not 0 < len(approval_id) <= APPROVAL_ID_CHARS or not approval_id.isprintable():
        raise NotFound("The Agent does not wait on this approval.")
    authorize(actor, Action.DECIDE_APPROVALS, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    if not runs(agent):
        raise GatewayNotRunning()
    claim = _claim(actor, agent, kind, approval_id, decision)
    try:
        gateway_call(agent, scopes=[APPROVALS], method=f"{kind}.approval.resolve",
                     params={"id": approval_id, "decision": GATEWAY_DECISIONS[decision]})
    except GatewayUnavailable as exc:
        claim.delete()
        if exc.rpc_code == REFUSED and exc.gateway_code == "APPROVAL_ALREADY_RESOLVED":
            raise AlreadyDecided("This approval was already answered elsewhere.") from None
        if exc.rpc_code == REFUSED:
            raise NotFound("The Agent no longer waits on this approval: it expired or was answered.") from None
        raise
    except BaseException:
        claim.delete()
        raise
    with transaction.atomic():
        ApprovalDecision.objects.filter(pk=claim.pk).update(state=ApprovalDecisionState.DECIDED)
        audit_record(actor=actor, action=DECIDED, namespace_id=agent.namespace_id, resource_kind=Kind.AGENT,
                     resource_id=agent.id, details={"approvalId": approval_id, "approvalKind": kind,
                                                    "decision": decision})
    claim.state = ApprovalDecisionState.DECIDED
    return claim
