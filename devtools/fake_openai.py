"""A loopback fake OpenAI-compatible model server (real HTTP, no internet).

It answers ``GET …/models`` and ``POST …/chat/completions`` with one fixed reply, streamed as
server-sent events when the request asks for ``stream`` (the OpenClaw gateway always does):
a role chunk, a content chunk, a ``finish_reason: "stop"`` chunk, an optional usage chunk,
then ``data: [DONE]``. Each request is recorded (method, path, model, stream flag, whether
an ``Authorization`` header came, never its value; the trusted-proxy identity header and the
client's address) for tests to inspect. ``admit`` (tests) may refuse a request with 401, as a
gateway refuses an unauthenticated caller.

The tests use it in-process (``FakeOpenAI().start()``, via ``tests/fakes/fake_openai.py``);
people without internet serve it with ``python manage.py occ_fake_model`` and point a
Configuration's ``models.providers.<id>.baseUrl`` at it. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "DETERMINISTIC-REPLY-42"
MODEL_ID = "echo-model"
# The most recent requests kept for inspection (a long-running server must not grow without bound).
REQUESTS_KEPT = 1000
Admit = Callable[[str, dict[str, str]], bool]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self, body: dict[str, Any] | None) -> None:
        body = body or {}
        self.server.requests.append({
            "method": self.command, "path": self.path, "model": body.get("model"),
            "stream": bool(body.get("stream")), "authorized": bool(self.headers.get("authorization")),
            "messages": len(body.get("messages") or []), "identity": self.headers.get("x-occ-identity"),
            "client": self.client_address[0], "real_ip": self.headers.get("x-real-ip"),
        })

    def do_GET(self) -> None:
        self._record(None)
        if self.server.admit is not None and not self.server.admit(self.client_address[0], dict(self.headers)):
            self._json(401, {"error": {"message": "Unauthorized", "type": "unauthorized"}})
            return
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "fake"}]})
            return
        self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "the body must be JSON"}})
            return
        self._record(body)
        if self.server.admit is not None and not self.server.admit(self.client_address[0], dict(self.headers)):
            self._json(401, {"error": {"message": "Unauthorized", "type": "unauthorized"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "only chat/completions is served"}})
            return
        if self.server.models is not None and body.get("model") not in self.server.models:
            self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist",
                                       "type": "invalid_request_error", "code": "model_not_found"}})
            return
        base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": body.get("model", MODEL_ID)}
        if body.get("stream"):
            self._stream(base, include_usage=bool((body.get("stream_options") or {}).get("include_usage")))
            return
        self._json(200, {**base, "object": "chat.completion",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": self.server.reply},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

    def _stream(self, base: dict[str, Any], *, include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        chunk = {**base, "object": "chat.completion.chunk"}

        def event(payload: dict[str, Any]) -> None:
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            self.wfile.flush()

        event({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                     "finish_reason": None}]})
        event({**chunk, "choices": [{"index": 0, "delta": {"content": self.server.reply}, "finish_reason": None}]})
        event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if include_usage:
            event({**chunk, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                                     "total_tokens": 15}})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, reply: str, admit: Admit | None,
                 models: frozenset[str] | None = None) -> None:
        super().__init__((host, port), _Handler)
        self.reply = reply
        self.models = models
        self.admit = admit
        self.requests: deque[dict[str, Any]] = deque(maxlen=REQUESTS_KEPT)


class FakeOpenAI:
    """The server on 127.0.0.1 (port 0: any free port), from a daemon thread or the caller's.
    Tests may listen on another address of this machine (``host``) and check callers (``admit``:
    client address and headers in, whether to answer out)."""

    def __init__(self, port: int = 0, reply: str = REPLY, *, host: str = "127.0.0.1",
                 admit: Admit | None = None, models: frozenset[str] | None = None) -> None:
        self.host = host
        self._server = _Server(host, port, reply, admit, models)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return list(self._server.requests)

    def start(self) -> FakeOpenAI:
        """Serve from a daemon thread (tests)."""
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (``manage.py occ_fake_model``)."""
        try:
            self._server.serve_forever()
        finally:
            self._server.server_close()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

