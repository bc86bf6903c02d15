"""Revision work ``agent_revision:<rev>:reconcile`` (spec §6.3-6.5).

Order: superseded and stopped checks (no driver call), re-authorization, runtime
credentials, ``prepare_revision`` (not ready: defer), a fenced compare-and-set of the
Agent's active revision from the one seen before preparing, committed with its one
``openclaw.agents.revision.activate`` audit event (the pointer and its evidence together or
not at all), then ``activate_revision`` and ``retire_revision`` of the predecessor, and a
fenced completion carrying one ``openclaw.agents.revision.finalize`` event. A failure after
publication requeues as
``REVISION_FINALIZATION_INCOMPLETE`` (or, when the runtime did not come up, with the
driver's code, e.g. ``GATEWAY_EXITED``, so the Agent shows its gateway is down); the next
attempt finds the candidate already active, repeats activation and retirement (both
idempotent) and finishes ``REVISION_ALREADY_ACTIVE``. When the attempts run out the row
fails ``REVISION_FINALIZATION_INCOMPLETE`` with the revision active: the deployment reads
failed, the Agent's runtime says why, and ``deployment_finalization_retry`` (API, admin)
requeues it.
"""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.utils import timezone

from occ.documents import PluginWarning
from occ.drivers.compute import (
    VERIFY_CODES,
    CandidateVerdict,
    ComputeDriver,
    ComputeError,
    ComputeUnknownOutcome,
    Readiness,
    RevisionContext,
    RevisionRef,
)
from occ.drivers.compute.base import RUNTIME_CRASH_LOOP, VERIFY_EVIDENCE_CHARS, VERIFY_EVIDENCE_LINES
from occ.iam.actor import Actor
from occ.iam.permissions import Kind
from occ.models import (
    Agent,
    AgentRevision,
    AgentStatus,
    AuditEvent,
    AuditOutcome,
    ControllerWork,
    DesiredRuntimeState,
    NamespaceStatus,
    WorkState,
)
from occ.selectors.runtime import agent_ref
from occ.services.agent_logs import delivered_secrets
from provisioning.jobs.context import (
    Claim,
    JobRefused,
    authority,
    compute_driver,
    lifecycle_audit,
    reauthorize,
    revision_context,
    revision_needs,
    revision_ref,
)
from provisioning.jobs.credentials import credentials_ref, ensure_credentials
from provisioning.outcomes import ClaimLost, Complete, Defer, Fail, Outcome, Retry

logger = logging.getLogger(__name__)

REVISION_ACTIVATED = "REVISION_ACTIVATED"
REVISION_ALREADY_ACTIVE = "REVISION_ALREADY_ACTIVE"
REVISION_SUPERSEDED = "REVISION_SUPERSEDED"
REVISION_STOPPED = "REVISION_STOPPED"
FINALIZATION_INCOMPLETE = "REVISION_FINALIZATION_INCOMPLETE"
ACTIVE_REVISION_CHANGED = "ACTIVE_REVISION_CHANGED"
SAFE_CODE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
CRASH_LOG_LINES = 60
ROLLED_BACK = "ROLLED_BACK"
# What a published revision that does not come up is rolled back for (unless the Agent opted out).
ROLLBACK_CODES = frozenset({RUNTIME_CRASH_LOOP, "GATEWAY_START_TIMEOUT"})


class ActivationLost(RuntimeError):
    """The candidate stopped being active before its completion committed (rolls it back)."""


class RuntimeDown(Exception):
    """Activation failed with the driver's safe code: the runtime is not serving the revision."""

    def __init__(self, code: str, *, retryable: bool) -> None:
        super().__init__(code)
        self.code, self.retryable = code, retryable


def _activate(driver: ComputeDriver, ref: RevisionRef, context: RevisionContext) -> Readiness:
    try:
        return driver.activate_revision(ref, context)
    except ComputeUnknownOutcome:
        raise  # the gateway may well be up: the next attempt observes it
    except ComputeError as exc:
        if not SAFE_CODE.fullmatch(exc.code):
            raise
        raise RuntimeDown(exc.code, retryable=exc.retryable) from exc


def run(claim: Claim) -> Outcome:
    work = claim.work
    revision = AgentRevision.objects.filter(id=work.revision_id, agent_id=work.agent_id,
                                            namespace_id=work.namespace_id).first()
    agent = Agent.objects.select_related("namespace").filter(id=work.agent_id, namespace_id=work.namespace_id).first()
    if revision is None or agent is None:
        return Complete("SUPERSEDED_TARGET")
    namespace = agent.namespace
    if namespace.is_tombstoned or namespace.status in (NamespaceStatus.FAILED, NamespaceStatus.DELETING):
        return Fail("NAMESPACE_NOT_READY")
    if namespace.status != NamespaceStatus.READY:
        return Defer("RECONCILIATION_PENDING")
    driver = compute_driver()
    if not revision.spec.pinned_to(driver.pin):
        return Fail("COMPUTE_DRIVER_CHANGED")
    already_active = agent.active_revision_id == revision.id
    if not already_active and _superseded(agent, revision):
        return Complete(REVISION_SUPERSEDED)
    if not _wants_running(agent):
        # A stop (or delete) overlapped: never activate. An already published candidate is
        # the stop work's business.
        return Complete(REVISION_STOPPED) if already_active else _stop_candidate(claim, driver, agent, revision)
    if denial := _guard(claim, revision):
        return denial
    if already_active:
        try:
            context = revision_context(revision)
        except JobRefused as refused:
            return Fail(refused.code)
        # The predecessor is no longer known: retire every older revision (idempotent).
        older = list(AgentRevision.objects.filter(agent=agent, number__lt=revision.number).order_by("-number"))
        return _finalize(claim, driver, agent, revision, context, predecessors=older, warnings=[],
                         already_active=True)
    return _prepare_and_publish(claim, driver, agent, revision)


def _wants_running(agent: Agent) -> bool:
    return agent.status == AgentStatus.ACTIVE and agent.desired_runtime_state == DesiredRuntimeState.RUNNING


def _superseded(agent: Agent, revision: AgentRevision) -> bool:
    """A newer revision is active, or admitted and still on its way: this one would only be
    replaced again, so it never replaces anything."""
    active_number = (AgentRevision.objects.filter(id=agent.active_revision_id).values_list("number", flat=True)
                     .first()) if agent.active_revision_id else None
    if active_number is not None and active_number > revision.number:
        return True
    newer = AgentRevision.objects.filter(agent=agent, number__gt=revision.number).values("id")
    return ControllerWork.objects.filter(agent_id=agent.id, revision_id__in=newer,
                                         state__in=[WorkState.QUEUED, WorkState.CLAIMED]).exists()


def _guard(claim: Claim, revision: AgentRevision) -> Fail | None:
    """Before every driver call: the actor and the Agent's principal still hold their grants,
    and the lease is renewed."""
    if denial := reauthorize(claim.work, revision_needs(revision), agent_id=revision.agent_id):
        return denial
    claim.renew()
    return None


def _stop_candidate(claim: Claim, driver: ComputeDriver, agent: Agent, revision: AgentRevision) -> Outcome:
    if denial := _guard(claim, revision):
        return denial
    driver.deactivate_revision(revision_ref(revision, agent))
    if denial := reauthorize(claim.work, revision_needs(revision), agent_id=agent.id):
        return denial
    return Complete(REVISION_STOPPED)


def _prepare_and_publish(claim: Claim, driver: ComputeDriver, agent: Agent, revision: AgentRevision) -> Outcome:
    previous_id = agent.active_revision_id
    if not driver.runtime_credentials_status(credentials_ref(agent, driver)):
        if denial := _guard(claim, revision):
            return denial
        driver.provision_runtime_credentials(ensure_credentials(agent, driver))
    try:
        context = revision_context(revision)
    except JobRefused as refused:
        return Fail(refused.code)
    ref = revision_ref(revision, agent)
    if denial := _guard(claim, revision):
        return denial
    readiness = driver.prepare_revision(ref, context)
    if not _names(readiness, ref):
        return Fail("INVALID_COMPUTE_RESULT")
    if not readiness.ready:
        return Defer(_pending_code(readiness.pending_reason))
    warnings = _warnings(readiness, revision)
    if previous_id is not None and settings.OCC_VERIFY_BEFORE_CUTOVER:
        # A serving revision exists: prove the candidate in isolation before it is touched.
        if denial := _guard(claim, revision):
            return denial
        verdict = driver.verify_candidate(ref, context, smoke=revision.spec.smoke_conversations or ())
        if not verdict.passed:
            return _refuse_candidate(claim, driver, agent, revision, verdict)
    actor, denial = authority(claim.work, revision_needs(revision), agent_id=agent.id)
    if denial:
        return denial
    with claim.fenced():
        current = Agent.objects.select_for_update().filter(id=agent.id).first()
        still_wanted = current is not None and _wants_running(current)
        published = still_wanted and Agent.objects.filter(
            id=agent.id, active_revision_id=previous_id, status=AgentStatus.ACTIVE,
            desired_runtime_state=DesiredRuntimeState.RUNNING,
        ).update(active_revision_id=revision.id, updated_at=timezone.now()) == 1
        if published:
            _audit_activation(claim.work, actor, revision, previous_id, warnings)
    if current is None:
        return Complete("SUPERSEDED_TARGET")
    if not still_wanted:
        return _stop_candidate(claim, driver, current, revision)
    if not published:
        return Retry(ACTIVE_REVISION_CHANGED)
    predecessors = list(AgentRevision.objects.filter(id=previous_id)) if previous_id else []
    return _finalize(claim, driver, current, revision, context, predecessors=predecessors, warnings=warnings,
                     already_active=False)


def _refuse_candidate(claim: Claim, driver: ComputeDriver, agent: Agent, revision: AgentRevision,
                      verdict: CandidateVerdict) -> Outcome:
    """A failed check before cutover: the active pointer never moved and the serving gateway
    was never touched. The candidate's staged files are removed and the deployment fails with
    the check's code and its (already redacted) evidence, audited with the failure."""
    if verdict.code not in VERIFY_CODES:
        return Fail("INVALID_COMPUTE_RESULT")
    code = str(verdict.code)
    if denial := _guard(claim, revision):
        return denial
    driver.retire_revision(revision_ref(revision, agent))
    evidence = {"check": verdict.check or "unknown", "checks": list(verdict.checks),
                "evidence": [line[:VERIFY_EVIDENCE_CHARS] for line in verdict.evidence[:VERIFY_EVIDENCE_LINES]]}
    actor, denial = authority(claim.work, revision_needs(revision), agent_id=agent.id)
    if denial:
        return denial
    work = claim.work
    logger.warning("revision %s: refused before cutover (%s)", revision.id, code)
    return Fail(code, result_data={"verification": evidence}, effects=lambda: lifecycle_audit(
        work, actor=actor, action="openclaw.agents.revision.refuse", resource_kind=Kind.AGENT,
        resource_id=revision.agent_id, outcome=AuditOutcome.FAILED,
        details={"revisionId": revision.id, "revision": revision.number, "reasonCode": code,
                 "check": evidence["check"], "activeRevisionId": agent.active_revision_id}))


def _finalize(claim: Claim, driver: ComputeDriver, agent: Agent, revision: AgentRevision, context: RevisionContext,
              *, predecessors: list[AgentRevision], warnings: list[PluginWarning], already_active: bool) -> Outcome:
    """After publication: activate, retire the predecessors, then complete with one audit."""
    ref = revision_ref(revision, agent)
    try:
        if denial := _guard(claim, revision):
            return denial
        readiness = _activate(driver, ref, context)
        if not _names(readiness, ref):
            raise ValueError("the compute driver answered for another revision")
        if not readiness.ready:
            return Defer(_pending_code(readiness.pending_reason))
        warnings = _merge(warnings, _warnings(readiness, revision))
        for predecessor in predecessors:
            if denial := _guard(claim, revision):
                return denial
            driver.retire_revision(revision_ref(predecessor, agent))
    except ClaimLost:
        raise
    except RuntimeDown as down:
        # The runtime did not come up on the published revision: its gateway is not running.
        # The driver's safe code is what the Agent's status shows (occ.selectors.deployments).
        logger.warning("revision %s: activation failed (%s)", revision.id, down.code)
        evidence: dict[str, object] = (
            {"crashLoop": crash_loop_evidence(driver, agent)} if down.code == RUNTIME_CRASH_LOOP else {})
        if down.code in ROLLBACK_CODES:
            rolled_back = _roll_back(claim, driver, agent, revision, reason=down.code, evidence=evidence)
            if rolled_back is not None:
                return rolled_back
        if evidence:
            return Fail(down.code, result_data=evidence)
        return Retry(down.code) if down.retryable else Fail(down.code)
    except Exception as exc:  # anything after publication is finished by the next attempt
        logger.warning("revision %s: finalization incomplete (%s)", revision.id, type(exc).__name__)
        return Retry(FINALIZATION_INCOMPLETE)
    actor, denial = authority(claim.work, revision_needs(revision), agent_id=agent.id)
    if denial:
        return denial
    code = REVISION_ALREADY_ACTIVE if already_active else REVISION_ACTIVATED
    work = claim.work
    predecessor_ids = [p.id for p in predecessors]
    return Complete(code, result_data={"warnings": [warning.document() for warning in warnings]},
                    effects=lambda: _complete_activation(work, actor, revision, predecessor_ids, warnings, code))


def _previously_active(revision: AgentRevision) -> AgentRevision | None:
    """The revision this one replaced as active: named by the event committed with the pointer
    move that made this one active (``openclaw.agents.revision.activate``)."""
    event = (AuditEvent.objects.filter(action="openclaw.agents.revision.activate", resource_id=revision.agent_id,
                                       details__revisionId=revision.id).order_by("-occurred_at").first())
    previous_id = event.details.get("previousRevisionId") if event is not None else None
    if not isinstance(previous_id, str):
        return None
    return AgentRevision.objects.filter(id=previous_id, agent_id=revision.agent_id,
                                        number__lt=revision.number).first()


def _roll_back(claim: Claim, driver: ComputeDriver, agent: Agent, revision: AgentRevision, *, reason: str,
               evidence: dict[str, object]) -> Outcome | None:
    """The published revision did not come up (a crash loop, or not ready within its bound):
    reactivate the one it replaced, unless the Agent opted out. The previous revision's gateway
    is started first; then, in the fenced completion, the pointer moves back by compare-and-set
    (only from this revision: a newer deploy or a stale worker cannot be overridden) with its
    ``openclaw.agents.revision.rollback`` event. ``None``: no rollback (opted out, nothing to
    return to, or the previous revision would not start either): the caller fails as before."""
    if not agent.rollback_on_failure:
        return None
    previous = _previously_active(revision)
    if previous is None:
        return None
    if denial := _guard(claim, revision):
        return denial
    try:
        readiness = driver.activate_revision(revision_ref(previous, agent), revision_context(previous))
    except (ComputeError, JobRefused) as exc:
        logger.warning("revision %s: rollback to %s failed (%s)", revision.id, previous.id,
                       getattr(exc, "code", type(exc).__name__))
        return None
    actor, denial = authority(claim.work, revision_needs(revision), agent_id=agent.id)
    if denial:
        return denial
    work = claim.work
    logger.warning("revision %s: rolled back to %s (%s)", revision.id, previous.id, reason)

    def move_back() -> None:
        moved = Agent.objects.filter(id=agent.id, active_revision_id=revision.id).update(
            active_revision_id=previous.id, updated_at=timezone.now())
        if moved != 1:
            raise ActivationLost(revision.id)
        lifecycle_audit(work, actor=actor, action="openclaw.agents.revision.rollback", resource_kind=Kind.AGENT,
                        resource_id=revision.agent_id, outcome=AuditOutcome.FAILED,
                        details={"revisionId": revision.id, "revision": revision.number, "reasonCode": reason,
                                 "restoredRevisionId": previous.id, "restoredRevision": previous.number,
                                 "restoredReady": readiness.ready})

    return Fail(ROLLED_BACK, result_data={"rollback": {"reason": reason, "restoredRevisionId": previous.id,
                                                       "restoredRevision": previous.number}, **evidence},
                effects=move_back)


def crash_loop_evidence(driver: ComputeDriver, agent: Agent) -> dict[str, object]:
    """What a person needs about a crash loop: the gateway's last exit status, its automatic
    restarts, and the last lines of its output (redacted by the driver of every Secret it was
    given). Best effort: a driver that cannot say leaves the part out."""
    evidence: dict[str, object] = {"exitStatus": None, "restarts": 0, "evidence": []}
    try:
        seen = driver.observe_runtime(agent_ref(agent))
        evidence |= {"exitStatus": seen.exit_status, "restarts": seen.restarts}
        page = driver.read_logs(agent_ref(agent), secrets=delivered_secrets(agent), max_lines=CRASH_LOG_LINES)
        lines = [line for line in page.lines if line.strip()][-VERIFY_EVIDENCE_LINES:]
        evidence["evidence"] = [line[:VERIFY_EVIDENCE_CHARS] for line in lines]
    except ComputeError as exc:
        logger.info("revision evidence of %s's crash loop incomplete (%s)", agent.id, exc.code)
    return evidence


def _audit_activation(work: ControllerWork, actor: Actor | None, revision: AgentRevision, previous_id: str | None,
                      warnings: list[PluginWarning]) -> None:
    """In the fenced transaction that moves the Agent's active pointer: its one event."""
    lifecycle_audit(work, actor=actor, action="openclaw.agents.revision.activate", resource_kind=Kind.AGENT,
                    resource_id=revision.agent_id,
                    details={"revisionId": revision.id, "revision": revision.number,
                             "previousRevisionId": previous_id, "computeDriverId": revision.spec.compute_driver_id,
                             "warnings": [warning.document() for warning in warnings]})


def _complete_activation(work: ControllerWork, actor: Actor | None, revision: AgentRevision,
                         predecessor_ids: list[str], warnings: list[PluginWarning], code: str) -> None:
    """Inside the fenced completion: the candidate must still be active; staged workspace
    files are cleared (they were written before the first start) and the finalization is
    recorded (the activation itself was recorded with the pointer)."""
    agent = Agent.objects.select_for_update().filter(id=revision.agent_id).first()
    if agent is None or agent.active_revision_id != revision.id:
        raise ActivationLost(revision.id)
    if agent.initial_workspace_files:
        agent.initial_workspace_files = {}
        agent.save(update_fields=["initial_workspace_files", "updated_at"])
    lifecycle_audit(work, actor=actor, action="openclaw.agents.revision.finalize", resource_kind=Kind.AGENT,
                    resource_id=revision.agent_id,
                    details={"revisionId": revision.id, "revision": revision.number,
                             "retiredRevisionIds": predecessor_ids,
                             "warnings": [warning.document() for warning in warnings], "reasonCode": code})


# --- small checks on what the driver answered ---------------------------------------------------


def _names(readiness: Readiness, ref: RevisionRef) -> bool:
    return (readiness.namespace_id, readiness.agent_id, readiness.revision_id) == (
        ref.namespace_id, ref.agent_id, ref.id)


def _pending_code(reason: str | None) -> str:
    return reason if reason and SAFE_CODE.fullmatch(reason) else "REVISION_INCOMPLETE"


def _warnings(readiness: Readiness, revision: AgentRevision) -> list[PluginWarning]:
    """Plugin warnings for plugins this revision selected, each once; anything else is dropped."""
    selected = revision.spec.plugin_selections
    return _merge([], [warning for warning in readiness.warnings if warning.plugin_id in selected])


def _merge(first: list[PluginWarning], second: list[PluginWarning]) -> list[PluginWarning]:
    merged = list(first)
    merged += [warning for warning in second if warning not in merged]
    return merged
