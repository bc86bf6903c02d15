"""``manage.py occ_rotate_secret_keys``: re-encrypt stored Secret values with the newest key.

Put the new Fernet key first in ``OCC_SECRET_KEYS`` (keep the old ones after it), run this,
then drop the old keys. Safe to run again; values already under the newest key are skipped.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from occ.drivers.secrets.database import DatabaseSecretDriver


class Command(BaseCommand):
    help = "Re-encrypt every value of the database secret driver with the first key of OCC_SECRET_KEYS."

    def handle(self, *args: Any, **options: Any) -> None:
        result = DatabaseSecretDriver().rotate()
        self.stdout.write(f"re-encrypted {result.rotated} value(s); {result.already_current} already current")
        if result.undecryptable:
            names = ", ".join(result.undecryptable[:10])
            raise CommandError(
                f"{len(result.undecryptable)} value(s) could not be decrypted with any configured key and were "
                f"left as they are ({names}). Add the key they were written with to OCC_SECRET_KEYS and run again."
            )
