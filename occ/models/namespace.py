from __future__ import annotations

from django.db import models

from occ.ids import IdPrefix, id_default
from occ.models.base import TimestampedModel, choices_check


class NamespaceStatus(models.TextChoices):
    PROVISIONING = "provisioning"
    READY = "ready"
    FAILED = "failed"
    DELETING = "deleting"


class NamespaceQuerySet(models.QuerySet["Namespace"]):
    def live(self) -> NamespaceQuerySet:
        return self.filter(deleted_at__isnull=True)


class Namespace(TimestampedModel):
    """A tenant. Deleted Namespaces stay as tombstones so their names stay reserved."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.NAMESPACE), editable=False)
    # Unique across every Namespace ever created, tombstones included.
    name = models.CharField(max_length=800, unique=True)
    existing_namespace = models.CharField(max_length=63, null=True, blank=True)
    status = models.CharField(max_length=16, choices=NamespaceStatus.choices, default=NamespaceStatus.PROVISIONING)
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = NamespaceQuerySet.as_manager()

    class Meta:
        constraints = [
            choices_check("status", NamespaceStatus, "namespace_status_valid"),
            models.UniqueConstraint(
                fields=["existing_namespace"],
                condition=models.Q(deleted_at__isnull=True, existing_namespace__isnull=False),
                name="namespace_existing_namespace_unique_live",
            ),
        ]
        # The API's list: keyset pages on (created_at, id).
        indexes = [models.Index(fields=["created_at", "id"], name="namespace_created_order")]

    def __str__(self) -> str:
        return self.name

    @property
    def is_tombstoned(self) -> bool:
        return self.deleted_at is not None
