"""A loopback fake of the Slack Web API (real HTTP on 127.0.0.1, a free port, from a thread).

It serves what OCC's Slack ChannelDriver reads (``auth.test``, ``users.list``/``info``,
``conversations.list``/``info``) from a scriptable world: the tokens it knows (bot or not,
their team, their scopes), people and channels paged by an opaque cursor, and error modes
per method (``invalid_auth``, ``missing_scope``, HTTP 429, bad JSON, HTTP 500, a redirect, a
huge body, a stall). Every other method answers ``unknown_method``. Each request is recorded
(HTTP method, path, API method, query parameters, which kind of token came: never the token
itself) so tests can assert that no message was ever sent.

In-process: ``with FakeSlack() as slack: ...`` or the ``fake_slack`` fixture (which also points
``OCC_SLACK_API_BASE_URL`` at it). For the console's browser tests or by hand:
``python -m tests.fakes.fake_slack --port 18556`` serves a demo workspace.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

# Read-only methods the driver may call; anything else (chat.postMessage, conversations.join...)
# is recorded and answered `unknown_method`.
READ_METHODS = frozenset({"auth.test", "users.list", "users.info", "conversations.list", "conversations.info"})
ALL_SCOPES = frozenset({"users:read", "channels:read", "groups:read"})
REQUESTS_KEPT = 2000

# Error modes a test may script for a method (``slack.fail("users.list", "missing_scope")``).
MODES = ("invalid_auth", "missing_scope", "ratelimited", "ratelimited_body", "bad_json", "not_object",
         "http_500", "redirect", "huge", "stall", "no_team", "bad_shape", "unknown_error")


@dataclass
class TokenInfo:
    team_id: str = "T0FAKE01"
    team_name: str = "Fake Workspace"
    bot_id: str | None = "B0FAKE01"      # None: a user token, not a bot's
    user_id: str = "U0BOT0001"
    scopes: frozenset[str] = ALL_SCOPES


@dataclass
class Failure:
    mode: str
    times: int | None  # None: every call


@dataclass
class World:
    tokens: dict[str, TokenInfo] = field(default_factory=dict)
    users: list[dict[str, Any]] = field(default_factory=list)
    channels: list[dict[str, Any]] = field(default_factory=list)
    page_size: int = 1000           # at most this many entries per page, whatever `limit` says
    stall_seconds: float = 30.0
    latency_seconds: float = 0.0    # before every answer
    method_latency_seconds: dict[str, float] = field(default_factory=dict)  # per method, instead
    failures: dict[str, Failure] = field(default_factory=dict)


def user(user_id: str, name: str, *, display_name: str = "", real_name: str = "", deleted: bool = False,
         team_id: str = "T0FAKE01") -> dict[str, Any]:
    return {"id": user_id, "team_id": team_id, "name": name, "deleted": deleted, "real_name": real_name,
            "profile": {"display_name": display_name, "real_name": real_name}}


def channel(channel_id: str, name: str, *, private: bool = False, archived: bool = False) -> dict[str, Any]:
    return {"id": channel_id, "name": name, "is_channel": not private, "is_private": private,
            "is_archived": archived}


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _offset(cursor: str) -> int | None:
    try:
        prefix, _, number = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        return int(number) if prefix == "offset" else None
    except ValueError:
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, code: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("content-type", "application/json; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)

    def _json(self, body: dict[str, Any], code: int = 200, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(body).encode(), headers)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        form = dict(parse_qsl(body.decode("utf-8", "replace"))) if body else {}
        self._serve(form)

    def _token(self, params: dict[str, str]) -> str:
        header = self.headers.get("authorization") or ""
        return header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else params.get("token", "")

    def _serve(self, form: dict[str, str] | None = None) -> None:
        url = urlsplit(self.path)
        params = {**dict(parse_qsl(url.query)), **(form or {})}
        method = url.path.rsplit("/", 1)[-1]
        token = self._token(params)
        params.pop("token", None)
        world = self.server.world
        info = world.tokens.get(token)
        self.server.record({"httpMethod": self.command, "path": url.path, "method": method, "params": params,
                            "token": (token[:5] if info is not None else ("unknown" if token else "none"))})
        with self.server.in_flight(method):
            latency = world.method_latency_seconds.get(method, world.latency_seconds)
            if latency:
                time.sleep(latency)
            self._answer(method, token, info, params)

    def _answer(self, method: str, token: str, info: TokenInfo | None, params: dict[str, str]) -> None:
        failure = self.server.take_failure(method)
        if failure is not None and self._fail(failure):
            return
        if method not in READ_METHODS:
            self._json({"ok": False, "error": "unknown_method"})
            return
        if info is None:
            self._json({"ok": False, "error": "not_authed" if not token else "invalid_auth"})
            return
        getattr(self, "_" + method.replace(".", "_"))(info, params, failure)

    def _fail(self, mode: str) -> bool:
        """Answer with the scripted failure; False for modes handled by the method itself."""
        simple = {"invalid_auth": {"ok": False, "error": "invalid_auth"},
                  "missing_scope": {"ok": False, "error": "missing_scope", "needed": "users:read"},
                  "ratelimited_body": {"ok": False, "error": "ratelimited"},
                  "unknown_error": {"ok": False, "error": "fatal_error"}}
        if mode in simple:
            self._json(simple[mode])
        elif mode == "ratelimited":
            self._json({"ok": False, "error": "ratelimited"}, code=429, headers={"retry-after": "30"})
        elif mode == "bad_json":
            self._send(200, b'{"ok": true, "members": [')
        elif mode == "not_object":
            self._send(200, b'["ok"]')
        elif mode == "http_500":
            self._send(500, b"<html>internal error</html>")
        elif mode == "redirect":
            self._send(302, b"", headers={"location": "http://127.0.0.1:9/elsewhere"})
        elif mode == "huge":
            self._send(200, b'{"ok": true, "pad": "' + b"x" * (3 * 1024 * 1024) + b'"}')
        elif mode == "stall":
            time.sleep(self.server.world.stall_seconds)
            self._json({"ok": False, "error": "fatal_error"})
        else:
            return False
        return True

    # --- methods ---

    def _auth_test(self, info: TokenInfo, params: dict[str, str], failure: str | None) -> None:
        body: dict[str, Any] = {"ok": True, "url": "https://fake.slack.test/", "team": info.team_name,
                                "user": "occ-bot", "team_id": info.team_id, "user_id": info.user_id}
        if failure == "no_team":
            body["team_id"] = "not-a-team"
        if info.bot_id is not None:
            body["bot_id"] = info.bot_id
        self._json(body)

    def _page(self, items: list[dict[str, Any]], params: dict[str, str], key: str, failure: str | None) -> None:
        offset = 0
        if params.get("cursor"):
            found = _offset(params["cursor"])
            if found is None:
                self._json({"ok": False, "error": "invalid_cursor"})
                return
            offset = found
        try:
            limit = max(1, min(int(params.get("limit", "100")), 1000))
        except ValueError:
            limit = 100
        size = min(limit, self.server.world.page_size)
        page = items[offset:offset + size]
        next_offset = offset + size
        body: dict[str, Any] = {"ok": True, key: page,
                                "response_metadata": {"next_cursor": _cursor(next_offset) if next_offset < len(items)
                                                      else ""}}
        if failure == "bad_shape":
            body[key] = {"not": "a list"}
        self._json(body)

    def _users_list(self, info: TokenInfo, params: dict[str, str], failure: str | None) -> None:
        if "users:read" not in info.scopes:
            self._json({"ok": False, "error": "missing_scope", "needed": "users:read"})
            return
        self._page(self.server.world.users, params, "members", failure)

    def _conversations_list(self, info: TokenInfo, params: dict[str, str], failure: str | None) -> None:
        types = set((params.get("types") or "public_channel").split(","))
        needed = {"public_channel": "channels:read", "private_channel": "groups:read"}
        missing = [needed[t] for t in sorted(types) if t in needed and needed[t] not in info.scopes]
        if missing:
            self._json({"ok": False, "error": "missing_scope", "needed": ",".join(missing)})
            return
        wanted = [c for c in self.server.world.channels
                  if ("private_channel" if c.get("is_private") else "public_channel") in types
                  and not (params.get("exclude_archived") == "true" and c.get("is_archived"))]
        self._page(wanted, params, "channels", failure)

    def _users_info(self, info: TokenInfo, params: dict[str, str], failure: str | None) -> None:
        found = next((u for u in self.server.world.users if u["id"] == params.get("user")), None)
        if found is None:
            self._json({"ok": False, "error": "user_not_found"})
        else:
            self._json({"ok": True, "user": found})

    def _conversations_info(self, info: TokenInfo, params: dict[str, str], failure: str | None) -> None:
        found = next((c for c in self.server.world.channels if c["id"] == params.get("channel")), None)
        if found is None:
            self._json({"ok": False, "error": "channel_not_found"})
        else:
            self._json({"ok": True, "channel": found})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.world = World()
        self.requests: deque[dict[str, Any]] = deque(maxlen=REQUESTS_KEPT)
        self.lock = threading.Lock()
        self.busy: dict[str, int] = {}
        self.peak_busy: dict[str, int] = {}  # per API method: most requests answered at the same time

    @contextlib.contextmanager
    def in_flight(self, method: str) -> Iterator[None]:
        with self.lock:
            self.busy[method] = self.busy.get(method, 0) + 1
            self.peak_busy[method] = max(self.peak_busy.get(method, 0), self.busy[method])
        try:
            yield
        finally:
            with self.lock:
                self.busy[method] -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up early (the driver abandoning a huge or slow answer) is normal here."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def record(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.requests.append(entry)

    def take_failure(self, method: str) -> str | None:
        with self.lock:
            failure = self.world.failures.get(method) or self.world.failures.get("*")
            if failure is None:
                return None
            if failure.times is not None:
                failure.times -= 1
                if failure.times <= 0:
                    self.world.failures = {k: v for k, v in self.world.failures.items() if v is not failure}
            return failure.mode


class FakeSlack:
    """The fake on 127.0.0.1 (port 0: any free port). Script it through ``world``, ``add_token``,
    ``fail``; inspect ``requests`` and ``methods_called``."""

    def __init__(self, port: int = 0) -> None:
        self._server = _Server(port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-slack", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    @property
    def world(self) -> World:
        return self._server.world

    def add_token(self, token: str, **info: Any) -> TokenInfo:
        self.world.tokens[token] = TokenInfo(**info)
        return self.world.tokens[token]

    def fail(self, method: str, mode: str, *, times: int | None = None) -> None:
        """Make ``method`` (or "*": every method) fail with ``mode``, every time or ``times`` times."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
        self.world.failures[method] = Failure(mode, times)

    def reset(self) -> None:
        self._server.world = World()
        self._server.requests.clear()
        with self._server.lock:
            self._server.peak_busy = {}

    def peak_concurrency(self, method: str) -> int:
        return self._server.peak_busy.get(method, 0)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._server.lock:
            return list(self._server.requests)

    def methods_called(self) -> list[str]:
        return [r["method"] for r in self.requests]

    def start(self) -> FakeSlack:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def _fake_slack_server() -> Iterator[FakeSlack]:
    with FakeSlack() as slack:
        yield slack


@pytest.fixture
def fake_slack(_fake_slack_server: FakeSlack, settings: Any) -> Iterator[FakeSlack]:
    """A fresh fake Slack world for one test, with OCC_SLACK_API_BASE_URL pointing at it."""
    _fake_slack_server.reset()
    settings.OCC_SLACK_API_BASE_URL = _fake_slack_server.base_url
    yield _fake_slack_server
    _fake_slack_server.reset()


# --- the demo workspace (python -m tests.fakes.fake_slack) ----------------------------------

DEMO_BOT_TOKEN = "xoxb-fake-demo-bot-token"
DEMO_APP_TOKEN = "xapp-fake-demo-app-token"


def demo_world(slack: FakeSlack) -> None:
    slack.add_token(DEMO_BOT_TOKEN, team_name="Demo Workspace")
    slack.world.users = [user(f"U{n:08d}", f"person{n}", display_name=f"Person {n}", real_name=f"Person Number {n}")
                         for n in range(1, 131)]
    slack.world.users.append(user("U0DELETED", "gone", deleted=True))
    slack.world.channels = [channel(f"C{n:08d}", f"channel-{n}") for n in range(1, 41)]
    slack.world.channels += [channel("G00000001", "private-team", private=True),
                             channel("C0ARCHIVED", "old-stuff", archived=True)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=18556)
    arguments = parser.parse_args()
    server = FakeSlack(port=arguments.port)
    demo_world(server)
    print(f"fake Slack Web API on {server.base_url} (set OCC_SLACK_API_BASE_URL to it); "
          f"bot token {DEMO_BOT_TOKEN}", flush=True)
    server.serve_forever()
