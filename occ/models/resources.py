"""Namespace-owned resources: Configuration, Secret, Preset, Agent and AgentRevision."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import F
from django.db.models.functions import Lower

from occ.documents import RevisionSpec, SmokeConversation
from occ.documents.presets import PresetTemplate
from occ.ids import IdPrefix, id_default
from occ.models.base import TimestampedModel, choices_check


class Configuration(TimestampedModel):
    """A native OpenClaw configuration document (kind ``agent``)."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.CONFIGURATION), editable=False)
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.PROTECT, related_name="configurations")
    # What people call it (unique in its Namespace); the id stays the reference.
    name = models.CharField(max_length=800)
    kind = models.CharField(max_length=16, default="agent", editable=False)
    values = models.JSONField(default=dict)
    generation = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(kind="agent"), name="configuration_kind_agent"),
            models.CheckConstraint(condition=models.Q(generation__gte=1), name="configuration_generation_positive"),
            models.UniqueConstraint(fields=["namespace", "name"], name="configuration_name_unique_in_namespace"),
        ]
        # The API's list: keyset pages on (updated_at, id), newest first (the index read backwards).
        indexes = [models.Index(fields=["namespace", "updated_at", "id"], name="configuration_updated_order")]

    def __str__(self) -> str:
        return self.name or self.id


class SecretBinding(models.Model):
    """One environment variable of a Configuration bound to a same-Namespace Secret.

    Kept relational (not only inside JSON) so the database refuses to delete a bound Secret.
    """

    configuration = models.ForeignKey(Configuration, on_delete=models.CASCADE, related_name="secret_bindings")
    env_name = models.CharField(max_length=128)
    secret = models.ForeignKey("occ.Secret", on_delete=models.PROTECT, related_name="configuration_bindings")
    delivery = models.CharField(max_length=8, default="env")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["configuration", "env_name"], name="secret_binding_unique_env"),
            models.CheckConstraint(condition=models.Q(delivery="env"), name="secret_binding_delivery_env"),
        ]

    def __str__(self) -> str:
        return f"{self.configuration_id} {self.env_name}"


class Secret(TimestampedModel):
    """Secret metadata and its immutable driver identity. The value lives in the SecretDriver.

    A Secret with an ``owner_agent`` is a driver-owned runtime credential (a gateway password):
    hidden from the Secrets API, not counted by NAMESPACE_NOT_EMPTY, removed with its Agent.
    """

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.SECRET), editable=False)
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.PROTECT, related_name="secrets")
    name = models.CharField(max_length=800)
    driver_id = models.CharField(max_length=64, editable=False)
    backend_name = models.CharField(max_length=255, editable=False)
    backend_key = models.CharField(max_length=255, default="value", editable=False)
    owner_agent = models.ForeignKey(
        "occ.Agent", null=True, blank=True, on_delete=models.PROTECT, related_name="runtime_credentials"
    )
    purpose = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "name"], condition=models.Q(owner_agent__isnull=True),
                name="secret_name_unique_in_namespace",
            ),
            models.UniqueConstraint(
                fields=["owner_agent", "purpose"], condition=models.Q(owner_agent__isnull=False),
                name="secret_runtime_credential_unique_purpose",
            ),
            models.CheckConstraint(
                condition=models.Q(owner_agent__isnull=True, purpose__isnull=True)
                | models.Q(owner_agent__isnull=False, purpose__isnull=False),
                name="secret_runtime_credential_has_purpose",
            ),
            models.UniqueConstraint(fields=["driver_id", "backend_name"], name="secret_backend_identity_unique"),
        ]
        # The API's list: keyset pages on (created_at, id) of the Secrets people made (the
        # Agents' runtime credentials, one or more per Agent, are never listed).
        indexes = [models.Index(fields=["namespace", "created_at", "id"], condition=models.Q(owner_agent__isnull=True),
                                name="secret_created_order")]

    def __str__(self) -> str:
        return self.name


class Preset(TimestampedModel):
    """A reusable launch template for Create Agent (``occ.documents.presets``). An Agent made
    from it keeps no reference to it: editing or deleting a Preset changes no Agent."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.PRESET), editable=False)
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.PROTECT, related_name="presets")
    name = models.CharField(max_length=800)
    template = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="preset_name_unique_in_namespace"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def spec(self) -> PresetTemplate:
        """The template, typed."""
        return PresetTemplate.model_validate(self.template)


class ExecutionMode(models.TextChoices):
    EMBEDDED = "embedded"
    DEDICATED = "dedicated"


class AgentStatus(models.TextChoices):
    ACTIVE = "active"
    DELETING = "deleting"


class DesiredRuntimeState(models.TextChoices):
    RUNNING = "running"
    STOPPED = "stopped"


# ``Agent.stopped_reason`` of an Agent a budget paused (issue 29): the console shows it as
# "Paused: budget exceeded" wherever it shows the Agent's state.
BUDGET_EXCEEDED = "budget_exceeded"


class HarnessAuthMethod(models.TextChoices):
    API_KEY = "api_key"
    # A Codex service account token. The Agent API does not accept it yet (the dedicated Codex
    # topology it authenticates does not exist); hosted plugin discovery reads it when bound.
    CODEX_PAT = "codex_pat"


class Agent(TimestampedModel):
    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.AGENT), editable=False)
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.PROTECT, related_name="agents")
    name = models.CharField(max_length=800)
    configuration = models.ForeignKey(Configuration, on_delete=models.PROTECT, related_name="agents")
    execution_mode = models.CharField(max_length=16, choices=ExecutionMode.choices, default=ExecutionMode.EMBEDDED)
    harness_auth_method = models.CharField(max_length=32, choices=HarnessAuthMethod.choices, null=True, blank=True)
    harness_secret = models.ForeignKey(
        Secret, null=True, blank=True, on_delete=models.PROTECT, related_name="harness_agents"
    )
    backend_id = models.CharField(max_length=200, null=True, blank=True)
    plugins = models.JSONField(default=dict, blank=True)
    plugin_approvers = models.JSONField(default=list, blank=True)
    repository_bindings = models.JSONField(default=list, blank=True)
    # Staged initial workspace files: applied by the first deployment, then cleared.
    initial_workspace_files = models.JSONField(default=dict, blank=True)
    # Smoke conversations (occ.documents.SmokeConversation, stored as their documents): each
    # must match through a candidate before a new revision replaces the serving one.
    smoke_conversations = models.JSONField(default=list, blank=True)
    # A published revision that crash-loops or is not ready within its bound hands the Agent back
    # to the revision it replaced (issue 28); false: it stays, failed, for a person to fix.
    rollback_on_failure = models.BooleanField(default=True)
    desired_runtime_state = models.CharField(
        max_length=16, choices=DesiredRuntimeState.choices, default=DesiredRuntimeState.STOPPED
    )
    status = models.CharField(max_length=16, choices=AgentStatus.choices, default=AgentStatus.ACTIVE)
    # Why OCC itself stopped the Agent (BUDGET_EXCEEDED), empty otherwise; cleared when it starts.
    stopped_reason = models.CharField(max_length=32, blank=True, default="")
    # Set and cleared only by the worker, by compare-and-set.
    active_revision = models.ForeignKey(
        "occ.AgentRevision", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="agent_name_unique_in_namespace"),
            choices_check("execution_mode", ExecutionMode, "agent_execution_mode_valid"),
            choices_check("status", AgentStatus, "agent_status_valid"),
            choices_check("desired_runtime_state", DesiredRuntimeState, "agent_desired_state_valid"),
            models.CheckConstraint(
                condition=models.Q(harness_auth_method__isnull=True, harness_secret__isnull=True)
                | models.Q(harness_auth_method__isnull=False, harness_secret__isnull=False),
                name="agent_harness_auth_complete",
            ),
        ]
        # The console's list: a Namespace's Agents by name, ignoring case, in keyset pages; the
        # API's by creation.
        indexes = [models.Index(F("namespace"), Lower("name"), F("id"), name="agent_name_order"),
                   models.Index(fields=["namespace", "created_at", "id"], name="agent_created_order")]

    def __str__(self) -> str:
        return self.name

    @property
    def smoke(self) -> list[SmokeConversation]:
        """The saved smoke conversations, typed."""
        return [SmokeConversation.model_validate(item) for item in self.smoke_conversations or []]


class AgentRevision(models.Model):
    """An immutable snapshot of everything one deployment needs. Never updated."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.REVISION), editable=False)
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.PROTECT, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    configuration_id = models.CharField(max_length=64)
    configuration_generation = models.PositiveIntegerField()
    snapshot = models.JSONField()
    created_by = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="revision_number_unique_per_agent"),
            models.CheckConstraint(condition=models.Q(number__gte=1), name="revision_number_positive"),
        ]
        # The API's list of an Agent's revisions: keyset pages on (created_at, id).
        indexes = [models.Index(fields=["agent", "created_at", "id"], name="revision_created_order")]

    def __str__(self) -> str:
        return f"{self.agent_id} #{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise TypeError("AgentRevision is immutable")
        super().save(*args, **kwargs)

    @property
    def spec(self) -> RevisionSpec:
        """The snapshot, typed (parsed once per loaded row)."""
        cached = self.__dict__.get("_spec")
        if cached is None or cached[0] is not self.snapshot:
            cached = (self.snapshot, RevisionSpec.from_stored(self.snapshot))
            self.__dict__["_spec"] = cached
        return cached[1]
