"""Deploy idempotency: an optional client key names one admitted revision for the Agent's life."""

from __future__ import annotations

from django.db import models


class DeployIdempotencyKey(models.Model):
    """``Idempotency-Key`` of a deploy: the same key returns the same revision; the same key
    after the admitted input changed is a conflict. Deleted with its Agent."""

    agent = models.ForeignKey("occ.Agent", on_delete=models.CASCADE, related_name="deploy_keys")
    key = models.CharField(max_length=255)
    revision = models.ForeignKey("occ.AgentRevision", on_delete=models.CASCADE, related_name="+")
    configuration_id = models.CharField(max_length=64)
    configuration_generation = models.PositiveIntegerField()
    # SHA-256 of the admitted snapshot: a replay must admit exactly the same thing.
    fingerprint = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "key"], name="deploy_key_unique_per_agent"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.key}"
