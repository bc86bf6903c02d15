"""``manage.py occ_preflight``: refuse to start when a configured service is unreachable.

Run first by ``make run`` and the Procfile, so a missing PostgreSQL or Redis is reported in
one sentence that says which and how to start it, instead of a traceback from a worker.

It exits with ``EX_TEMPFAIL`` (75), the conventional code for "try again later": a service
being down is not a broken installation, and ``make run``'s supervisor (devtools.procs) waits
and retries a process that exits with it instead of giving up on it.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from occ.dependencies import broker_problem, database_problem


class Command(BaseCommand):
    help = "Fail fast, with a clear message, when the configured database or broker is unreachable."
    # Only reachability matters here; the system checks run with migrate and the server.
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        problems = [p for p in (database_problem(connection), broker_problem()) if p]
        if problems:
            raise CommandError("OCC cannot start.\n" + "\n".join(f"- {p}" for p in problems),
                               returncode=os.EX_TEMPFAIL)
        self.stdout.write("database and broker reachable")
