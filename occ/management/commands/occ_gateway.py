"""``manage.py occ_gateway info <agent id>``: where an Agent's gateway listens, for a local operator.

Prints the gateway's URL (and its OpenAI-compatible chat endpoint), the revision it is
about, and the compute driver's read-only checks. The gateway password is printed only
with ``--show-password`` (an audited read); ``--json`` prints one JSON object instead.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from occ.errors import NotFound
from occ.selectors.gateways import GatewayInfo, gateway_info
from occ.services.gateways import agent_gateway_password_read


class Command(BaseCommand):
    help = "Show where an Agent's gateway listens (and, with --show-password, its password)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["info"])
        parser.add_argument("agent_id", help="the Agent's id (agt_...)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--show-password", action="store_true",
                            help="also print the gateway password (audited)")

    def handle(self, *args: Any, **options: Any) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)  # the readiness probe's request lines
        try:
            info = gateway_info(agent_id=options["agent_id"])
            password = (agent_gateway_password_read(agent_id=info.agent_id, consumer=str)
                        if options["show_password"] else None)
        except NotFound as exc:
            raise CommandError(exc.message) from None
        if options["json"]:
            document = info.as_json()
            if password is not None:
                document["password"] = password
            self.stdout.write(json.dumps(document, indent=2))
            return
        self._describe(info, password, agent_id=options["agent_id"])

    def _describe(self, info: GatewayInfo, password: str | None, *, agent_id: str) -> None:
        write = self.stdout.write
        write(f"Agent {info.agent_id} ({info.name}) in Namespace {info.namespace_id}: "
              f"{info.status}, desired {info.desired_runtime_state}")
        write(f"active revision: {info.active_revision_id or '-'}")
        if info.http_url is None:
            write("gateway: not running" + ("" if info.revision_id else " (the Agent was never deployed)"))
        else:
            write(f"gateway: {info.http_url}  ({'ready' if info.ready else 'not ready'}; "
                  f"websocket {info.websocket_url})")
            write(f"chat:    POST {info.http_url}/v1/chat/completions  with  Authorization: Bearer <password>")
        if password is not None:
            write(f"password: {password}")
        else:
            write(f"password: not shown; run `python manage.py occ_gateway info {agent_id} --show-password` "
                  "to print it (each read is audited)")
        for check in info.checks:
            write(f"  {check.component}/{check.check}: {check.state}" + (f" ({check.code})" if check.code else ""))
