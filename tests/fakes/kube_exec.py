"""A loopback stand-in for one Kubernetes API endpoint: Pod exec (``…/pods/<pod>/exec``).

kube-apiserver cannot exec without a kubelet (it proxies the stream to the Pod's node), and
the test cluster has none, so this stands in at that one boundary. It speaks what
kube-apiserver 1.20 speaks there: a WebSocket upgrade with the ``v4.channel.k8s.io``
subprotocol, the command as repeated ``command`` query parameters, and binary frames whose
first byte is the channel (0 stdin, 1 stdout, 2 stderr, 3 the exit status as a JSON Status,
4 terminal resize). Like the container runtime with ``tty=true`` it runs the command on a real
pseudo-terminal — here a program of the test's choosing in place of the Pod's
``node /app/openclaw.mjs`` — and records what it was asked for.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import struct
import subprocess
import termios
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

PROTOCOL = "v4.channel.k8s.io"
STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4


@dataclass
class ExecRequest:
    path: str
    query: dict[str, list[str]]
    authorization: str | None
    resizes: list[dict[str, int]] = field(default_factory=list)
    stdin: bytearray = field(default_factory=bytearray)
    exit_code: int | None = None


@dataclass
class FakeExec:
    """``run(command) -> argv``: what to run on the pty for the command the client asked for."""

    run: Callable[[list[str]], list[str]]
    requests: list[ExecRequest] = field(default_factory=list)
    _server: Server | None = None

    def start(self) -> FakeExec:
        self._server = serve(self._handle, "127.0.0.1", 0, subprotocols=[PROTOCOL])  # type: ignore[list-item]
        threading.Thread(target=self._server.serve_forever, name="fake-kube-exec", daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()

    def _handle(self, connection: ServerConnection) -> None:
        request = connection.request
        assert request is not None
        parts = urlsplit(request.path)
        exec_request = ExecRequest(path=parts.path, query=parse_qs(parts.query),
                                   authorization=request.headers.get("authorization"))
        self.requests.append(exec_request)
        if not parts.path.endswith("/exec") or connection.subprotocol != PROTOCOL:
            connection.send(bytes([ERROR]) + json.dumps(_status(1, "not an exec request")).encode())
            return
        master, slave = pty.openpty()
        process = subprocess.Popen(self.run(exec_request.query.get("command", [])), stdin=slave, stdout=slave,
                                   stderr=slave, start_new_session=True, close_fds=True)
        os.close(slave)
        reader = threading.Thread(target=self._pump_output, args=(connection, master), daemon=True)
        reader.start()
        writer = threading.Thread(target=self._pump_input, args=(connection, master, exec_request), daemon=True)
        writer.start()
        exec_request.exit_code = process.wait()
        reader.join(timeout=5)
        with contextlib.suppress(ConnectionClosed):
            connection.send(bytes([ERROR]) + json.dumps(_status(exec_request.exit_code, "exited")).encode())
        with contextlib.suppress(OSError):
            os.close(master)
        connection.close()

    @staticmethod
    def _pump_output(connection: ServerConnection, master: int) -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the program exited and closed its terminal
                return
            if not data:
                return
            try:
                connection.send(bytes([STDOUT]) + data)
            except ConnectionClosed:
                return

    @staticmethod
    def _pump_input(connection: ServerConnection, master: int, exec_request: ExecRequest) -> None:
        while True:
            try:
                message: Any = connection.recv()
            except ConnectionClosed:
                return
            data = message.encode() if isinstance(message, str) else message
            channel, payload = data[0], data[1:]
            if channel == STDIN:
                exec_request.stdin.extend(payload)
                with contextlib.suppress(OSError):
                    os.write(master, payload)
            elif channel == RESIZE:
                size = json.loads(payload)
                exec_request.resizes.append(size)
                with contextlib.suppress(OSError):
                    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", size["Height"], size["Width"], 0, 0))


def _status(code: int, message: str) -> dict[str, Any]:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
