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
from typing import Any

from django.utils import timezone

from occ.drivers.compute import (
    ComputeDriver,
    ComputeError,
    ComputeUnknownOutcome,
    Readiness,
    RevisionContext,
    RevisionRef,
)
from occ.iam.actor import Actor
from occ.iam.permissions import Kind
from occ.models import (
    Agent,
    AgentRevision,
    AgentStatus,
    ControllerWork,
    DesiredRuntimeState,
    NamespaceStatus,
    WorkState,
)
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
WARNING_CODES = frozenset({"PLUGIN_INSTALL_FAILED", "PLUGIN_AUTH_REQUIRED"})
SAFE_CODE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


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


def _finalize(claim: Claim, driver: ComputeDriver, agent: Agent, revision: AgentRevision, context: RevisionContext,
              *, predecessors: list[AgentRevision], warnings: list[dict[str, str]], already_active: bool) -> Outcome:
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
    return Complete(code, result_data={"warnings": warnings},
                    effects=lambda: _complete_activation(work, actor, revision, predecessor_ids, warnings, code))


def _audit_activation(work: ControllerWork, actor: Actor | None, revision: AgentRevision, previous_id: str | None,
                      warnings: list[dict[str, str]]) -> None:
    """In the fenced transaction that moves the Agent's active pointer: its one event."""
    lifecycle_audit(work, actor=actor, action="openclaw.agents.revision.activate", resource_kind=Kind.AGENT,
                    resource_id=revision.agent_id,
                    details={"revisionId": revision.id, "revision": revision.number,
                             "previousRevisionId": previous_id, "computeDriverId": revision.spec.compute_driver_id,
                             "warnings": warnings})


def _complete_activation(work: ControllerWork, actor: Actor | None, revision: AgentRevision,
                         predecessor_ids: list[str], warnings: list[dict[str, str]], code: str) -> None:
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
                             "retiredRevisionIds": predecessor_ids, "warnings": warnings, "reasonCode": code})


# --- small checks on what the driver answered ---------------------------------------------------


def _names(readiness: Readiness, ref: RevisionRef) -> bool:
    return (readiness.namespace_id, readiness.agent_id, readiness.revision_id) == (
        ref.namespace_id, ref.agent_id, ref.id)


def _pending_code(reason: str | None) -> str:
    return reason if reason and SAFE_CODE.fullmatch(reason) else "REVISION_INCOMPLETE"


def _warnings(readiness: Readiness, revision: AgentRevision) -> list[dict[str, str]]:
    """Plugin warnings for plugins this revision selected; anything else is dropped."""
    selected = set(revision.spec.plugin_selections)
    found: list[dict[str, str]] = []
    for warning in readiness.warnings:
        item: dict[str, Any] = dict(warning)
        if item.get("code") in WARNING_CODES and item.get("pluginId") in selected:
            entry = {"code": item["code"], "pluginId": item["pluginId"]}
            if entry not in found:
                found.append(entry)
    return found


def _merge(first: list[dict[str, str]], second: list[dict[str, str]]) -> list[dict[str, str]]:
    return first + [w for w in second if w not in first]
