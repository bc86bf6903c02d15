"""``manage.py occ_fake_model``: serve the loopback fake OpenAI-compatible model.

For trying OCC where there is no internet (and no model provider): a Configuration whose
``models.providers.<id>.baseUrl`` is this server's URL gets a gateway that answers every
chat with one fixed reply. It listens on 127.0.0.1 only and runs until Ctrl-C.
"""

from __future__ import annotations

import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from devtools.fake_openai import MODEL_ID, REPLY, FakeOpenAI

DEFAULT_PORT = 18555


class Command(BaseCommand):
    help = "Serve a fake OpenAI-compatible model on 127.0.0.1 (one fixed reply, streamed) until Ctrl-C."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                            help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)")
        parser.add_argument("--reply", default=REPLY, help=f"the text every chat gets (default {REPLY})")

    def handle(self, *args: Any, **options: Any) -> None:
        port = options["port"]
        if not 0 <= port <= 65535:
            raise CommandError("--port must be between 0 and 65535.")
        try:
            server = FakeOpenAI(port=port, reply=options["reply"])
        except OSError:
            raise CommandError(f"Cannot listen on 127.0.0.1:{port}; is it in use? Choose another --port.") from None
        self.stdout.write(f"fake OpenAI-compatible model on {server.base_url} (model id {MODEL_ID}); "
                          "Ctrl-C stops it")
        self.stdout.flush()
        # Ctrl-C stops it even when started with SIGINT ignored (a background job of a
        # non-interactive shell inherits that, and Python then installs no handler of its own).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            self.stdout.write("fake model stopped")
