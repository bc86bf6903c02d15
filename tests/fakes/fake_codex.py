"""A loopback fake of the hosted Codex plugin catalog and models list (real HTTP, one thread per request).

One server answers both hosts OCC talks to, so a test or a person points the two settings at
it: ``OCC_CODEX_AUTH_BASE_URL=http://127.0.0.1:PORT`` and
``OCC_CODEX_CHATGPT_BASE_URL=http://127.0.0.1:PORT/backend-api``.

- ``GET /api/accounts/v1/user-auth-credential/whoami`` (Bearer token) answers the account.
- ``GET /backend-api/ps/plugins/list?scope=GLOBAL&limit=N[&pageToken=T]`` pages the catalog
  (``pagination.next_page_token``); ``GET /backend-api/ps/plugins/search?q=…`` pages the
  entries whose name or description contains ``q`` (case-insensitive).
- ``GET /backend-api/ps/plugins/<id>`` answers one entry; ``POST /backend-api/ps/apps/batch``
  the apps and tools of ``app_ids``.
- Catalog calls need the token *and* ``ChatGPT-Account-ID`` of its account and
  ``OAI-Product-Sku: codex``.
- ``GET /backend-api/codex/models?client_version=V`` (model discovery with a service account
  token) needs the token and ``ChatGPT-Account-ID`` (and ``X-OpenAI-Fedramp: true`` when the
  account is FedRAMP) and answers ``models[]`` (``slug``, ``display_name``, ``visibility``,
  ``priority``) out of priority order, hidden ones included.
- ``mode`` injects one failure into every catalog call (whoami stays well unless the mode is
  ``unauthorized``): ``unauthorized`` (401), ``forbidden`` (403), ``rate_limited`` (429),
  ``server_error`` (500), ``redirect`` (302 to ``redirect_to``), ``echo`` / ``echo_escaped``
  (the token inside an entry, raw or JSON-escaped), ``bad_json``, ``huge`` / ``huge_stream``
  (``huge_bytes``, with or without a length), ``slow`` (``delay`` s before the headers),
  ``drip`` (the body a byte at a time over ``delay`` s), ``cursor_repeat`` (the next page
  token is the one received), ``bad_whoami`` (whoami without the FedRAMP flag).
- ``latency`` (seconds) delays every answer, ``ok`` included: the benchmark's upstream cost.
- Every request is recorded (method, path, query, whether the token and account matched;
  never the token).

In-process: ``with FakeCodex() as fake: ...`` or ``yield from serving(settings)`` in a
fixture. For the console's browser tests: ``python -m tests.fakes.fake_codex --port N``
(``POST /_control`` with ``{"mode": ..., "delay": ..., "latency": ...}``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fakes.loopback import LoopbackFake, LoopbackServer

TOKEN = "at-fake-codex-service-account-0123456789"
ACCOUNT_ID = "acct-fake-workspace-42"
MODES = frozenset({
    "ok", "unauthorized", "forbidden", "rate_limited", "server_error", "redirect", "echo", "echo_escaped",
    "bad_json", "huge", "huge_stream", "slow", "drip", "cursor_repeat", "bad_whoami",
})


def default_codex_models() -> list[dict[str, Any]]:
    """The models endpoint's answer: not in priority order, with hidden, duplicate and unusable entries."""
    return [
        {"slug": "gpt-6-luna", "display_name": "GPT-6 Luna", "visibility": "list", "priority": 2},
        {"slug": "gpt-6-astra", "display_name": "GPT-6 Astra", "visibility": "list", "priority": 1},
        {"slug": "codex-internal-eval", "display_name": "Internal", "visibility": "hide", "priority": 0},
        {"slug": "gpt-5.6-sol", "visibility": "list", "priority": 3},
        {"slug": "gpt-6-astra", "display_name": "GPT-6 Astra again", "visibility": "list", "priority": 4},
        {"slug": "bad slug", "display_name": "Spaces", "visibility": "list", "priority": 5},
        {"slug": "gpt-6-mini", "display_name": "GPT-6 Mini", "visibility": "list", "priority": 2},
    ]


def _plugin(slug: str, display: str, description: str, *, apps: list[str], status: str = "ENABLED",
            policy: str = "AVAILABLE", reason: str | None = None, skills: list[str] | None = None,
            mcp: bool = False) -> dict[str, Any]:
    release: dict[str, Any] = {
        "version": "1.0.0", "display_name": display, "description": description, "app_ids": apps,
        "skills": skills or [],
        "interface": {"short_description": description, "logo_url": f"https://cdn.example.test/{slug}.png",
                      "website_url": f"https://{slug}.example.test", "privacy_policy_url": "javascript:alert(1)",
                      "terms_of_service_url": f"https://{slug}.example.test/terms"},
    }
    if mcp:
        release["mcp_servers"] = [{"name": "local"}]
    item: dict[str, Any] = {"id": f"plugins~Plugin_{slug}", "name": slug, "scope": "GLOBAL", "status": status,
                            "installation_policy": policy, "authentication_policy": "ON_USE", "release": release}
    if reason:
        item["unavailable_reason"] = reason
    return item


def default_catalog() -> list[dict[str, Any]]:
    plugins = [
        _plugin("linear", "Linear", "Issues and projects", apps=["asdk_app_linear"]),
        _plugin("github", "GitHub", "Repositories, pull requests and issues", apps=["asdk_app_github"]),
        _plugin("slack", "Slack", "Messages and channels", apps=["asdk_app_slack"]),
        _plugin("notion", "Notion", "Pages and databases", apps=["asdk_app_notion"], skills=["notion-skill"]),
        _plugin("figma", "Figma", "Design files", apps=["asdk_app_figma"], status="DISABLED",
                reason="DISABLED_BY_ADMIN"),
        _plugin("datadog", "Datadog", "Monitors and dashboards", apps=["asdk_app_datadog"], mcp=True),
        _plugin("sentry", "Sentry", "Errors and releases", apps=[], policy="AVAILABLE"),
        _plugin("canva", "Canva", "Designs", apps=["asdk_app_canva"], policy="NOT_AVAILABLE",
                reason="PLAN_NOT_ELIGIBLE"),
    ]
    for index in range(1, 43):  # enough for three pages of twenty
        plugins.append(_plugin(f"tool-{index:02d}", f"Tool {index:02d}", f"Generated catalog entry {index}",
                               apps=[f"asdk_app_tool_{index:02d}"]))
    plugins.append({"id": "plugins~bad", "name": "bad name with spaces", "release": {}})  # OCC skips it
    return plugins


def default_apps() -> dict[str, dict[str, Any]]:
    apps: dict[str, dict[str, Any]] = {
        "asdk_app_linear": {"id": "asdk_app_linear", "name": "Linear", "status": "ENABLED", "tools": [
            {"name": "search_issues", "title": "Search issues", "description": "Find issues", "is_read_only": True},
            {"name": "create_issue", "title": "Create issue", "description": "File a new issue",
             "is_read_only": False},
            {"name": "delete_issue", "description": "Delete an issue", "is_read_only": False,
             "is_destructive": True},
            {"name": "archived thing", "description": "not a usable name"},
        ]},
        "asdk_app_github": {"id": "asdk_app_github", "name": "GitHub", "status": "ONLY_ME", "tools": [
            {"name": "get_pull_request", "is_read_only": True},
            {"name": "merge_pull_request", "is_read_only": False, "is_enabled": False},
        ]},
        "asdk_app_slack": {"id": "asdk_app_slack", "name": "Slack", "status": "DISABLED", "tools": [
            {"name": "post_message", "is_read_only": False},
        ]},
        "asdk_app_datadog": {"id": "asdk_app_datadog", "name": "Datadog", "status": "ENABLED", "tools": []},
    }
    for index in range(1, 43):
        app_id = f"asdk_app_tool_{index:02d}"
        apps[app_id] = {"id": app_id, "name": f"Tool {index:02d}", "status": "ENABLED",
                        "tools": [{"name": "read", "is_read_only": True}]}
    return apps


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer[FakeCodex]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, code: int, body: bytes, *, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, document: Any) -> None:
        self._send(code, json.dumps(document).encode())

    def _error(self, code: int, kind: str) -> None:
        self._json(code, {"detail": f"UPSTREAM-TEXT {kind}"})  # text OCC must never pass on

    def _body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _token(self) -> str | None:
        auth = self.headers.get("authorization") or ""
        return auth[len("Bearer "):] if auth.startswith("Bearer ") else None

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        body = self._body()
        owner = self.server.owner
        if url.path == "/_control":
            try:
                owner.configure(**json.loads(body or b"{}"))
            except (ValueError, TypeError):
                self._error(400, "invalid_control")
                return
            self._json(200, {"mode": owner.mode})
            return
        self._route("POST", url.path, {}, body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {name: values[-1] for name, values in parse_qs(url.query).items()}
        self._route("GET", url.path, query, b"")

    def _route(self, method: str, path: str, query: dict[str, str], body: bytes) -> None:
        owner = self.server.owner
        token = self._token()
        authorized = token is not None and token == owner.token
        account_ok = self.headers.get("chatgpt-account-id") == owner.account_id
        owner.record({"method": method, "path": path, "query": query, "authorized": authorized,
                      "account": account_ok, "sku": self.headers.get("oai-product-sku"),
                      "fedramp": self.headers.get("x-openai-fedramp")})
        if owner.latency:
            time.sleep(owner.latency)
        if path == "/api/accounts/v1/user-auth-credential/whoami" and method == "GET":
            if not authorized or owner.mode == "unauthorized":
                self._error(401, "invalid_token")
                return
            answer: dict[str, Any] = {"chatgpt_account_id": owner.account_id, "user_id": "user-fake"}
            if owner.mode != "bad_whoami":
                answer["chatgpt_account_is_fedramp"] = owner.fedramp
            self._json(200, answer)
            return
        if path == "/backend-api/codex/models" and method == "GET":
            self._codex_models(owner, token or "", account_ok)
            return
        if not path.startswith("/backend-api/ps/"):
            self._error(404, "not_found")
            return
        if owner.mode == "slow":
            time.sleep(owner.delay)
        if not authorized or owner.mode == "unauthorized":
            self._error(401, "invalid_token")
            return
        if not account_ok or self.headers.get("oai-product-sku") != "codex":
            self._error(403, "wrong_account")
            return
        if self._misbehave(owner, token or ""):
            return
        rest = path[len("/backend-api/ps/"):]
        if method == "GET" and rest in ("plugins/list", "plugins/search"):
            self._page(owner, query, search=rest == "plugins/search")
        elif method == "GET" and rest.startswith("plugins/"):
            remote_id = unquote(rest[len("plugins/"):])
            found = [item for item in owner.catalog if item.get("id") == remote_id]
            if found:
                self._json(200, found[0])
            else:
                self._error(404, "not_found")
        elif method == "POST" and rest == "apps/batch":
            try:
                wanted = json.loads(body).get("app_ids", [])
            except (ValueError, AttributeError):
                self._error(400, "bad_request")
                return
            self._json(200, {"apps": [owner.apps[app_id] for app_id in wanted if app_id in owner.apps]})
        else:
            self._error(404, "not_found")

    def _codex_models(self, owner: FakeCodex, token: str, account_ok: bool) -> None:
        if owner.mode == "slow":
            time.sleep(owner.delay)
        if token != owner.token or owner.mode == "unauthorized":
            self._error(401, "invalid_token")
        elif not account_ok or (self.headers.get("x-openai-fedramp") == "true") != owner.fedramp:
            self._error(403, "wrong_account")
        elif not self._misbehave(owner, token):
            self._json(200, {"models": owner.codex_models})

    def _misbehave(self, owner: FakeCodex, token: str) -> bool:
        simple = {"forbidden": (403, "forbidden"), "rate_limited": (429, "rate_limited"),
                  "server_error": (500, "server_error")}
        if owner.mode in simple:
            self._error(*simple[owner.mode])
        elif owner.mode == "redirect":
            self._send(302, b"", headers={"location": owner.redirect_to})
        elif owner.mode == "bad_json":
            self._send(200, b'{"plugins": [ {"id": ')
        elif owner.mode == "echo":
            self._json(200, {"plugins": [{"id": "plugins~x", "name": "x", "release": {"description": token}}],
                             "pagination": {}})
        elif owner.mode == "echo_escaped":
            spelled = "".join(f"\\u{ord(char):04x}" for char in token)
            self._send(200, ('{"plugins": [{"id": "plugins~x", "name": "x", "release": {"description": "'
                             + spelled + '"}}], "pagination": {}}').encode())
        elif owner.mode in ("huge", "huge_stream"):
            self._huge(owner.huge_bytes, chunked=owner.mode == "huge_stream")
        elif owner.mode == "drip":
            self._drip(json.dumps({"plugins": [], "pagination": {}}).encode(), owner.delay)
        else:
            return False
        return True

    def _page(self, owner: FakeCodex, query: dict[str, str], *, search: bool) -> None:
        items = owner.catalog
        if search:
            needle = query.get("q", "").lower()
            items = [item for item in items if needle in str(item.get("name", "")).lower()
                     or needle in json.dumps(item.get("release", {})).lower()]
        start = int(query["pageToken"][len("page-"):]) if query.get("pageToken", "").startswith("page-") else 0
        limit = min(int(query.get("limit") or 20), 100)
        page = items[start:start + limit]
        upcoming = f"page-{start + limit}" if start + limit < len(items) else None
        if owner.mode == "cursor_repeat" and query.get("pageToken"):
            upcoming = query["pageToken"]
        self._json(200, {"plugins": page, "pagination": {"next_page_token": upcoming}})

    def _huge(self, size: int, *, chunked: bool) -> None:
        filler = b'{"plugins": [], "padding": "' + b"x" * size + b'"}'
        if not chunked:
            self._send(200, filler)
            return
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for offset in range(0, len(filler), 65536):
                chunk = filler[offset:offset + 65536]
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client stopped reading: what OCC is meant to do
            self.server.owner.abandoned_bodies += 1
            self.close_connection = True

    def _drip(self, body: bytes, total: float) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        try:
            for index in range(len(body)):
                self.wfile.write(body[index:index + 1])
                self.wfile.flush()
                time.sleep(total / len(body))
        except OSError:
            self.server.owner.abandoned_bodies += 1
            self.close_connection = True


class FakeCodex(LoopbackFake):
    """The hosted Codex catalog on 127.0.0.1 (port 0: any free port)."""

    def __init__(self, port: int = 0) -> None:
        super().__init__(_Handler, port=port, name="fake-codex")
        self.token = TOKEN
        self.account_id = ACCOUNT_ID
        self.fedramp = False
        self.catalog = default_catalog()
        self.apps = default_apps()
        self.codex_models = default_codex_models()
        self.mode = "ok"
        self.delay = 2.0
        self.latency = 0.0
        self.huge_bytes = 5 * 1024 * 1024
        self.redirect_to = "http://127.0.0.1:9/elsewhere"
        self.abandoned_bodies = 0

    def configure(self, *, mode: str | None = None, delay: float | None = None, latency: float | None = None,
                  fedramp: bool | None = None) -> None:
        if mode is not None:
            if mode not in MODES:
                raise ValueError(f"unknown mode {mode!r}")
            self.mode = mode
        if delay is not None:
            self.delay = float(delay)
        if latency is not None:
            self.latency = float(latency)
        if fedramp is not None:
            self.fedramp = bool(fedramp)

    @property
    def auth_base_url(self) -> str:
        return self.origin

    @property
    def chatgpt_base_url(self) -> str:
        return f"{self.origin}/backend-api"



def serving(settings: Any, *, timeout: float | None = None) -> Iterator[FakeCodex]:
    """A fixture body: start a fake and point OCC's Codex base URLs (and deadline) at it."""
    with FakeCodex() as server:
        settings.OCC_CODEX_AUTH_BASE_URL = server.auth_base_url
        settings.OCC_CODEX_CHATGPT_BASE_URL = server.chatgpt_base_url
        if timeout is not None:
            settings.OCC_PLUGIN_DISCOVERY_TIMEOUT_SECONDS = timeout
        yield server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=18557)
    parser.add_argument("--mode", default="ok", choices=sorted(MODES))
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args(argv)
    server = FakeCodex(port=args.port)
    server.configure(mode=args.mode, latency=args.latency)
    print(f"fake Codex catalog on {server.origin}: OCC_CODEX_AUTH_BASE_URL={server.auth_base_url} "
          f"OCC_CODEX_CHATGPT_BASE_URL={server.chatgpt_base_url} (token: {TOKEN})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
