"""What OCC keeps of its Agents' conversations (issue 29): an index of each gateway's sessions,
metadata only, refreshed by the worker from ``sessions.list``; and one row per approval OCC
answered, so a second decision is refused by the database. Transcript text is never stored:
it is read from the gateway when a person opens it."""

from __future__ import annotations

from django.db import models

from occ.ids import IdPrefix, id_default
from occ.models.base import choices_check


class AgentSession(models.Model):
    """One session of an Agent's gateway as ``sessions.list`` last showed it."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.SESSION), editable=False)
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("occ.Agent", on_delete=models.CASCADE, related_name="sessions")
    key = models.CharField(max_length=512)  # the gateway's session key (``agent:main:main``)
    title = models.CharField(max_length=200, blank=True, default="")  # its display name or label
    channel = models.CharField(max_length=64, blank=True, default="")  # webchat, slack, ... ("" unknown)
    person = models.CharField(max_length=200, blank=True, default="")  # who it is with, when the channel says
    message_count = models.PositiveIntegerField(null=True, blank=True)
    input_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    output_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    total_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    last_activity_at = models.DateTimeField()
    refreshed_at = models.DateTimeField()  # the pass that last saw it

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "key"], name="agent_session_key_unique")]
        indexes = [
            models.Index(fields=["-last_activity_at", "-id"], name="agent_session_recent"),
            models.Index(fields=["agent", "-last_activity_at", "-id"], name="agent_session_agent_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.key}"


class ApprovalKind(models.TextChoices):
    EXEC = "exec"
    PLUGIN = "plugin"


class ApprovalDecisionState(models.TextChoices):
    SENDING = "sending"  # claimed by one person, on its way to the gateway
    DECIDED = "decided"  # the gateway took it


class ApprovalDecision(models.Model):
    """The one answer OCC gave to one approval request of an Agent's gateway."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.APPROVAL_DECISION),
                          editable=False)
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("occ.Agent", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=ApprovalKind.choices)
    approval_id = models.CharField(max_length=200)
    decision = models.CharField(max_length=32)
    state = models.CharField(max_length=16, choices=ApprovalDecisionState.choices)
    decided_by = models.CharField(max_length=64)  # the principal's id
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "kind", "approval_id"], name="approval_decided_once"),
            choices_check("kind", ApprovalKind, "approval_decision_kind_valid"),
            choices_check("state", ApprovalDecisionState, "approval_decision_state_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.approval_id}: {self.decision}"
