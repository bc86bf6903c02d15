from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from occ.dependencies import broker_problem, database_problem


class Command(BaseCommand):
    help = "Fail fast, with a clear message, when the configured database or broker is unreachable."

    def handle(self, *args, **options):
        problems = [p for p in (database_problem(connection), broker_problem()) if p]
        if problems:
            raise CommandError("\n".join(problems))
        self.stdout.write("database and broker reachable")
