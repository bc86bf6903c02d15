"""Loopback fakes of the OpenAI and Anthropic model-list endpoints (real HTTP, one thread).

One server serves both providers under a path prefix, so a test or a person points
``OCC_MODEL_DISCOVERY_BASE_URLS`` at it::

    openai=http://127.0.0.1:PORT/openai,anthropic=http://127.0.0.1:PORT/anthropic

- ``GET /openai/v1/models`` needs ``Authorization: Bearer <openai key>`` and answers every
  model at once (``data[]`` with ``id``, ``created``, ``owned_by``, some ``shutdown_date``).
- ``GET /anthropic/v1/models`` needs ``x-api-key: <anthropic key>`` and ``anthropic-version``
  and pages: ``limit`` (capped at ``page_size``), ``after_id``, ``has_more``, ``first_id``,
  ``last_id``, newest first like the real API.
- ``mode`` injects one failure for every request: ``unauthorized`` (401), ``forbidden``
  (403), ``rate_limited`` (429), ``server_error`` (500), ``bad_json``, ``bad_shape``,
  ``huge`` (``huge_bytes`` with a content-length), ``huge_stream`` (the same, chunked, no
  length), ``redirect`` (302 to ``redirect_to``), ``echo`` (the received key inside a model
  entry), ``echo_escaped`` (the same, JSON-escaped so the raw bytes differ), ``slow``
  (``delay`` seconds before the headers), ``drip`` (the body a byte every ``delay`` / 10 s),
  ``drop`` (close without answering), ``cursor_loop`` and ``no_cursor`` (Anthropic paging).
  ``abandoned_bodies`` counts streamed bodies the client hung up on before their end.
- Every request is recorded (method, provider, path, query, whether its credential matched;
  never the credential itself).

In-process: ``with FakeModelProviders() as fake: ...``, or ``yield from serving(settings)`` in a
fixture (it also points the allowlist setting at the fake). For the console's browser tests:
``python -m tests.fakes.fake_model_providers --port N`` (``POST /_control`` with
``{"mode": ..., "delay": ...}`` changes the failure mode of a running server).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.loopback import LoopbackFake, LoopbackServer

OPENAI_KEY = "sk-fake-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-fake-0123456789abcdef"

# Past and future shutdown dates are fixed far away from any test run's "today".
OPENAI_MODELS: list[dict[str, Any]] = [
    {"id": "gpt-6-astra", "object": "model", "created": 1_790_000_000, "owned_by": "openai"},
    {"id": "gpt-6-luna", "object": "model", "created": 1_780_000_000, "owned_by": "openai"},
    {"id": "gpt-5.6-sol", "object": "model", "created": 1_770_000_000, "owned_by": "openai",
     "shutdown_date": "2999-01-01"},
    {"id": "gpt-4-retired", "object": "model", "created": 1_700_000_000, "owned_by": "openai",
     "shutdown_date": "2020-01-01"},
    {"id": "gpt-odd-date", "object": "model", "created": 1_690_000_000, "owned_by": "openai",
     "shutdown_date": "soon"},
    {"id": "text-embedding-3-large", "object": "model", "created": 1_705_000_000, "owned_by": "system"},
    {"id": "whisper-1", "object": "model", "created": 1_677_000_000, "owned_by": "openai-internal"},
    {"id": "tts-1-hd", "object": "model", "created": 1_699_000_000, "owned_by": "system"},
    {"id": "dall-e-3", "object": "model", "created": 1_698_000_000, "owned_by": "system"},
    {"id": "omni-moderation-latest", "object": "model", "created": 1_731_000_000, "owned_by": "system"},
    {"id": "gpt-6-astra", "object": "model", "created": 1_790_000_000, "owned_by": "openai"},  # duplicate
    {"id": "bad id with spaces", "object": "model", "created": 1_790_000_000, "owned_by": "openai"},
    {"id": "gpt-no-date", "object": "model", "owned_by": "openai"},
]
ANTHROPIC_MODELS: list[dict[str, Any]] = [
    {"type": "model", "id": "claude-opus-5-5", "display_name": "Claude Opus 5.5", "created_at": "2026-08-01T00:00:00Z"},
    {"type": "model", "id": "claude-mythos-5-1", "display_name": "Claude Mythos 5.1",
     "created_at": "2026-06-01T00:00:00Z"},
    {"type": "model", "id": "claude-sonnet-5", "display_name": "Claude Sonnet 5", "created_at": "2026-03-01T00:00:00Z"},
    {"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5",
     "created_at": "2025-10-01T00:00:00Z"},
    {"type": "model", "id": "claude-sonnet-4-6", "display_name": None, "created_at": "not a date"},
]
MODES = frozenset({
    "ok", "unauthorized", "forbidden", "rate_limited", "server_error", "bad_json", "bad_shape", "huge",
    "huge_stream", "redirect", "echo", "echo_escaped", "slow", "drip", "drop", "cursor_loop", "no_cursor",
})


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer[FakeModelProviders]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # --- answers -----------------------------------------------------------------------------

    def _send(self, code: int, body: bytes, *, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, document: Any) -> None:
        self._send(code, json.dumps(document).encode())

    def _error(self, code: int, kind: str) -> None:
        # Upstream text OCC must never pass on.
        self._json(code, {"error": {"type": kind, "message": f"UPSTREAM-TEXT {kind}"}})

    # --- routing -----------------------------------------------------------------------------

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        if urlsplit(self.path).path != "/_control":
            self._error(404, "not_found")
            return
        try:
            change = json.loads(body or b"{}")
            self.server.owner.configure(**change)
        except (ValueError, TypeError):
            self._error(400, "invalid_control")
            return
        self._json(200, {"mode": self.server.owner.mode})

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {name: values[-1] for name, values in parse_qs(url.query).items()}
        provider = url.path.split("/")[1] if url.path.count("/") >= 1 else ""
        key = self._presented_key(provider)
        owner = self.server.owner
        expected = owner.keys.get(provider)
        authorized = expected is not None and key == expected
        owner.record({"method": self.command, "provider": provider, "path": url.path, "query": query,
                      "authorized": authorized, "anthropicVersion": self.headers.get("anthropic-version")})
        if url.path != f"/{provider}/v1/models" or provider not in owner.keys:
            self._error(404, "not_found")
            return
        if owner.mode in ("slow", "drop") and self._misbehave_before_answer(owner):
            return
        if not authorized or owner.mode == "unauthorized":
            self._error(401, "authentication_error")
            return
        if provider == "anthropic" and not self.headers.get("anthropic-version"):
            self._error(400, "invalid_request_error")
            return
        self._answer(owner, provider, query, key or "")

    def _presented_key(self, provider: str) -> str | None:
        if provider == "anthropic":
            return self.headers.get("x-api-key")
        auth = self.headers.get("authorization") or ""
        return auth[len("Bearer "):] if auth.startswith("Bearer ") else None

    def _misbehave_before_answer(self, owner: FakeModelProviders) -> bool:
        if owner.mode == "drop":
            self.close_connection = True
            return True
        time.sleep(owner.delay)
        return False

    def _answer(self, owner: FakeModelProviders, provider: str, query: dict[str, str], key: str) -> None:
        simple = {"forbidden": (403, "permission_error"), "rate_limited": (429, "rate_limit_error"),
                  "server_error": (500, "api_error")}
        if owner.mode in simple:
            self._error(*simple[owner.mode])
        elif owner.mode == "redirect":
            self._send(302, b"", headers={"location": owner.redirect_to})
        elif owner.mode == "bad_json":
            self._send(200, b'{"data": [ {"id": "gpt-')
        elif owner.mode == "bad_shape":
            self._json(200, {"data": "not a list"})
        elif owner.mode in ("huge", "huge_stream"):
            self._huge(owner.huge_bytes, chunked=owner.mode == "huge_stream")
        elif owner.mode in ("echo", "echo_escaped"):
            self._echo(key, escaped=owner.mode == "echo_escaped")
        elif owner.mode == "drip":
            self._drip(json.dumps(self._page(owner, provider, query)).encode(), owner.delay / 10)
        else:
            self._json(200, self._page(owner, provider, query))

    def _page(self, owner: FakeModelProviders, provider: str, query: dict[str, str]) -> dict[str, Any]:
        if provider == "openai":
            return {"object": "list", "data": owner.openai_models}
        models = owner.anthropic_models
        start = 0
        if "after_id" in query:
            ids = [model["id"] for model in models]
            start = ids.index(query["after_id"]) + 1 if query["after_id"] in ids else len(models)
        limit = min(int(query.get("limit") or 20), owner.page_size)
        page = models[start:start + limit]
        has_more = start + limit < len(models)
        document: dict[str, Any] = {"data": page, "has_more": has_more,
                                    "first_id": page[0]["id"] if page else None,
                                    "last_id": page[-1]["id"] if page else None}
        if owner.mode == "cursor_loop":
            document.update(has_more=True, last_id=models[0]["id"])
            document["data"] = models[:limit]
        elif owner.mode == "no_cursor":
            document.update(has_more=True, last_id=None)
        return document

    def _huge(self, size: int, *, chunked: bool) -> None:
        filler = b'{"data": [], "padding": "' + b"x" * size + b'"}'
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

    def _echo(self, key: str, *, escaped: bool) -> None:
        if not escaped:
            self._json(200, {"object": "list", "data": [{"id": "gpt-6-astra", "object": "model",
                                                         "owned_by": f"key {key}"}]})
            return
        spelled = "".join(f"\\u{ord(char):04x}" for char in key)
        body = '{"object": "list", "data": [{"id": "gpt-6-astra", "owned_by": "' + spelled + '"}]}'
        self._send(200, body.encode())

    def _drip(self, body: bytes, pause: float) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        try:
            for index in range(len(body)):
                self.wfile.write(body[index:index + 1])
                self.wfile.flush()
                time.sleep(pause)
        except OSError:
            self.server.owner.abandoned_bodies += 1
            self.close_connection = True


class FakeModelProviders(LoopbackFake):
    """Both model-list endpoints on 127.0.0.1 (port 0: any free port)."""

    def __init__(self, port: int = 0, *, page_size: int = 1000) -> None:
        super().__init__(_Handler, port=port, name="fake-model-providers")
        self.keys = {"openai": OPENAI_KEY, "anthropic": ANTHROPIC_KEY}
        self.openai_models = [dict(model) for model in OPENAI_MODELS]
        self.anthropic_models = [dict(model) for model in ANTHROPIC_MODELS]
        self.page_size = page_size
        self.mode = "ok"
        self.delay = 2.0
        self.huge_bytes = 5 * 1024 * 1024
        self.redirect_to = "http://127.0.0.1:9/elsewhere"
        # Bodies whose client hung up before the last byte (huge_stream, drip).
        self.abandoned_bodies = 0

    def configure(self, *, mode: str | None = None, delay: float | None = None, page_size: int | None = None) -> None:
        if mode is not None:
            if mode not in MODES:
                raise ValueError(f"unknown mode {mode!r}")
            self.mode = mode
        if delay is not None:
            self.delay = float(delay)
        if page_size is not None:
            self.page_size = int(page_size)

    def base_url(self, provider: str) -> str:
        """What ``OCC_MODEL_DISCOVERY_BASE_URLS`` should hold for ``provider``."""
        return f"{self.origin}/{provider}"

    @property
    def base_urls(self) -> dict[str, str]:
        return {provider: self.base_url(provider) for provider in self.keys}



def serving(settings: Any, *, timeout: float | None = None) -> Iterator[FakeModelProviders]:
    """A fixture body: start a fake and point OCC's discovery allowlist (and timeout) at it."""
    with FakeModelProviders() as server:
        settings.OCC_MODEL_DISCOVERY_BASE_URLS = server.base_urls
        if timeout is not None:
            settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS = timeout
        yield server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=18556)
    parser.add_argument("--mode", default="ok", choices=sorted(MODES))
    parser.add_argument("--page-size", type=int, default=1000)
    args = parser.parse_args(argv)
    server = FakeModelProviders(port=args.port, page_size=args.page_size)
    server.configure(mode=args.mode)
    print(f"fake model providers on {server.origin}: "
          f"OCC_MODEL_DISCOVERY_BASE_URLS=openai={server.base_url('openai')},anthropic={server.base_url('anthropic')} "
          f"(keys: {OPENAI_KEY} / {ANTHROPIC_KEY})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
