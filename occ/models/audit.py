from __future__ import annotations

from typing import Any

from django.db import models

from occ.ids import IdPrefix, id_default
from occ.models.base import choices_check


class AuditKind(models.TextChoices):
    BOOTSTRAP = "bootstrap"
    MUTATION = "mutation"
    AUTHORIZATION_DENIAL = "authorization_denial"
    ACCESS = "access"
    LIFECYCLE = "lifecycle"
    RECONCILE = "reconcile"


class AuditOutcome(models.TextChoices):
    SUCCEEDED = "succeeded"
    DENIED = "denied"
    FAILED = "failed"


class AuditEvent(models.Model):
    """Append-only evidence. Never holds secret values, tokens, headers or bodies.

    Rows are never updated or deleted: the model refuses it and database triggers
    (migration 0002) refuse it too.
    """

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.AUDIT), editable=False)
    occurred_at = models.DateTimeField(auto_now_add=True, db_index=True)
    kind = models.CharField(max_length=24, choices=AuditKind.choices)
    actor_id = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    action = models.CharField(max_length=128)
    namespace_id = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    resource_kind = models.CharField(max_length=32, null=True, blank=True)
    resource_id = models.CharField(max_length=255, null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=AuditOutcome.choices)
    details = models.JSONField(default=dict)

    class Meta:
        constraints = [
            choices_check("kind", AuditKind, "audit_kind_valid"),
            choices_check("outcome", AuditOutcome, "audit_outcome_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.outcome}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise TypeError("AuditEvent is append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("AuditEvent is append-only")
