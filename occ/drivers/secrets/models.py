"""The database SecretDriver's own table, kept inside the driver's package so the driver
imports nothing of ``occ.models``. The model stays in the ``occ`` app (same table, same
migration); ``occ.models`` re-exports it so Django registers it with the app's models."""

from __future__ import annotations

from django.db import models


class EncryptedSecretValue(models.Model):
    """The database SecretDriver's own table: Fernet ciphertext, read only by that driver."""

    backend_name = models.CharField(primary_key=True, max_length=255)
    ciphertext = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "occ"

    def __str__(self) -> str:
        return self.backend_name
