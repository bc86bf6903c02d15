"""``manage.py occ_bootstrap``: create the Installation once; afterwards verify and issue nothing.

The files it writes under ``OCC_DATA_DIR`` are created with mode 0600 and never overwritten:
``bootstrap-admin-key.json`` (the 30-day ``bootstrap-admin`` service key, written once) and,
when the administrator's password was generated, ``admin-password``.

A generated password is shown once on the controlling terminal (``/dev/tty``), never on
stdout: ``make run``'s output is often kept (``make run > occ.log``, a CI log, a terminal
multiplexer's scrollback file), and the password must live only in its 0600 file. Without a
terminal, the output names the file instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from occ.models import Installation
from occ.services.bootstrap import BootstrapMismatch, BootstrapResult, installation_bootstrap
from occ.timestamps import rfc3339

KEY_FILE = "bootstrap-admin-key.json"
PASSWORD_FILE = "admin-password"


def create_private(path: Path, text: str) -> None:
    """Create ``path`` with mode 0600; never overwrite."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def show_on_terminal(text: str) -> bool:
    """Write ``text`` to the controlling terminal, bypassing stdout; False when there is none."""
    try:
        with open("/dev/tty", "w") as terminal:
            terminal.write(text)
    except OSError:
        return False
    return True


def key_document(result: BootstrapResult) -> dict[str, Any]:
    key = result.key
    assert key is not None
    assert result.key_token is not None
    return {
        "data": {"id": key.id, "servicePrincipalId": key.principal_id, "name": key.name,
                 "expiresAt": rfc3339(key.expires_at), "key": result.key_token},
        "meta": {"installationId": result.installation.id},
    }


class Command(BaseCommand):
    help = "Create the Installation, its administrators and the default Namespace (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir = Path(settings.OCC_DATA_DIR)
        key_path, password_path = data_dir / KEY_FILE, data_dir / PASSWORD_FILE
        if not Installation.objects.exists():
            # Files from an earlier Installation would be stale, and we never overwrite them.
            for leftover in (key_path, password_path):
                if leftover.exists():
                    raise CommandError(f"{leftover} exists but there is no Installation; move the file away first.")
        try:
            result = installation_bootstrap(
                name=settings.OCC_INSTALLATION_NAME,
                admin_username=settings.OCC_ADMIN_USERNAME,
                admin_password=settings.OCC_ADMIN_PASSWORD or None,
                key_days=settings.OCC_BOOTSTRAP_KEY_DAYS,
            )
        except BootstrapMismatch as exc:
            raise CommandError(f"The existing Installation does not verify: {exc}") from exc
        if not result.created:
            self.stdout.write(f"Installation {result.installation.id} verified; nothing issued.")
            return
        create_private(key_path, json.dumps(key_document(result), indent=2) + "\n")
        self.stdout.write(f"Installation {result.installation.id} created.")
        self.stdout.write(f"Bootstrap service key written to {key_path} (mode 0600).")
        if result.admin_password:
            create_private(password_path, result.admin_password + "\n")
            shown = show_on_terminal(
                f"Administrator '{result.admin_username}' password (shown once on this terminal, "
                f"kept in {password_path}): {result.admin_password}\n"
            )
            where = "shown once on the terminal, not in this output; " if shown else ""
            self.stdout.write(
                f"Administrator '{result.admin_username}' password: {where}kept in {password_path} (mode 0600)."
            )
        else:
            self.stdout.write(f"Administrator '{result.admin_username}' uses the password from OCC_ADMIN_PASSWORD.")
