from __future__ import annotations

from django.db import models

from occ.ids import IdPrefix, id_default


class Installation(models.Model):
    """The singleton root of every resource; created once by ``occ_bootstrap``."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.INSTALLATION), editable=False)
    name = models.CharField(max_length=800)
    singleton = models.BooleanField(default=True, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(singleton=True), name="installation_singleton"),
        ]

    def __str__(self) -> str:
        return self.name
