"""The gateway's fake Slack: ``fake_slack_socket.mjs`` run with the runtime's Node, for e2e tests.

OCC's own Slack fake (``fake_slack.py``) answers OCC's read-only checks; this one is what a
real OpenClaw gateway talks to when its environment has ``SLACK_API_URL`` pointing at
``base_url``: the Web API the Slack channel plugin calls, and Socket Mode over ``ws://`` on
the same port. The test reads the Web API calls it received (method, channel, text, which
kind of token: never a token) and triggers an ``app_mention`` through its control endpoints.

It runs in its own process group and is stopped by its PID. ``bot_token``/``app_token``,
when given, are the only tokens it accepts (passed in its environment, never written down).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from occ.runtime import Runtime

SCRIPT = Path(__file__).with_name("fake_slack_socket.mjs")
BOT_USER_ID = "U0BOT0001"  # auth.test's user_id: an app_mention names it as <@U0BOT0001>
START_SECONDS = 60
STOP_SECONDS = 10
LISTENING = re.compile(r"^listening (\d+)$", re.MULTILINE)


class FakeSlackSocket:
    def __init__(self, runtime: Runtime, *, log_path: Path, bot_token: str = "", app_token: str = "") -> None:
        self.runtime = runtime
        self.log_path = log_path
        self.tokens = {"FAKE_SLACK_BOT_TOKEN": bot_token, "FAKE_SLACK_APP_TOKEN": app_token}
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        """What ``SLACK_API_URL`` is set to."""
        return f"http://127.0.0.1:{self.port}/api/"

    @property
    def control_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeSlackSocket:
        env = {"PATH": self.runtime.bin_path(), "OCC_RUNTIME_DIR": str(self.runtime.root.resolve()), **self.tokens}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen([str(self.runtime.node_binary()), str(SCRIPT), "0"], env=env,
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        deadline = time.monotonic() + START_SECONDS
        while not (found := LISTENING.search(self.log_path.read_text(errors="replace"))):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the fake Slack did not start:\n{self.log()[-2000:]}")
            time.sleep(0.05)
        self.port = int(found.group(1))
        return self

    def stop(self) -> None:
        """SIGTERM its process group (the group is its own: its PID), SIGKILL after a timeout."""
        if self.process is None or self.process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_SECONDS)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # --- what the test reads and does -----------------------------------------------------
    def requests(self) -> list[dict[str, Any]]:
        """Every Web API call so far: ``{"method", "channel", "text", "token"}`` (token: its kind)."""
        result: list[dict[str, Any]] = httpx.get(f"{self.control_url}/_requests", timeout=5).raise_for_status().json()
        return result

    def state(self) -> dict[str, Any]:
        """``{"connections": open Socket Mode connections, "hellos": ..., "acks": [envelope ids]}``."""
        result: dict[str, Any] = httpx.get(f"{self.control_url}/_state", timeout=5).raise_for_status().json()
        return result

    def mention(self, channel: str, text: str, *, user: str = "U0ALICE01") -> dict[str, Any]:
        """Send an ``app_mention`` to every open Socket Mode connection; ``{"delivered", "envelopeId"}``."""
        response = httpx.post(f"{self.control_url}/_mention", json={"channel": channel, "text": text, "user": user},
                              timeout=5)
        assert response.status_code == 200, f"no Socket Mode connection to mention on: {response.text}"
        result: dict[str, Any] = response.json()
        return result
