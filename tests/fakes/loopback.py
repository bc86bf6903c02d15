"""What every loopback fake of an outside HTTP service shares: a threaded server on 127.0.0.1
(port 0: any free port) that a handler reaches as ``self.server.owner``, the requests it saw,
and start/stop or ``with`` for a test, ``serve_forever`` for running one by hand."""

from __future__ import annotations

import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar

REQUESTS_KEPT = 1000

Owner = TypeVar("Owner", bound="LoopbackFake")


class LoopbackServer(ThreadingHTTPServer, Generic[Owner]):
    """A handler's ``self.server``: annotate it ``server: LoopbackServer[TheFake]``."""

    daemon_threads = True

    def __init__(self, port: int, handler: type[BaseHTTPRequestHandler], owner: Owner) -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.owner = owner

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-answer is what the failure modes provoke, not a fault


class LoopbackFake:
    def __init__(self, handler: type[BaseHTTPRequestHandler], *, port: int, name: str) -> None:
        self._requests: deque[dict[str, Any]] = deque(maxlen=REQUESTS_KEPT)
        self._lock = threading.Lock()
        self._server: LoopbackServer[LoopbackFake] = LoopbackServer(port, handler, self)
        # A short poll interval: stop() (one per test) returns in milliseconds, not half a second.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=name, daemon=True)

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(entry)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        try:
            self._server.serve_forever()
        finally:
            self._server.server_close()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
