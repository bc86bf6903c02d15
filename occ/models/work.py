"""Durable controller work: every effect on the outside world is one of these rows."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Coalesce

from occ.documents import ProvisionPlan
from occ.models.base import choices_check


class WorkJob(models.TextChoices):
    """The job that runs a work row (provisioning/jobs), named by the row itself."""

    NAMESPACE = "namespace"  # a Namespace ready or deleted
    REVISION = "revision"  # one AgentRevision reconciled (activate or supersede)
    AGENT_STOP = "agent_stop"
    AGENT_DELETE = "agent_delete"
    PROVISION = "provision"  # one Agent provisioning request (AgentProvisioningWork)


class WorkState(models.TextChoices):
    QUEUED = "queued"
    CLAIMED = "claimed"
    SUCCEEDED = "succeeded"
    FAILED_PERMANENT = "failed_permanent"


TERMINAL_STATES = frozenset({WorkState.SUCCEEDED, WorkState.FAILED_PERMANENT})


class NamespaceTarget(models.TextChoices):
    READY = "ready"
    DELETED = "deleted"


class AgentTarget(models.TextChoices):
    STOPPED = "stopped"
    DELETED = "deleted"
    PROVISIONED = "provisioned"


class ControllerWork(models.Model):
    idempotency_key = models.CharField(primary_key=True, max_length=255)
    job = models.CharField(max_length=16, choices=WorkJob.choices)
    # Indexed in Meta: a field's own index brings a second, varchar_pattern_ops copy on
    # PostgreSQL that no query here uses and that every update of a row would maintain.
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.PROTECT, related_name="work", db_index=False)
    # Plain ids: provisioning work names an Agent that does not exist yet.
    agent_id = models.CharField(max_length=64, null=True, blank=True)
    revision_id = models.CharField(max_length=64, null=True, blank=True)
    actor_id = models.CharField(max_length=64)
    namespace_target = models.CharField(max_length=16, choices=NamespaceTarget.choices, null=True, blank=True)
    agent_target = models.CharField(max_length=32, choices=AgentTarget.choices, null=True, blank=True)
    state = models.CharField(max_length=20, choices=WorkState.choices, default=WorkState.QUEUED)
    available_at = models.DateTimeField()
    attempt_count = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=5)
    claim_token = models.CharField(max_length=64, null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    reason_code = models.CharField(max_length=64, null=True, blank=True)
    result_data = models.JSONField(null=True, blank=True)
    # The latest attempt's progress code (deployment status ``progress.lastAttempt``):
    # a pending or retry code, LEASE_EXPIRED after recovery, or the terminal code.
    last_attempt_code = models.CharField(max_length=64, null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            choices_check("state", WorkState, "work_state_valid"),
            choices_check("job", WorkJob, "work_job_valid"),
            # Each job's target, and nothing else.
            models.CheckConstraint(
                condition=(
                    models.Q(job="namespace", namespace_target__isnull=False,
                             agent_id__isnull=True, revision_id__isnull=True, agent_target__isnull=True)
                    | models.Q(job="revision", namespace_target__isnull=True,
                               agent_id__isnull=False, revision_id__isnull=False, agent_target__isnull=True)
                    | models.Q(job="agent_stop", namespace_target__isnull=True,
                               agent_id__isnull=False, agent_target="stopped", revision_id__isnull=True)
                    | models.Q(job="agent_delete", namespace_target__isnull=True,
                               agent_id__isnull=False, agent_target="deleted", revision_id__isnull=True)
                    | models.Q(job="provision", namespace_target__isnull=True,
                               agent_id__isnull=False, agent_target="provisioned", revision_id__isnull=True)
                ),
                name="work_job_target_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(state="claimed", claim_token__isnull=False, lease_expires_at__isnull=False)
                | (~models.Q(state="claimed") & models.Q(claim_token__isnull=True)),
                name="work_claim_token_iff_claimed",
            ),
            models.CheckConstraint(
                condition=models.Q(state__in=["succeeded", "failed_permanent"], completed_at__isnull=False)
                | models.Q(state__in=["queued", "claimed"], completed_at__isnull=True),
                name="work_completed_iff_terminal",
            ),
            # At most one claimed row per resource.
            models.UniqueConstraint(
                Coalesce("agent_id", "namespace_id"),
                condition=models.Q(state="claimed"),
                name="work_one_claim_per_resource",
            ),
        ]
        indexes = [
            # The claim's scan, oldest first. Partial: a row's claim and completion (it leaves
            # ``queued``) add no entry here. Claimed rows are found through
            # work_one_claim_per_resource.
            models.Index(fields=["available_at"], condition=models.Q(state="queued"), name="work_queued_due_idx"),
            models.Index(fields=["namespace"], name="work_namespace_idx"),
            models.Index(fields=["agent_id"], name="work_agent_idx"),
        ]

    def __str__(self) -> str:
        return self.idempotency_key

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES


class ProvisioningPhase(models.TextChoices):
    ADMITTED = "admitted"
    CONFIGURATION = "configuration"
    TRANSPORT = "transport"
    HANDOFF = "handoff"


class ProvisioningStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    FAILED = "failed"
    SUCCEEDED = "succeeded"
    CANCELLED = "cancelled"


class AgentProvisioningWork(models.Model):
    """The accepted plan of one provisioning request (values never stored).

    Its status is not stored: it is the work row's state (``status``), except that a
    cancellation (``cancelled_at``) or the handoff of the first revision (phase ``handoff``)
    decides it first."""

    work = models.OneToOneField(ControllerWork, primary_key=True, on_delete=models.CASCADE,
                                related_name="provisioning")
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.PROTECT, related_name="+")
    actor_id = models.CharField(max_length=64)
    request_id = models.CharField(max_length=64)
    request_fingerprint = models.CharField(max_length=64)
    # When a Stop or Delete of its Agent cancelled it (database clock); it never runs again.
    cancelled_at = models.DateTimeField(null=True, blank=True)
    completed_phase = models.CharField(max_length=16, choices=ProvisioningPhase.choices,
                                       default=ProvisioningPhase.ADMITTED)
    agent_id = models.CharField(max_length=64)
    configuration_id = models.CharField(max_length=64)
    revision_id = models.CharField(max_length=64, null=True, blank=True)
    plan = models.JSONField()
    progress = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "actor_id", "request_id"],
                                    name="provisioning_request_unique"),
            choices_check("completed_phase", ProvisioningPhase, "provisioning_phase_valid"),
        ]

    def __str__(self) -> str:
        return self.work_id

    @property
    def accepted_plan(self) -> ProvisionPlan:
        """The plan, typed."""
        return ProvisionPlan.from_stored(self.plan)

    @property
    def status(self) -> str:
        """The provisioning's status, derived from its work row (loaded with it)."""
        if self.cancelled_at is not None:
            return ProvisioningStatus.CANCELLED
        if self.completed_phase == ProvisioningPhase.HANDOFF:
            return ProvisioningStatus.SUCCEEDED
        return WORK_STATUS[self.work.state]

    @staticmethod
    def owning() -> models.Q:
        """Provisionings that still own their Agent: not cancelled, first revision not handed off
        (a failed one owns it until retried or cancelled)."""
        return models.Q(cancelled_at__isnull=True) & ~models.Q(completed_phase=ProvisioningPhase.HANDOFF)

    @staticmethod
    def in_flight() -> models.Q:
        """Owning provisionings whose work is queued or running."""
        return AgentProvisioningWork.owning() & models.Q(work__state__in=[WorkState.QUEUED, WorkState.CLAIMED])


WORK_STATUS: dict[str, str] = {
    WorkState.QUEUED: ProvisioningStatus.QUEUED,
    WorkState.CLAIMED: ProvisioningStatus.RUNNING,
    WorkState.SUCCEEDED: ProvisioningStatus.SUCCEEDED,
    WorkState.FAILED_PERMANENT: ProvisioningStatus.FAILED,
}


class EffectKind(models.TextChoices):
    CONFIGURATION = "configuration"  # the Configuration, stopped Agent and grants (one transaction)
    TRANSPORT = "transport"  # the Agent's runtime credentials, written by the compute driver


class EffectState(models.TextChoices):
    BEGUN = "begun"  # recorded before the write; its outcome is not known yet
    RECEIPTED = "receipted"  # the write is known to have happened


class WorkEffect(models.Model):
    """One write of a work row's job, recorded (``begun``: kind, owner, exact target) before it
    is made and receipted after. A begun effect without a receipt after a lost claim is never
    repeated blindly: the next attempt observes the target first (provisioning/jobs)."""

    work = models.ForeignKey(ControllerWork, on_delete=models.CASCADE, related_name="effects")
    kind = models.CharField(max_length=16, choices=EffectKind.choices)
    owner = models.CharField(max_length=255)  # the work key the written target belongs to
    target_id = models.CharField(max_length=64)
    state = models.CharField(max_length=16, choices=EffectState.choices)
    # Known not written (a definite driver failure), or checked by an operator after
    # RECOVERY_REQUIRED: the next attempt may send it again without observing first.
    resend = models.BooleanField(default=False)
    attempt = models.PositiveIntegerField(null=True, blank=True)  # the attempt that began it
    driver_id = models.CharField(max_length=64, null=True, blank=True)  # the driver asked to write it
    begun_at = models.DateTimeField()
    receipted_at = models.DateTimeField(null=True, blank=True)
    # The receipt came from observing the target (the write's own answer was lost).
    observed = models.BooleanField(default=False)
    # What the last observation without a receipt saw: the target missing, or owned by another.
    observation = models.CharField(max_length=16, null=True, blank=True)
    observed_owner = models.CharField(max_length=64, null=True, blank=True)
    granted_secret_ids = models.JSONField(default=list, blank=True)  # configuration: the grants made
    # Settled by the Agent's deletion, which removed what the effect wrote.
    removed_by = models.CharField(max_length=255, null=True, blank=True)
    removed_at = models.DateTimeField(null=True, blank=True)
    removed_credential_ids = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["work", "kind"], name="work_effect_one_per_kind"),
            choices_check("kind", EffectKind, "work_effect_kind_valid"),
            choices_check("state", EffectState, "work_effect_state_valid"),
            models.CheckConstraint(
                condition=models.Q(state="receipted", receipted_at__isnull=False)
                | models.Q(state="begun", receipted_at__isnull=True),
                name="work_effect_receipted_iff_receipt_time"),
        ]

    def __str__(self) -> str:
        return f"{self.work_id} {self.kind} {self.state}"


# The keys of controller work rows: a row's identity names its job and its resource, so the same
# request (or its retry) enqueues the same row.
def namespace_ready_key(namespace_id: str) -> str:
    return f"namespace:{namespace_id}:ready"


def namespace_deleted_key(namespace_id: str, sequence: int) -> str:
    return f"namespace:{namespace_id}:deleted:{sequence}"


def agent_stopped_key(agent_id: str, sequence: int) -> str:
    return f"agent:{agent_id}:stopped:{sequence}"


def agent_started_key(revision_id: str, sequence: int) -> str:
    """Revision work that starts a stopped Agent again on ``revision_id`` (its own row, so the
    revision's deployment record, ``revision_reconcile_key``, keeps the outcome it ended with)."""
    return f"agent_revision:{revision_id}:start:{sequence}"


def is_start_key(key: str) -> bool:
    return key.startswith("agent_revision:") and ":start:" in key


def agent_deleted_key(agent_id: str, sequence: int) -> str:
    return f"agent:{agent_id}:deleted:{sequence}"


def revision_reconcile_key(revision_id: str) -> str:
    return f"agent_revision:{revision_id}:reconcile"


def provisioning_key(agent_id: str) -> str:
    """The provisioning work of a pre-allocated Agent id; also the public ``workId``."""
    return f"agent:{agent_id}:provisioned"
