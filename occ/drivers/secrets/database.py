"""The default SecretDriver: Fernet ciphertext in its own table (EncryptedSecretValue).

Keys come from ``OCC_SECRET_KEYS``, newest first. New values are encrypted with the newest
key; every listed key still decrypts, so a new key can be put in front, ``rotate()`` run,
and the old key dropped afterwards. Nothing outside this module decrypts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, transaction
from django.utils import timezone

from occ.drivers.secrets.base import SecretDriver, SecretDriverError, SecretValueMissing
from occ.drivers.secrets.models import EncryptedSecretValue

T = TypeVar("T")


@dataclass
class Rotation:
    rotated: int = 0
    already_current: int = 0
    undecryptable: list[str] = field(default_factory=list)


def _fernets(keys: Sequence[str]) -> list[Fernet]:
    if not keys:
        raise ImproperlyConfigured("OCC_SECRET_KEYS is empty: the database secret driver needs a Fernet key.")
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key))
        except (ValueError, TypeError):
            raise ImproperlyConfigured(
                f"OCC_SECRET_KEYS entry {position} is not a Fernet key (32 url-safe base64-encoded bytes)."
            ) from None
    return fernets


class DatabaseSecretDriver(SecretDriver):
    driver_id = "database"

    def __init__(self, keys: Sequence[str] | None = None) -> None:
        fernets = _fernets(list(keys) if keys is not None else list(settings.OCC_SECRET_KEYS))
        self._newest = fernets[0]
        self._fernet = MultiFernet(fernets)

    def put(self, backend_name: str, value: str) -> None:
        ciphertext = self._fernet.encrypt(value.encode("utf-8")).decode("ascii")
        try:
            EncryptedSecretValue.objects.update_or_create(backend_name=backend_name,
                                                          defaults={"ciphertext": ciphertext})
        except DatabaseError as exc:
            raise SecretDriverError() from exc

    def delete(self, backend_name: str) -> None:
        try:
            EncryptedSecretValue.objects.filter(backend_name=backend_name).delete()
        except DatabaseError as exc:
            raise SecretDriverError() from exc

    def with_value(self, backend_name: str, consumer: Callable[[str], T]) -> T:
        try:
            ciphertext = (EncryptedSecretValue.objects.filter(backend_name=backend_name)
                          .values_list("ciphertext", flat=True).first())
        except DatabaseError as exc:
            raise SecretDriverError() from exc
        if ciphertext is None:
            raise SecretValueMissing()
        try:
            plaintext = self._fernet.decrypt(ciphertext.encode("ascii"))
        except InvalidToken:
            raise SecretDriverError("The Secret's value cannot be decrypted with the configured keys.") from None
        return consumer(plaintext.decode("utf-8"))

    def rotate(self, *, batch_size: int = 200) -> Rotation:
        """Re-encrypt every stored value with the newest key. Safe to run again.

        Rows already under the newest key are left alone; rows no configured key can open are
        reported, never dropped.
        """
        result = Rotation()
        names = list(EncryptedSecretValue.objects.order_by("backend_name").values_list("backend_name", flat=True))
        for start in range(0, len(names), batch_size):
            chunk = names[start:start + batch_size]
            with transaction.atomic():
                rows = list(EncryptedSecretValue.objects.select_for_update().filter(backend_name__in=chunk))
                changed = [row for row in rows if self._rotate_row(row, result)]
                EncryptedSecretValue.objects.bulk_update(changed, ["ciphertext", "updated_at"])
        return result

    def _rotate_row(self, row: EncryptedSecretValue, result: Rotation) -> bool:
        token = row.ciphertext.encode("ascii")
        try:
            self._newest.decrypt(token)
        except InvalidToken:
            pass
        else:
            result.already_current += 1
            return False
        try:
            row.ciphertext = self._fernet.rotate(token).decode("ascii")
        except InvalidToken:
            result.undecryptable.append(row.backend_name)
            return False
        row.updated_at = timezone.now()
        result.rotated += 1
        return True
