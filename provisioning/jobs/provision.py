"""Agent provisioning work ``agent:<agentId>:provisioned`` (spec §5.4, issue 4).

The public phase is the last one completed: admitted → configuration → transport → handoff.

- ``configure``: one fenced transaction creates the Configuration (its pre-allocated id, the
  plan's inline values and bindings, through ``configuration_create``), the stopped Agent
  (its pre-allocated id and selections, through ``agent_create``) and grants the Agent's
  service principal exactly ``secret:operate`` on each accepted Secret
  (``agent_secret_access_grant``), each audited. The ids are primary keys, so an attempt
  after a committed one finds them instead of making twins.
- transport is an external write, so it is an effect: ``begin_transport`` commits a
  ``WorkEffect`` row (kind ``transport``, owner the work id, target the Agent, ``begun``) before
  ``send_transport`` asks the ComputeDriver for the runtime credentials, and
  ``receipt_transport`` commits the receipt with the phase. An effect left without a
  receipt (a lost claim, an unknown outcome) is never sent again blindly: the next attempt
  observes the target — found and owned by this Agent: receipt it and go on; found and
  owned by another: permanent failure; not found: permanent ``RECOVERY_REQUIRED`` keeping
  the effect, until the retry endpoint marks it ``resend`` (an operator checked).
- ``hand_off``: the first revision through the deploy admission
  (``agent_deploy_for_provisioning``), with its id, the phase and ``succeeded`` in the same
  fenced transaction; then the work completes.

Every fenced step first locks the Namespace (shared: provisionings of one Namespace run side
by side, its deletion waits), the Agent and the provisioning row, in the order the API's
deploy and Stop/Delete use, and passes them to the services it calls. It then
requires the Namespace ready, the provisioning not cancelled and the frozen actor's exact
permissions for the step on a fresh policy (denied: permanent ``AUTHORIZATION_DENIED`` with
one denial audit event). Driver calls are
preceded by the same authorization and a lease renewal. Failures are recorded in
``progress.error`` together with the outcome: ``retry`` (the work is queued again) or
``permanent`` (status ``failed``). Nothing is rolled back and Secrets are never deleted.

One module of ~540 lines: the three phases, in the order they run, share the fenced step and the
progress bookkeeping below them; the last two functions are what an Agent's deletion asks of the
same effect rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import F, Q
from django.db.models.functions import Now
from django.utils import timezone

from occ.commands.agents import AgentSecretAccess
from occ.drivers.compute import ComputeError, ComputeUnknownOutcome
from occ.errors import DependencyUnavailable, Forbidden, OccError, UnknownOutcome
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.models import (
    Agent,
    AgentProvisioningWork,
    AuditKind,
    AuditOutcome,
    Configuration,
    ControllerWork,
    EffectKind,
    EffectState,
    Namespace,
    NamespaceStatus,
    ProvisioningPhase,
    WorkEffect,
)
from occ.models.work import revision_reconcile_key
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.audit import audit_record
from occ.services.configurations import configuration_create
from occ.services.deploy import agent_deploy_for_provisioning
from occ.services.locks import share_locked_live_namespace
from occ.services.provisioning import planned_agent, planned_configuration
from occ.services.provisioning_guards import PROVISIONING_CANCELLED
from provisioning.jobs.context import (
    AUTHORIZATION_DENIED,
    Claim,
    Need,
    authority,
    compute_driver,
    worker_actor,
)
from provisioning.jobs.credentials import credentials_ref, ensure_credentials
from provisioning.outcomes import ClaimLost, Complete, Defer, Effects, Fail, Outcome, Retry

log = logging.getLogger("provisioning.worker")

PROVISIONING_SUCCEEDED = "PROVISIONING_SUCCEEDED"
RECOVERY_REQUIRED = "RECOVERY_REQUIRED"
CREDENTIALS_NOT_OWNED = "RUNTIME_CREDENTIALS_NOT_OWNED"
PHASE_ORDER: dict[str, int] = {phase.value: index for index, phase in enumerate(
    [ProvisioningPhase.ADMITTED, ProvisioningPhase.CONFIGURATION, ProvisioningPhase.TRANSPORT,
     ProvisioningPhase.HANDOFF])}

# Safe messages for progress.error (codes from services carry their own safe messages).
MESSAGES = {
    AUTHORIZATION_DENIED: "The person who requested this provisioning no longer holds a permission it needs.",
    RECOVERY_REQUIRED: "The runtime credential write has an unknown outcome and the credentials were not found. "
                       "Check the Agent's runtime, then retry to send the write again.",
    CREDENTIALS_NOT_OWNED: "Runtime credentials under this Agent's name belong to someone else. "
                           "An operator must investigate before provisioning can continue.",
    "NAMESPACE_NOT_READY": "The Namespace is no longer ready; provisioning cannot continue.",
    "AGENT_NOT_FOUND": "The Agent this provisioning created no longer exists.",
    "CONFIGURATION_CONFLICT": "The pre-allocated Configuration id belongs to another Namespace.",
    "UNKNOWN_FAILURE": "Provisioning failed unexpectedly; it will be retried.",
}
UNKNOWN_OUTCOME_MESSAGE = ("The runtime credential write has an unknown outcome; the next attempt observes the "
                           "credentials before sending anything again.")
COMPUTE_MESSAGE = "The compute backend could not prepare the Agent's runtime credentials."


class Finished(Exception):
    """Raised inside a fenced step: roll it back and end the attempt with ``outcome``."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(type(outcome).__name__)
        self.outcome = outcome


@dataclass
class Step:
    """What a fenced step holds locked, and the actor authorized for it."""

    actor: Actor
    namespace: Namespace
    agent: Agent | None
    row: AgentProvisioningWork


# --- the job ------------------------------------------------------------------------------------


def run(claim: Claim) -> Outcome:
    try:
        return _run(claim)
    except Finished as finished:
        return finished.outcome
    except ClaimLost:
        raise
    except OccError as exc:  # refused by a service: its code and message are safe by contract
        retry = isinstance(exc, DependencyUnavailable | UnknownOutcome)
        if isinstance(exc, Forbidden):
            return _permanent(claim.work, _denied_by_service(claim.work, exc))
        return _retry(claim.work, exc.code, exc.message) if retry else _permanent(
            claim.work, Fail(exc.code), exc.message)
    except ComputeError as exc:
        return _retry(claim.work, exc.code, COMPUTE_MESSAGE) if exc.retryable else _permanent(
            claim.work, Fail(exc.code), COMPUTE_MESSAGE)
    except Exception as exc:  # type only: a message may carry upstream text or values
        log.error("worker.error UNKNOWN_FAILURE key=%s provisioning error=%s", claim.key, type(exc).__name__)
        return _retry(claim.work, "UNKNOWN_FAILURE", MESSAGES["UNKNOWN_FAILURE"])


def _run(claim: Claim) -> Outcome:
    row = _row(claim.key)
    if row is None:
        return Fail("PROVISIONING_RECORD_MISSING")
    if row.cancelled_at is not None:
        return Fail(PROVISIONING_CANCELLED)
    if _reached(row, ProvisioningPhase.HANDOFF):  # handed off; only the completion was lost
        return Complete(PROVISIONING_SUCCEEDED, next_work=_revision_work(row.revision_id))
    if not _reached(row, ProvisioningPhase.CONFIGURATION):
        row = configure(claim)
    if not _reached(row, ProvisioningPhase.TRANSPORT):
        failed = transport(claim, row)
        if failed is not None:
            return failed
    return Complete(PROVISIONING_SUCCEEDED, next_work=_revision_work(hand_off(claim)))


def _revision_work(revision_id: str | None) -> tuple[str, ...]:
    """The first revision's work, which the handoff queued without a nudge: the Agent stays
    busy with this claim until the queue writes the completion, then nudges it."""
    return () if revision_id is None else (revision_reconcile_key(revision_id),)


def _row(key: str) -> AgentProvisioningWork | None:
    return AgentProvisioningWork.objects.filter(work_id=key).first()


def _row_or_gone(key: str) -> AgentProvisioningWork:
    row = _row(key)
    if row is None:
        raise Finished(Fail("PROVISIONING_RECORD_MISSING"))
    return row


def _reached(row: AgentProvisioningWork, phase: str) -> bool:
    return PHASE_ORDER[row.completed_phase] >= PHASE_ORDER[phase]


# --- phase: configuration -----------------------------------------------------------------------


def configure(claim: Claim) -> AgentProvisioningWork:
    """Configuration, stopped Agent and Secret grants in one fenced transaction. Returns the
    provisioning row as the step committed it."""
    with _fenced_step(claim, _configuration_needs) as step:
        row = step.row
        if _reached(row, ProvisioningPhase.CONFIGURATION):
            return row
        plan, namespace_id = row.accepted_plan, step.namespace.id
        configuration = Configuration.objects.filter(id=row.configuration_id).first()
        if configuration is None:
            configuration = configuration_create(actor=step.actor, namespace_id=namespace_id,
                                                 command=planned_configuration(plan),
                                                 configuration_id=row.configuration_id, namespace=step.namespace,
                                                 default_name=f"{plan.name} configuration")
        elif configuration.namespace_id != namespace_id:
            raise Finished(_permanent(claim.work, Fail("CONFIGURATION_CONFLICT")))
        agent = step.agent
        if agent is None:
            agent = agent_create(actor=step.actor, namespace_id=namespace_id,
                                 command=planned_agent(plan, configuration_id=row.configuration_id),
                                 agent_id=row.agent_id, namespace=step.namespace, configuration=configuration)
        secret_ids = _secret_ids(row)
        if secret_ids:
            # The Agent: locked by the step, or created by this transaction.
            agent_secret_access_grant(actor=step.actor, namespace_id=namespace_id, agent_id=row.agent_id,
                                      command=AgentSecretAccess(secret_ids=secret_ids), namespace=step.namespace,
                                      agent=agent)
        now = timezone.now()
        # Once per provisioning: a committed configuration phase is never run again.
        WorkEffect.objects.create(work_id=row.work_id, kind=EffectKind.CONFIGURATION, owner=row.work_id,
                                  target_id=row.configuration_id, state=EffectState.RECEIPTED, begun_at=now,
                                  receipted_at=now, granted_secret_ids=secret_ids)
        row.completed_phase = ProvisioningPhase.CONFIGURATION
    return row


def _secret_ids(row: AgentProvisioningWork) -> list[str]:
    return sorted(set(row.accepted_plan.secret_ids))


def _configuration_needs(row: AgentProvisioningWork) -> list[Need]:
    ns, secret_ids = row.namespace_id, _secret_ids(row)
    needs = [
        Need(Action.CREATE, Kind.CONFIGURATION, ns),
        Need(Action.CREATE, Kind.AGENT, ns),
        Need(Action.READ, Kind.CONFIGURATION, ns, row.configuration_id),  # agent_create reads it
    ]
    if secret_ids:
        needs.append(Need(Action.UPDATE, Kind.AGENT, ns, row.agent_id))  # the grants
    return needs + [Need(Action.OPERATE, Kind.SECRET, ns, secret_id) for secret_id in secret_ids]


# --- phase: transport ---------------------------------------------------------------------------


def transport(claim: Claim, row: AgentProvisioningWork) -> Outcome | None:
    """The runtime credentials as an effect with a receipt. None when the phase completed.

    ``row`` is the provisioning row as this attempt last read it: while the claim is live
    only this worker changes its effects (the retry endpoint needs failed work, and a
    Stop/Delete cancellation is caught by the next fenced step), so it is not read again."""
    effect = _effect(row.work_id, EffectKind.TRANSPORT)
    if effect is not None and effect.state == EffectState.BEGUN and not effect.resend:
        return _observe(claim)
    begin_transport(claim, effect)
    try:
        send_transport(claim)
    except (Finished, ClaimLost):
        raise
    except ComputeUnknownOutcome:
        return _retry(claim.work, RECOVERY_REQUIRED, UNKNOWN_OUTCOME_MESSAGE)
    except ComputeError as exc:  # a definite failure: nothing was written, so it may be sent again
        if exc.retryable:
            return _retry(claim.work, exc.code, COMPUTE_MESSAGE, resend=True)
        return _permanent(claim.work, Fail(exc.code), COMPUTE_MESSAGE, resend=True)
    except Exception as exc:  # anything else may or may not have written: observe next time
        log.error("worker.error UNKNOWN_FAILURE key=%s transport error=%s", claim.key, type(exc).__name__)
        return _retry(claim.work, RECOVERY_REQUIRED, UNKNOWN_OUTCOME_MESSAGE)
    receipt_transport(claim)
    return None


def begin_transport(claim: Claim, effect: WorkEffect | None = None) -> None:
    """Commit the effect (exact target and owner) before the driver call; ``effect``: the
    one an earlier attempt began, known not written (``resend``)."""
    with _fenced_step(claim, _transport_needs) as step:
        if step.agent is None:
            raise Finished(_permanent(claim.work, Fail("AGENT_NOT_FOUND")))
        begun = {"owner": claim.key, "target_id": step.row.agent_id, "state": EffectState.BEGUN, "resend": False,
                 "driver_id": compute_driver().driver_id, "attempt": claim.work.attempt_count,
                 "begun_at": timezone.now(), "receipted_at": None, "observed": False, "observation": None,
                 "observed_owner": None}
        if effect is None:
            WorkEffect.objects.create(work_id=claim.key, kind=EffectKind.TRANSPORT, **begun)
        else:
            WorkEffect.objects.filter(pk=effect.pk).update(**begun)


def send_transport(claim: Claim) -> None:
    """The driver call, right after the begun commit authorized it, with a renewed lease."""
    agent = Agent.objects.filter(id=claim.work.agent_id, namespace_id=claim.work.namespace_id).first()
    if agent is None:
        raise Finished(_permanent(claim.work, Fail("AGENT_NOT_FOUND"), resend=True))
    claim.renew()
    driver = compute_driver()
    driver.provision_runtime_credentials(ensure_credentials(agent, driver))


def receipt_transport(claim: Claim, *, observed_owner: str | None = None) -> None:
    """The receipt, with the phase; ``observed_owner``: found by observing the target."""
    with _fenced_step(claim, _transport_needs) as step:
        receipted = WorkEffect.objects.filter(work_id=claim.key, kind=EffectKind.TRANSPORT).update(
            state=EffectState.RECEIPTED, resend=False, receipted_at=timezone.now(),
            observed=observed_owner is not None, observed_owner=observed_owner)
        assert receipted == 1, "a transport receipt needs its begun effect"
        step.row.completed_phase = ProvisioningPhase.TRANSPORT


def _observe(claim: Claim) -> Outcome | None:
    """An effect without a receipt: look before anything is sent again."""
    agent = _authorized_agent(claim)
    driver = compute_driver()
    observation = driver.observe_runtime_credentials(credentials_ref(agent, driver))
    if observation.found and observation.owner == agent.id:
        receipt_transport(claim, observed_owner=observation.owner)
        return None
    if observation.found:
        return _permanent(claim.work, Fail(CREDENTIALS_NOT_OWNED),
                          observation=Observation("found", observation.owner))
    return _permanent(claim.work, Fail(RECOVERY_REQUIRED), observation=Observation("not_found", None))


def _authorized_agent(claim: Claim) -> Agent:
    """The Agent, before a driver call: fresh authorization, renewed lease."""
    agent = Agent.objects.filter(id=claim.work.agent_id, namespace_id=claim.work.namespace_id).first()
    if agent is None:
        raise Finished(_permanent(claim.work, Fail("AGENT_NOT_FOUND")))
    _authorized(claim.work, _transport_needs(_row_or_gone(claim.key)))
    claim.renew()
    return agent


def _transport_needs(row: AgentProvisioningWork) -> list[Need]:
    # Spec §6.2: generating missing transport credentials needs agent:read and agent:operate.
    return [Need(Action.READ, Kind.AGENT, row.namespace_id, row.agent_id),
            Need(Action.OPERATE, Kind.AGENT, row.namespace_id, row.agent_id)]


# --- phase: handoff -----------------------------------------------------------------------------


def hand_off(claim: Claim) -> str | None:
    """Admit the first revision and record it, ``succeeded``, in one fenced transaction.
    Returns the revision's id."""
    with _fenced_step(claim, _handoff_needs) as step:
        row = step.row
        if row.revision_id is None:
            if step.agent is None:
                raise Finished(_permanent(claim.work, Fail("AGENT_NOT_FOUND")))
            revision = agent_deploy_for_provisioning(actor=step.actor, namespace=step.namespace,
                                                     agent=step.agent, work_key=claim.key)
            row.revision_id = revision.id
        row.completed_phase = ProvisioningPhase.HANDOFF
    return row.revision_id


def _handoff_needs(row: AgentProvisioningWork) -> list[Need]:
    """Spec §6.2 for the deploy, for the actor and (Secrets) the Agent's own principal."""
    ns = row.namespace_id
    needs = [Need(Action.DEPLOY, Kind.AGENT, ns, row.agent_id),
             Need(Action.READ, Kind.CONFIGURATION, ns, row.configuration_id)]
    for secret_id in _secret_ids(row):
        needs.append(Need(Action.OPERATE, Kind.SECRET, ns, secret_id))
        needs.append(Need(Action.OPERATE, Kind.SECRET, ns, secret_id, subject="agent"))
    return needs


# --- one fenced step ----------------------------------------------------------------------------


@contextmanager
def _fenced_step(claim: Claim, needs: Callable[[AgentProvisioningWork], list[Need]]) -> Iterator[Step]:
    """A fenced transaction holding the Namespace, the Agent and the provisioning row (in
    the order deploy and Stop/Delete lock them), after the checks every commit needs. The
    row is saved when the step ends; ``Finished`` raised inside rolls everything back."""
    work = claim.work
    with claim.fenced():
        # Shared: provisionings of one Namespace run their steps side by side; its deletion waits.
        namespace = share_locked_live_namespace(work.namespace_id)
        _require_ready(work, namespace)
        assert namespace is not None
        agent = Agent.objects.select_for_update().filter(id=work.agent_id, namespace_id=work.namespace_id).first()
        row = AgentProvisioningWork.objects.select_for_update().filter(work_id=claim.key).first()
        if row is None:
            raise Finished(Fail("PROVISIONING_RECORD_MISSING"))
        if row.cancelled_at is not None:
            raise Finished(Fail(PROVISIONING_CANCELLED))
        actor = _authorized(work, needs(row))
        if "error" in row.progress:  # this attempt runs: the last one's error goes
            row.progress = {k: v for k, v in row.progress.items() if k != "error"}
        # The services inside take these rows as arguments instead of reading them again.
        yield Step(actor=actor, namespace=namespace, agent=agent, row=row)
        row.save(update_fields=["completed_phase", "revision_id", "progress", "updated_at"])


def _require_ready(work: ControllerWork, namespace: Namespace | None) -> None:
    if namespace is not None and namespace.status == NamespaceStatus.READY:
        return
    if namespace is not None and namespace.status == NamespaceStatus.PROVISIONING:
        raise Finished(Defer("NAMESPACE_NOT_READY"))
    raise Finished(_permanent(work, Fail("NAMESPACE_NOT_READY")))


def _authorized(work: ControllerWork, needs: list[Need]) -> Actor:
    """The frozen actor with a fresh policy, holding every need (the ``agent`` ones held by
    the Agent's own principal); else the attempt ends with an audited denial."""
    actor, failure = authority(work, needs, agent_id=work.agent_id)
    if failure is not None:
        raise Finished(_permanent(work, failure))
    assert actor is not None
    return actor


def _denied_by_service(work: ControllerWork, exc: Forbidden) -> Fail:
    """A service refused what the step's checks allowed a moment earlier (a race): the same
    permanent denial, audited with what the service saw."""
    denial = exc.denial

    def record() -> None:
        details: dict[str, Any] = {"workKey": work.idempotency_key, "actorId": work.actor_id}
        if denial is not None:
            details |= {"reason": denial.reason, "permission": f"{denial.action}:{denial.resource_kind}"}
        audit_record(actor=worker_actor(work), source=Source.WORKER.value,
                     action=f"openclaw.authorization.{denial.resource_kind}.{denial.action}" if denial
                     else "openclaw.authorization.denied",
                     namespace_id=work.namespace_id, resource_kind=denial.resource_kind if denial else None,
                     resource_id=denial.resource_id if denial else None, details=details,
                     kind=AuditKind.AUTHORIZATION_DENIAL, outcome=AuditOutcome.DENIED)

    return Fail(AUTHORIZATION_DENIED, effects=record)


# --- progress bookkeeping -----------------------------------------------------------------------


def _effect(work_id: str, kind: EffectKind) -> WorkEffect | None:
    return WorkEffect.objects.filter(work_id=work_id, kind=kind).first()


@dataclass(frozen=True)
class Observation:
    """What observing a begun effect's target saw, when it could not receipt it."""

    seen: str  # "found" (owned by another) or "not_found"
    owner: str | None


def _permanent(work: ControllerWork, fail: Fail, message: str | None = None, *,
               observation: Observation | None = None, resend: bool = False) -> Fail:
    """``fail`` with ``progress.error`` (permanent, status ``failed``) in its fenced outcome."""
    record = _record_error(work, "permanent", fail.code, message, observation=observation, resend=resend)
    return Fail(fail.code, result_data=fail.result_data, effects=_both(fail.effects, record))


def _retry(work: ControllerWork, code: str, message: str, *, resend: bool = False) -> Retry:
    return Retry(code, effects=_record_error(work, "retry", code, message, resend=resend))


def _both(first: Effects | None, second: Effects) -> Effects:
    def effects() -> None:
        if first is not None:
            first()
        second()
    return effects


def _record_error(work: ControllerWork, disposition: str, code: str, message: str | None, *,
                  observation: Observation | None = None, resend: bool = False) -> Effects:
    """Inside the queue's fenced outcome transaction: the failure as ``progress.error``.

    A retry that the queue turns into a failure (attempts or convergence deadline spent)
    is recorded as permanent. ``observation`` is recorded on the begun transport effect;
    ``resend`` marks it safe to send again (the driver said definitely nothing was done).
    """
    key = work.idempotency_key

    def record() -> None:
        row = AgentProvisioningWork.objects.select_for_update().filter(work_id=key).first()
        if row is None or row.cancelled_at is not None or _reached(row, ProvisioningPhase.HANDOFF):
            return
        final = disposition == "permanent" or _retry_is_final(key)
        begun = WorkEffect.objects.filter(work_id=key, kind=EffectKind.TRANSPORT, state=EffectState.BEGUN)
        if observation is not None:
            begun.update(observation=observation.seen, observed_owner=observation.owner)
        if resend:
            begun.update(resend=True)
        row.progress = {**row.progress, "error": {
            "disposition": "permanent" if final else "retry", "code": code,
            "message": (message or MESSAGES.get(code) or "Provisioning failed.")[:256]}}
        row.save(update_fields=["progress", "updated_at"])

    return record


def _retry_is_final(key: str) -> bool:
    """The queue's own rule: no attempts left, or past the convergence deadline (database clock)."""
    deadline = timedelta(seconds=settings.OCC_WORKER_CONVERGENCE_SECONDS)
    return ControllerWork.objects.filter(pk=key).filter(
        Q(attempt_count__gte=F("max_attempts")) | Q(created_at__lte=Now() - deadline)).exists()


# --- the Agent's deletion after a cancelled provisioning (spec §4.12) ---------------------------


def cancelled_effect_wait(agent_id: str) -> float:
    """Seconds the Agent's deletion still waits: one worker lease after the cancellation of
    a provisioning that left an effect without a receipt, so a stale worker that may still
    be inside that driver call has lost its claim before the credentials are removed."""
    lease = timedelta(seconds=settings.OCC_WORKER_LEASE_SECONDS)
    waits = [0.0]
    rows = AgentProvisioningWork.objects.filter(agent_id=agent_id, cancelled_at__isnull=False).annotate(
        db_now=Now())
    for row in rows:
        # ``resend``: known not to have been written (or not yet re-sent), so nothing is in flight.
        if not WorkEffect.objects.filter(work_id=row.work_id, state=EffectState.BEGUN, resend=False).exists():
            continue
        assert row.cancelled_at is not None
        waits.append((row.cancelled_at + lease - row.db_now).total_seconds())  # type: ignore[attr-defined]
    return max(waits)


def record_removal_receipts(*, agent_id: str, work_key: str, secret_ids: list[str]) -> list[str]:
    """In the deletion finalizer's transaction: the runtime credentials are gone, so every
    transport effect of the Agent's provisionings is settled by that removal. Returns the
    provisioning work ids whose records changed."""
    now = timezone.now()
    settled = WorkEffect.objects.select_for_update().filter(
        work__provisioning__agent_id=agent_id, kind=EffectKind.TRANSPORT, removed_by__isnull=True).order_by("work_id")
    changed = []
    for effect in settled:
        effect.state, effect.resend, effect.receipted_at = EffectState.RECEIPTED, False, effect.receipted_at or now
        effect.removed_by, effect.removed_at, effect.removed_credential_ids = work_key, now, secret_ids
        effect.save(update_fields=["state", "resend", "receipted_at", "removed_by", "removed_at",
                                   "removed_credential_ids"])
        changed.append(effect.work_id)
    AgentProvisioningWork.objects.filter(work_id__in=changed).update(updated_at=now)
    return changed
