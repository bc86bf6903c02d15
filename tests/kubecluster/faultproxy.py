"""A fault proxy between a Kubernetes client and the test API server.

Clients speak plain HTTP to ``proxy.url``; the proxy forwards each request over TLS to the API
server and relays the answer. It counts every request it sees and, on request, injects the
faults the real server will not produce on demand:

    proxy.fail_next(3, status=503)                                   # the next 3 requests: 503
    proxy.fail_next(1, status=429, method="POST", path=r"/configmaps$")
    proxy.delay(0.5, path=r"/deployments")                           # added latency
    proxy.drop_after_commit(method="POST", path=r"/configmaps$")     # forward, then close the
                                                                     # connection unanswered
    with proxy.counting() as calls: ...                              # calls.total, calls.writes

A rule matches on method and a regular expression searched in the path (query excluded); each
rule fires ``times`` times and is then spent.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade", "host"}
READS = {"GET", "HEAD", "OPTIONS"}


@dataclass
class Rule:
    kind: str  # fail | delay | drop
    times: int
    method: str | None
    path: re.Pattern[str] | None
    status: int = 503
    seconds: float = 0.0

    def matches(self, method: str, path: str) -> bool:
        return ((self.method is None or self.method == method)
                and (self.path is None or self.path.search(path) is not None))


@dataclass
class Calls:
    """Requests seen while counting: (method, path) in order, and the paths of the watches
    among them (``?watch=true``: one request, however many events it streams)."""

    seen: list[tuple[str, str]] = field(default_factory=list)
    watches: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.seen)

    @property
    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p in self.seen if m not in READS]

    def by_method(self) -> Counter[str]:
        return Counter(m for m, _ in self.seen)


class FaultProxy:
    def __init__(self, upstream: str, ca_file: str | None = None) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 443
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
        if not ca_file:
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE
        self._rules: list[Rule] = []
        self._lock = threading.Lock()
        self._counters: list[Calls] = []
        self.total = 0
        self._local = threading.local()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="fault-proxy", daemon=True)

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- rules ---------------------------------------------------------------------------------
    def _add(self, rule: Rule) -> None:
        with self._lock:
            self._rules.append(rule)

    @staticmethod
    def _pattern(path: str | None) -> re.Pattern[str] | None:
        return re.compile(path) if path else None

    def fail_next(self, times: int = 1, *, status: int = 503, method: str | None = None,
                  path: str | None = None) -> None:
        """Answer the next ``times`` matching requests with ``status`` without forwarding them."""
        self._add(Rule("fail", times, method, self._pattern(path), status=status))

    def delay(self, seconds: float, *, times: int = 1_000_000, method: str | None = None,
              path: str | None = None) -> None:
        """Hold matching requests ``seconds`` before forwarding them."""
        self._add(Rule("delay", times, method, self._pattern(path), seconds=seconds))

    def drop_after_commit(self, times: int = 1, *, method: str | None = None, path: str | None = None) -> None:
        """Forward matching requests, let the server commit them, then close the client's
        connection without an answer (the response is lost)."""
        self._add(Rule("drop", times, method, self._pattern(path)))

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def pending_rules(self) -> int:
        with self._lock:
            return sum(rule.times for rule in self._rules if rule.kind != "delay")

    @contextlib.contextmanager
    def counting(self) -> Iterator[Calls]:
        calls = Calls()
        with self._lock:
            self._counters.append(calls)
        try:
            yield calls
        finally:
            with self._lock:
                self._counters.remove(calls)

    def _take(self, method: str, path: str, query: str = "") -> list[Rule]:
        watching = "watch=true" in query.split("&") or "watch=1" in query.split("&")
        with self._lock:
            self.total += 1
            for calls in self._counters:
                calls.seen.append((method, path))
                if watching:
                    calls.watches.append(path)
            fired: list[Rule] = []
            kinds = set()
            for rule in self._rules:
                if rule.times > 0 and rule.kind not in kinds and rule.matches(method, path):
                    rule.times -= 1
                    fired.append(rule)
                    kinds.add(rule.kind)
            self._rules = [rule for rule in self._rules if rule.times > 0]
            return fired

    # --- forwarding ----------------------------------------------------------------------------
    def _upstream(self, fresh: bool = False) -> http.client.HTTPSConnection:
        connection = getattr(self._local, "connection", None)
        if connection is None or fresh:
            if connection is not None:
                connection.close()
            connection = http.client.HTTPSConnection(self.upstream_host, self.upstream_port,
                                                     context=self.context, timeout=120)
            self._local.connection = connection
        return connection

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        method = handler.command
        target = urlsplit(handler.path)
        path = target.path
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        fired = self._take(method, path, target.query)
        for rule in fired:
            if rule.kind == "delay":
                time.sleep(rule.seconds)
        if any(rule.kind == "fail" for rule in fired):
            status = next(rule.status for rule in fired if rule.kind == "fail")
            payload = (b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the '
                       b'fault proxy","code":%d}' % status)
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            if status == 429:
                handler.send_header("Retry-After", "1")
            handler.end_headers()
            handler.wfile.write(payload)
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            response = self._forward(method, handler.path, body, headers)
        except OSError:
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.send_error(502)
            return
        if any(rule.kind == "drop" for rule in fired):
            response.read()
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
            return
        self._relay(handler, response)

    def _forward(self, method: str, target: str, body: bytes | None,
                 headers: dict[str, str]) -> http.client.HTTPResponse:
        for attempt in (0, 1):
            connection = self._upstream(fresh=attempt == 1)
            try:
                connection.request(method, target, body=body, headers=headers)
                return connection.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if attempt == 1:
                    raise
        raise OSError("unreachable")

    def _relay(self, handler: BaseHTTPRequestHandler, response: http.client.HTTPResponse) -> None:
        handler.send_response(response.status, response.reason)
        chunked = response.getheader("Content-Length") is None
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                handler.send_header(key, value)
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            try:
                while True:
                    chunk = response.read1(65536)
                    if not chunk:
                        break
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    handler.wfile.flush()
                handler.wfile.write(b"0\r\n\r\n")
            except (OSError, http.client.HTTPException):
                # A stream one side left (a client that stopped watching, a server shutting
                # down): both connections go, the next request opens a fresh upstream one.
                handler.close_connection = True
                self._upstream(fresh=True)
        else:
            data = response.read()
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
