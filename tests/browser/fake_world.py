"""The outside world of the browser tests, as one loopback process: fake Slack, fake model providers
and the fake Codex plugin catalog.

``python -m tests.browser.fake_world`` serves, each on a free port it binds itself (so no other
process can take the port between its choice and its use) and prints as ``ports {json}``:

- the Slack Web API fake (``tests/fakes/fake_slack.py``) at ``http://127.0.0.1:<slack>/api/``: a
  workspace with channels ``#general`` and ``#random`` and the people ``alice`` and ``bob``;
  ``auth.test`` accepts any ``xoxb-``/``xapp-`` token (as a bot of that workspace), so the
  canary tokens below, and whatever a person types by hand, are accepted;
- the OpenAI and Anthropic model lists (``tests/fakes/fake_model_providers.py``) at
  ``http://127.0.0.1:<models>/openai`` and ``/anthropic``, answering only the canary keys below;
- the hosted Codex plugin catalog (``tests/fakes/fake_codex.py``) at ``http://127.0.0.1:<codex>``,
  answering only its own token (``tests.fakes.fake_codex.TOKEN``).

The canaries are the secret values the browser test types; they must never come back in any
HTML the browser receives. The process runs until SIGTERM/SIGINT (the fixture signals its group).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any

from tests.fakes.fake_codex import FakeCodex
from tests.fakes.fake_model_providers import FakeModelProviders
from tests.fakes.fake_slack import FakeSlack, TokenInfo, channel, user

MODEL_KEY = "sk-canary-browser-model-key-4f1e9c"
ANTHROPIC_KEY = "sk-ant-canary-browser-model-key-77d0"
BOT_TOKEN = "xoxb-canary-browser-bot-token-2b8a"
APP_TOKEN = "xapp-canary-browser-app-token-91c3"
CANARIES = (MODEL_KEY, ANTHROPIC_KEY, BOT_TOKEN, APP_TOKEN)
PORTS_LINE = "ports "

CHANNELS = (("C0BRGENERAL", "general"), ("C0BRRANDOM", "random"))
PEOPLE = (("U0BRALICE", "alice", "Alice"), ("U0BRBOB", "bob", "Bob"))
ACCEPTED_PREFIXES = ("xoxb-", "xapp-")


class AnySlackToken(dict[str, TokenInfo]):
    """The fake's token table: every ``xoxb-``/``xapp-`` token is a bot of the workspace."""

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        return TokenInfo(team_name="Browser Workspace") if key.startswith(ACCEPTED_PREFIXES) else default


def slack_world(slack: FakeSlack) -> None:
    slack.world.tokens = AnySlackToken()
    slack.world.channels = [channel(channel_id, name) for channel_id, name in CHANNELS]
    slack.world.users = [user(user_id, name, display_name=display) for user_id, name, display in PEOPLE]


def model_providers(port: int) -> FakeModelProviders:
    providers = FakeModelProviders(port=port)
    providers.keys = {"openai": MODEL_KEY, "anthropic": ANTHROPIC_KEY}
    return providers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.parse_args(argv)
    codex = FakeCodex(port=0)
    slack = FakeSlack(port=0)
    slack_world(slack)
    providers = model_providers(0)
    stopped = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.set())
    slack.start()
    providers.start()
    codex.start()
    print(f"fake Slack on {slack.base_url}; fake model providers on {providers.origin}", flush=True)
    print(PORTS_LINE + json.dumps({"slack": slack.port, "models": providers.port, "codex": codex.port}), flush=True)
    stopped.wait()
    codex.stop()
    providers.stop()
    slack.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
