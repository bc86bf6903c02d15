"""Deployment status (spec §1.9) and diagnostics (§2.11): reads that change nothing.

A deployment is one revision; its status is derived from the original work row
``agent_revision:<rev>:reconcile`` only after authorization, and never fabricated: a
missing row is a dependency failure. Messages are fixed per code, never driver text.

One module: a deployment's status and the Agent's runtime state (``agent_runtime``, and its
batch for the Agents list) are read from the same revision work rows through the same tables
of codes and messages; split, each half would import the other's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.functions import Now
from django.utils import timezone
from pydantic import ValidationError

from occ.documents import PluginWarning
from occ.drivers.compute import RUNTIME_CRASH_LOOP, VERIFY_CODES, DiagnosticCheck, RevisionRef, get_compute_driver
from occ.drivers.compute.base import VERIFY_EVIDENCE_CHARS, VERIFY_EVIDENCE_LINES
from occ.errors import DependencyUnavailable, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import BUDGET_EXCEEDED, AgentRevision, ControllerWork, DesiredRuntimeState, WorkJob, WorkState
from occ.models.work import revision_reconcile_key
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.revisions import revision_get
from occ.timestamps import rfc3339

SUCCESS_CODES = frozenset({"REVISION_ACTIVATED", "REVISION_ALREADY_ACTIVE"})
SAFE_CODE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
SAFE_IDENTIFIER = re.compile(r"^[A-Za-z0-9._~:@-]{1,64}$")
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
PLUGIN_ID = re.compile(r"^[A-Za-z0-9._~:@-]{1,253}$")
DIAGNOSTIC_STATES = frozenset({"succeeded", "failed", "unknown"})
MAX_CHECKS = 32

FAILURE_MESSAGES = {
    "CONVERGENCE_DEADLINE_EXCEEDED": "Deployment convergence deadline exceeded.",
    "REVISION_SUPERSEDED": "Deployment was superseded by a newer revision.",
    "REVISION_STOPPED": "Deployment ended because the Agent was stopped.",
    "AUTHORIZATION_DENIED": "Deployment stopped because its initiator or the Agent lost a required permission.",
    "ACTOR_REVOKED": "Deployment stopped because its initiator no longer exists.",
    "LEASE_EXPIRED": "Deployment stopped after its worker repeatedly stopped responding.",
    "DEPENDENCY_UNAVAILABLE": "Deployment stopped because a service it depends on stayed unavailable.",
    "SECRET_UNAVAILABLE": "Deployment stopped because a Secret it delivers no longer exists.",
    "COMPUTE_DRIVER_CHANGED": "Deployment stopped because the compute backend changed since it was admitted.",
    "NAMESPACE_NOT_READY": "Deployment stopped because the Namespace is not ready.",
    "RUNTIME_STARTUP_FAILED": "The runtime failed to start.",
    "GATEWAY_EXITED": "The Agent's gateway exited while starting this revision; it is not running.",
    "GATEWAY_START_TIMEOUT": "The Agent's gateway did not become ready in time; it is not running.",
    "GATEWAY_SPAWN_FAILED": "The Agent's gateway process could not be started.",
    "RUNTIME_NOT_INSTALLED": "The OpenClaw runtime is not installed where the Agent runs.",
    "RUNTIME_AUTHENTICATION_FAILED": "The runtime could not authenticate with its model provider.",
    "AGENT_GATEWAY_UNAVAILABLE": "The Agent's gateway stayed unavailable.",
    # Checks before cutover (occ.drivers.compute.base.VERIFY_CODES): the serving revision kept serving.
    "RUNTIME_CONFIG_REFUSED": ("The runtime refused this revision's configuration. The previous revision keeps "
                               "serving; fix the configuration, then deploy again."),
    "RUNTIME_START_FAILED": ("A test gateway with this revision did not start. The previous revision keeps "
                             "serving; see the evidence, then deploy again."),
    "MODEL_CREDENTIAL_REFUSED": ("The model provider refused this revision's API key. The previous revision keeps "
                                 "serving; fix the model key Secret, then deploy again."),
    "MODEL_UNREACHABLE": ("A test gateway with this revision could not get an answer from its model (unknown "
                          "model or provider unreachable). The previous revision keeps serving."),
    "SMOKE_TEST_FAILED": ("A smoke conversation did not get the expected reply from this revision. The previous "
                          "revision keeps serving."),
    "RUNTIME_CRASH_LOOP": ("The Agent's gateway kept exiting on this revision without becoming ready (a crash "
                           "loop). See its last exit status and log lines, fix the cause, then deploy again."),
    "ROLLED_BACK": ("This revision did not come up after it replaced the previous one (a crash loop, or not ready "
                    "in time), so OCC gave the Agent back to the previous revision, which serves again. See the "
                    "evidence, fix the cause, then deploy again."),
    "REVISION_FINALIZATION_INCOMPLETE": ("The revision is the Agent's active one, but starting it on the compute "
                                         "backend or retiring the previous revision kept failing. Check the "
                                         "backend, then retry the finalization."),
}
DEFAULT_FAILURE_MESSAGE = "Deployment reconciliation failed."

PENDING_MESSAGES = {
    "RECONCILIATION_PENDING": "Deployment reconciliation is pending.",
    "REVISION_INCOMPLETE": "Waiting for the runtime to become ready.",
    "REVISION_UNSCHEDULABLE": "The runtime cannot be scheduled yet.",
    "WORKSPACE_NODE_PENDING": "Waiting for the workspace node.",
    "WORKSPACE_NODE_BINDING_PENDING": "Waiting for the workspace node binding.",
    "DEPENDENCY_UNAVAILABLE": "A service the deployment depends on is unavailable; it will be retried.",
    "AGENT_GATEWAY_UNAVAILABLE": "The Agent's gateway is unavailable; it will be retried.",
    "KUBERNETES_API_UNAVAILABLE": "The Kubernetes API is unavailable; it will be retried.",
    "ACTIVE_REVISION_CHANGED": "The active revision changed meanwhile; it will be retried.",
    "LEASE_EXPIRED": "A worker stopped responding; the deployment will be retried.",
    "ACTIVE_REVISION_RECOVERY": "Recovering an interrupted activation.",
    "REVISION_FINALIZATION_INCOMPLETE": "The revision is active; finishing its activation.",
    "GATEWAY_EXITED": "The Agent's gateway exited while starting this revision; it will be retried.",
    "GATEWAY_START_TIMEOUT": "The Agent's gateway did not become ready in time; it will be retried.",
    "GATEWAY_SPAWN_FAILED": "The Agent's gateway process could not be started; it will be retried.",
    "RUNTIME_NOT_INSTALLED": "The OpenClaw runtime is not installed where the Agent runs; it will be retried.",
}
# Attempts of an active revision's work that leave its runtime on its way up, not down.
STARTING_CODES = frozenset({"RECONCILIATION_PENDING", "REVISION_INCOMPLETE", "REVISION_UNSCHEDULABLE",
                            "WORKSPACE_NODE_PENDING", "WORKSPACE_NODE_BINDING_PENDING", "ACTIVE_REVISION_CHANGED",
                            "ACTIVE_REVISION_RECOVERY", "REVISION_FINALIZATION_INCOMPLETE", "LEASE_EXPIRED"})


@dataclass(frozen=True)
class DeploymentStatus:
    deployment_id: str
    namespace_id: str
    agent_id: str
    status: str
    error: dict[str, Any] | None
    warnings: list[PluginWarning]
    progress: dict[str, Any] | None


def deployment_status_of(work: ControllerWork, *, now: datetime | None = None) -> tuple[str, bool]:
    """(public status, terminal) derived from the work row alone."""
    now = now or timezone.now()
    if work.state == WorkState.SUCCEEDED:
        return ("succeeded" if work.reason_code in SUCCESS_CODES else "failed"), True
    if work.state == WorkState.FAILED_PERMANENT:
        return "failed", True
    if work.state == WorkState.CLAIMED and work.lease_expires_at is not None and work.lease_expires_at > now:
        return "running", False
    return "queued", False


def _safe_code(code: str | None, fallback: str) -> str:
    return code if code and SAFE_CODE.fullmatch(code) else fallback


def _runtime_failure(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    failure: dict[str, Any] = {}
    for key in ("component", "check", "code"):
        item = value.get(key)
        if not isinstance(item, str) or not SAFE_IDENTIFIER.fullmatch(item):
            return None
        failure[key] = item
    checked_at = value.get("checkedAt")
    if not isinstance(checked_at, str) or len(checked_at) > 64:
        return None
    failure["checkedAt"] = checked_at
    cause = value.get("cause")
    if isinstance(cause, str) and SAFE_IDENTIFIER.fullmatch(cause):
        failure["cause"] = cause
    return {"component": failure["component"], "check": failure["check"], "checkedAt": failure["checkedAt"],
            "code": failure["code"], **({"cause": failure["cause"]} if "cause" in failure else {})}


def _error_data(code: str, result_data: Any) -> dict[str, Any] | None:
    """Only the allow-listed shapes round-trip; anything else is omitted."""
    if not isinstance(result_data, dict):
        return None
    failure = _runtime_failure(result_data.get("runtimeFailure"))
    if code == "CONVERGENCE_DEADLINE_EXCEEDED":
        timeout = result_data.get("timeoutMs")
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0:
            return None
        return {"timeoutMs": timeout, **({"runtimeFailure": failure} if failure else {})}
    if code == "RUNTIME_MODEL_PROBE_FAILED" and failure and "cause" in failure:
        return {"runtimeFailure": failure}
    if code in VERIFY_CODES:
        return _verification(result_data.get("verification"))
    if code == RUNTIME_CRASH_LOOP:
        return _crash_loop(result_data.get("crashLoop"))
    if code == "ROLLED_BACK":
        return _rollback(result_data)
    return None


def _rollback(result_data: dict[str, Any]) -> dict[str, Any] | None:
    """Why a revision was rolled back, to which revision, and a crash loop's evidence."""
    value = result_data.get("rollback")
    if not isinstance(value, dict):
        return None
    reason, restored, number = value.get("reason"), value.get("restoredRevisionId"), value.get("restoredRevision")
    if not (isinstance(reason, str) and SAFE_CODE.fullmatch(reason) and isinstance(restored, str)
            and SAFE_IDENTIFIER.fullmatch(restored) and isinstance(number, int) and not isinstance(number, bool)):
        return None
    data: dict[str, Any] = {"rollback": {"reason": reason, "restoredRevisionId": restored,
                                         "restoredRevision": number}}
    return data | (_crash_loop(result_data.get("crashLoop")) or {})


def _crash_loop(value: Any) -> dict[str, Any] | None:
    """A crash loop's evidence: the last exit status, the restarts and the (driver-redacted)
    last log lines, bounded and stripped of control characters."""
    if not isinstance(value, dict):
        return None
    status, restarts = value.get("exitStatus"), value.get("restarts")
    lines = [CONTROL_CHARACTERS.sub("", line)[:VERIFY_EVIDENCE_CHARS]
             for line in (value.get("evidence") or [])[:VERIFY_EVIDENCE_LINES] if isinstance(line, str)]
    return {"crashLoop": {
        "exitStatus": status if isinstance(status, int) and not isinstance(status, bool) else None,
        "restarts": restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else 0,
        "evidence": lines}}


def _verification(value: Any) -> dict[str, Any] | None:
    """The evidence of a check before cutover: which check, which ran, and the lines the driver
    returned (already redacted by it), bounded and stripped of control characters."""
    if not isinstance(value, dict) or not isinstance(value.get("check"), str):
        return None
    check = value["check"]
    if not SAFE_IDENTIFIER.fullmatch(check):
        return None
    ran = [c for c in value.get("checks") or [] if isinstance(c, str) and SAFE_IDENTIFIER.fullmatch(c)]
    lines = [CONTROL_CHARACTERS.sub("", line)[:VERIFY_EVIDENCE_CHARS]
             for line in (value.get("evidence") or [])[:VERIFY_EVIDENCE_LINES] if isinstance(line, str)]
    return {"verification": {"check": check, "checks": ran, "evidence": lines}}


def _error(work: ControllerWork) -> dict[str, Any]:
    code = _safe_code(work.reason_code, "UNKNOWN_FAILURE")
    error: dict[str, Any] = {"code": code, "message": FAILURE_MESSAGES.get(code, DEFAULT_FAILURE_MESSAGE)}
    data = _error_data(code, work.result_data)
    if data is not None:
        error["data"] = data
    return error


def _warnings(result_data: Any) -> list[PluginWarning]:
    """The warnings a finished deployment recorded, each once; anything malformed is dropped."""
    raw = result_data.get("warnings") if isinstance(result_data, dict) else None
    found: list[PluginWarning] = []
    for item in raw if isinstance(raw, list) else []:
        try:
            warning = PluginWarning.model_validate(item)
        except ValidationError:
            continue
        if PLUGIN_ID.fullmatch(warning.plugin_id) and warning not in found:
            found.append(warning)
    return found


def _progress(work: ControllerWork, status: str) -> dict[str, Any]:
    code, at = work.last_attempt_code, work.last_attempt_at
    last_attempt = None
    if code and at:
        code = code if code in PENDING_MESSAGES else "RECONCILIATION_PENDING"
        last_attempt = {"at": rfc3339(at), "code": code, "message": PENDING_MESSAGES[code]}
    return {"lastAttempt": last_attempt, "nextAttemptAt": rfc3339(work.available_at) if status == "queued" else None}


def deployment_status(revision: AgentRevision, work: ControllerWork, *,
                      now: datetime | None = None) -> DeploymentStatus:
    status, terminal = deployment_status_of(work, now=now)
    return DeploymentStatus(
        deployment_id=revision.id, namespace_id=revision.namespace_id, agent_id=revision.agent_id, status=status,
        error=_error(work) if status == "failed" else None,
        warnings=_warnings(work.result_data) if status == "succeeded" else [],
        progress=None if terminal else _progress(work, status),
    )


def deployment_get(*, actor: Actor, namespace_id: str, agent_id: str, revision_id: str) -> DeploymentStatus:
    """``agent_revision:read`` on the exact revision; the work row is read only after it."""
    revision = revision_get(actor=actor, namespace_id=namespace_id, agent_id=agent_id, revision_id=revision_id)
    status = deployment_statuses([revision]).get(revision.id)
    if status is None:
        raise DependencyUnavailable("The deployment record is unavailable. Try again shortly.")
    return status


def deployment_statuses(revisions: Sequence[AgentRevision]) -> dict[str, DeploymentStatus]:
    """The deployment status of each revision, in one query, keyed by revision id.

    For revisions the caller has already read through ``revision_list`` (which authorizes
    each one); a revision whose work row is missing is left out, never given a made-up status.
    """
    by_key = {revision_reconcile_key(revision.id): revision for revision in revisions}
    if not by_key:
        return {}
    # Leases are measured on the database clock: compare with it, not with ours.
    works = ControllerWork.objects.filter(idempotency_key__in=list(by_key),
                                          revision_id__in=[r.id for r in revisions]).annotate(db_now=Now())
    statuses = {}
    for work in works:
        revision = by_key[work.idempotency_key]
        if work.agent_id == revision.agent_id:
            statuses[revision.id] = deployment_status(revision, work, now=work.db_now)  # type: ignore[attr-defined]
    return statuses


# --- diagnostics --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Diagnostics:
    revision_id: str
    observed_at: datetime
    checks: list[dict[str, Any]]


def _check_wire(check: DiagnosticCheck) -> dict[str, Any] | None:
    if not (SAFE_IDENTIFIER.fullmatch(check.component) and SAFE_IDENTIFIER.fullmatch(check.check)
            and check.state in DIAGNOSTIC_STATES):
        return None
    wire: dict[str, Any] = {"component": check.component, "check": check.check, "state": check.state,
                            "checkedAt": check.checked_at if isinstance(check.checked_at, str) else None}
    if check.code and SAFE_CODE.fullmatch(check.code):
        wire["code"] = check.code
    return wire


def deployment_diagnose(*, actor: Actor, namespace_id: str, agent_id: str, revision_id: str) -> Diagnostics:
    """Read-only evidence from the compute driver; nothing is written, not even audit.

    Needs ``agent:operate`` and ``agent:read`` on the Agent and ``agent_revision:read`` on
    the revision. 503 when the driver cannot give evidence.
    """
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    revision = AgentRevision.objects.filter(namespace=namespace, agent=agent, id=revision_id).first()
    if revision is None:
        raise NotFound("The revision does not exist.")
    for action in (Action.OPERATE, Action.READ):
        authorize(actor, action, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    authorize(actor, Action.READ, Kind.AGENT_REVISION, namespace_id=namespace.id, resource_id=revision.id,
              parent_id=agent.id)
    driver = get_compute_driver()
    spec = revision.spec
    if spec.compute is not None and not spec.pinned_to(driver.pin):  # unpinned: any driver may look
        raise DependencyUnavailable("The compute backend that ran this revision is not available.")
    ref = RevisionRef(id=revision.id, namespace_id=revision.namespace_id, agent_id=agent.id,
                      number=revision.number, spec=spec)
    observed_at = timezone.now()
    try:
        checks = driver.diagnose(ref)
    except Exception as exc:  # driver trouble of any kind: no evidence, and no driver text
        raise DependencyUnavailable("The compute backend could not report on this deployment.") from exc
    wires = [wire for wire in (_check_wire(c) for c in checks[:MAX_CHECKS]) if wire is not None]
    return Diagnostics(revision_id=revision.id, observed_at=observed_at, checks=wires)


# --- the Agent's runtime ----------------------------------------------------------------------


@dataclass(frozen=True)
class AgentRuntime:
    """Whether the Agent's gateway serves its active revision, as the worker last saw it.

    ``state``: ``running`` (the active revision's activation succeeded), ``starting`` (it is
    on its way), ``failed`` (it did not come up: the gateway is not running), ``stopping``
    (desired stopped, the stop work still to finish), ``stopped`` (desired stopped, and no stop
    pending) or ``none`` (no revision is active). ``reason`` is a fixed message per
    safe code, never driver or runtime text. ``paused``: stopped by a budget (the Agent's
    ``stopped_reason``), which the console shows instead of a plain "Stopped".
    """

    state: str
    revision_id: str | None = None
    revision_number: int | None = None
    retrying: bool = False
    reason: dict[str, str] | None = None
    paused: bool = False

    @property
    def down(self) -> bool:
        return self.state == "failed"


def _runtime_reason(code: str | None, *, retrying: bool) -> dict[str, str]:
    code = _safe_code(code, "UNKNOWN_FAILURE")
    messages = PENDING_MESSAGES if retrying else FAILURE_MESSAGES
    return {"code": code, "message": messages.get(code, DEFAULT_FAILURE_MESSAGE)}


class RuntimeSubject(Protocol):
    """What ``agent_runtime`` reads of an Agent (the model, or a list's summary of it)."""

    @property
    def id(self) -> str: ...
    @property
    def desired_runtime_state(self) -> str: ...
    @property
    def active_revision_id(self) -> str | None: ...
    @property
    def stopped_reason(self) -> str: ...


def agent_runtime(agent: RuntimeSubject) -> AgentRuntime:
    """The runtime state of an Agent the caller has already read (``agent_get``): derived
    from the work row of its active revision, in one query."""
    if agent.desired_runtime_state == DesiredRuntimeState.STOPPED:
        # Stopped once the stop work is done: until then the gateway may well still serve (and
        # ``occ agents stop`` waits for this).
        stopping = ControllerWork.objects.filter(agent_id=agent.id, job=WorkJob.AGENT_STOP,
                                                 state__in=(WorkState.QUEUED, WorkState.CLAIMED)).exists()
        return _runtime_of(agent, stopping=stopping, works=[])
    works = _revision_works([agent.id])
    if agent.active_revision_id is not None:
        works = works.filter(revision_id=agent.active_revision_id)
    return _runtime_of(agent, stopping=False, works=list(works.order_by("-created_at")[:1]))


def agent_runtimes(agents: Sequence[RuntimeSubject]) -> dict[str, AgentRuntime]:
    """``agent_runtime`` of each of ``agents`` (already read), in two queries however many."""
    stopped = [agent.id for agent in agents if agent.desired_runtime_state == DesiredRuntimeState.STOPPED]
    stopping = set(ControllerWork.objects.filter(agent_id__in=stopped, job=WorkJob.AGENT_STOP, state__in=(
        WorkState.QUEUED, WorkState.CLAIMED)).values_list("agent_id", flat=True)) if stopped else set()
    running = [agent.id for agent in agents if agent.id not in stopped]
    works: dict[str, list[ControllerWork]] = {}
    if running:
        for work in _revision_works(running).order_by("-created_at"):
            works.setdefault(str(work.agent_id), []).append(work)
    return {agent.id: _runtime_of(agent, stopping=agent.id in stopping, works=works.get(agent.id, []))
            for agent in agents}


def _revision_works(agent_ids: list[str]) -> QuerySet[ControllerWork]:
    """The revision work rows of the Agents, each with its revision's number."""
    return ControllerWork.objects.filter(agent_id__in=agent_ids, job=WorkJob.REVISION).annotate(
        revision_number=Subquery(AgentRevision.objects.filter(id=OuterRef("revision_id")).values("number")[:1]))


def _runtime_of(agent: RuntimeSubject, *, stopping: bool, works: Sequence[ControllerWork]) -> AgentRuntime:
    """The rule: ``works`` are the Agent's revision work rows, newest first (those of other
    revisions than the active one are passed over)."""
    if agent.desired_runtime_state == DesiredRuntimeState.STOPPED:
        if stopping:
            return AgentRuntime(state="stopping", revision_id=agent.active_revision_id)
        return AgentRuntime(state="stopped", paused=agent.stopped_reason == BUDGET_EXCEEDED)
    if agent.active_revision_id is None:
        # The first deployment, or a start (``agent_start``), publishes its revision once the
        # gateway is up: until then, and if it fails, its own work row says how the Agent is
        # doing ("Not deployed" only while no revision was ever asked for).
        work = works[0] if works else None
        if work is None:
            return AgentRuntime(state="none")
    else:
        # The newest work of the active revision: its deployment, or a later start of it.
        work = next((w for w in works if w.revision_id == agent.active_revision_id), None)
    if work is None:
        return AgentRuntime(state="starting", revision_id=agent.active_revision_id)
    found = AgentRuntime(state="starting", revision_id=work.revision_id,
                         revision_number=work.revision_number)  # type: ignore[attr-defined]
    if work.state == WorkState.SUCCEEDED:
        if work.reason_code in SUCCESS_CODES:
            return replace(found, state="running")
        return replace(found, state="failed", reason=_runtime_reason(work.reason_code, retrying=False))
    if work.state == WorkState.FAILED_PERMANENT:
        return replace(found, state="failed", reason=_runtime_reason(work.reason_code, retrying=False))
    code = work.last_attempt_code
    if code is None or code in STARTING_CODES:
        return found
    return replace(found, state="failed", retrying=True, reason=_runtime_reason(code, retrying=True))
