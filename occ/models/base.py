from __future__ import annotations

from django.db import models


class TimestampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


def choices_check(field: str, choices: type[models.TextChoices], name: str) -> models.CheckConstraint:
    """A database check that ``field`` holds one of ``choices``."""
    return models.CheckConstraint(
        condition=models.Q(**{f"{field}__in": choices.values}), name=name
    )
