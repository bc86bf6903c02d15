"""``manage.py occ_plugin_installs --forget-refusals [--agent ID]``: the local driver's memory
of refused plugin installs.

When the runtime refuses an exact npm spec (its normal non-zero exit), the ``local`` compute
driver remembers it for ``OCC_LOCAL_PLUGIN_REFUSAL_SECONDS`` so later revisions warn
``PLUGIN_INSTALL_FAILED`` at once instead of spending another install on it. After fixing what
made it fail (a registry that was unreachable, a proxy), forget the refusals: the next
deployment tries the install again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from occ.drivers.compute.local_plugins import forget_refusals
from occ.ids import IdPrefix, is_valid_id


class Command(BaseCommand):
    help = "Forget the local driver's remembered plugin install refusals, so the next deployment tries again."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--forget-refusals", action="store_true", required=True,
                            help="remove the remembered refusals")
        parser.add_argument("--agent", metavar="ID", help="only this Agent's (agt_...); default: every Agent's")

    def handle(self, *args: Any, **options: Any) -> None:
        agent_id = options.get("agent")
        if agent_id is not None and not is_valid_id(agent_id, IdPrefix.AGENT):
            raise CommandError(f"{agent_id!r} is not an Agent id (agt_...).")
        removed = forget_refusals(Path(settings.OCC_DATA_DIR) / "agents", agent_id)
        self.stdout.write(f"Forgot {removed} refused install(s)"
                          + (f" of {agent_id}." if agent_id else ".")
                          + (" The next deployment tries them again." if removed else ""))
