"""OCC as an operator client of an OpenClaw gateway's WebSocket RPC (protocol 4).

The runtime's ``docs/gateway/protocol/`` pages: the gateway opens with a ``connect.challenge``
event; the client's first request is ``connect`` with its role (``operator``), the scopes it
asks for and the shared secret (``auth.password``: OCC's gateways run in password mode, the
password a runtime credential the SecretDriver holds); ``hello-ok`` answers with the scopes the
socket really has, and every later request is ``{"type": "req", "id", "method", "params"}``
answered by a ``res`` frame with the same id (``ok`` and ``payload``, or ``error``). The gateway
enforces the scopes per method (``exec.approval.list`` needs ``operator.approvals``), so each
caller asks for the narrowest scopes its calls need. Events the gateway pushes meanwhile are
skipped.

Bounded: one deadline covers opening, the handshake and every answer, and a frame over
``max_bytes`` ends the call. No text from the gateway reaches a caller: failures are a
``GatewayRpcError`` with one of the ``GATEWAY_RPC_*`` codes below (and the gateway's own error
code where it sent a well-formed one), never its message.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI, PayloadTooBig
from websockets.sync.client import ClientConnection, connect

PROTOCOL = 4
READ = "operator.read"
APPROVALS = "operator.approvals"
CLIENT = {"id": "gateway-client", "version": "1", "platform": "linux", "mode": "backend"}
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_MAX_BYTES = 4 * 1024 * 1024

UNREACHABLE = "GATEWAY_RPC_UNREACHABLE"  # nothing answered, or the WebSocket upgrade was refused
TIMEOUT = "GATEWAY_RPC_TIMEOUT"  # the deadline passed before the answer
AUTH_REFUSED = "GATEWAY_RPC_AUTH_REFUSED"  # connect refused: wrong password or role
SCOPE_MISSING = "GATEWAY_RPC_SCOPE_MISSING"  # the method needs a scope the socket was not given
REFUSED = "GATEWAY_RPC_REFUSED"  # the method answered an error
TOO_LARGE = "GATEWAY_RPC_TOO_LARGE"  # a frame over the size bound
PROTOCOL_ERROR = "GATEWAY_RPC_PROTOCOL_ERROR"  # not the frames the protocol describes
_GATEWAY_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


class GatewayRpcError(Exception):
    def __init__(self, code: str, gateway_code: str | None = None) -> None:
        super().__init__(code if gateway_code is None else f"{code} ({gateway_code})")
        self.code = code
        self.gateway_code = gateway_code


def _gateway_code(error: Any) -> str | None:
    """The gateway's own code for a refusal (the details' code or reason first: an approval
    already resolved is ``INVALID_REQUEST`` with the reason ``APPROVAL_ALREADY_RESOLVED``), if it
    is a plain token."""
    if not isinstance(error, dict):
        return None
    found = error.get("details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    for candidate in (details.get("code"), details.get("reason"), error.get("code")):
        if isinstance(candidate, str) and _GATEWAY_CODE.fullmatch(candidate):
            return candidate
    return None


class GatewayOperator:
    """One operator connection: ``with GatewayOperator(url, password=…, scopes=[READ]) as gateway:
    gateway.call("sessions.list", {})``."""

    def __init__(self, url: str, *, password: str, scopes: Sequence[str], timeout: float = DEFAULT_TIMEOUT_SECONDS,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.url, self.scopes, self.max_bytes = url, list(scopes), max_bytes
        self._password = password
        self._deadline = time.monotonic() + timeout
        self._socket: ClientConnection | None = None
        self._open = contextlib.ExitStack()
        self.granted: list[str] = []

    def _left(self) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise GatewayRpcError(TIMEOUT)
        return left

    def __enter__(self) -> GatewayOperator:
        try:
            self._socket = self._open.enter_context(connect(
                self.url, open_timeout=self._left(), close_timeout=1, max_size=self.max_bytes, compression=None,
                proxy=None))
        except (OSError, InvalidURI, InvalidHandshake) as exc:
            raise GatewayRpcError(TIMEOUT if isinstance(exc, TimeoutError) else UNREACHABLE) from None
        try:
            challenge = self._frame()
            if challenge.get("type") != "event" or challenge.get("event") != "connect.challenge":
                raise GatewayRpcError(PROTOCOL_ERROR)
            hello = self._request("connect", {
                "minProtocol": PROTOCOL, "maxProtocol": PROTOCOL, "client": CLIENT, "role": "operator",
                "scopes": self.scopes, "caps": [], "commands": [], "permissions": {},
                "auth": {"password": self._password}, "locale": "en", "userAgent": "occ",
            }, refused=AUTH_REFUSED)
            auth = hello.get("auth") if isinstance(hello, dict) else None
            granted = auth.get("scopes") if isinstance(auth, dict) else None
            if hello.get("type") != "hello-ok" or not isinstance(granted, list):
                raise GatewayRpcError(PROTOCOL_ERROR)
            self.granted = [scope for scope in granted if isinstance(scope, str)]
        except BaseException:
            self._open.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._open.close()

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """The method's JSON payload (an object for most methods, a list for some, such as
        ``exec.approval.list``), or a ``GatewayRpcError``."""
        return self._request(method, dict(params or {}), refused=REFUSED)

    def _request(self, method: str, params: dict[str, Any], *, refused: str) -> Any:
        request_id = str(uuid.uuid4())
        self._send({"type": "req", "id": request_id, "method": method, "params": params})
        while True:
            frame = self._frame()
            if frame.get("type") == "event":
                continue
            if frame.get("type") != "res" or frame.get("id") != request_id:
                raise GatewayRpcError(PROTOCOL_ERROR)
            if frame.get("ok") is True:
                return frame.get("payload")
            code = _gateway_code(frame.get("error"))
            raise GatewayRpcError(SCOPE_MISSING if code == "MISSING_SCOPE" else refused, code)

    def _send(self, frame: dict[str, Any]) -> None:
        assert self._socket is not None
        try:
            self._socket.send(json.dumps(frame))
        except ConnectionClosed:
            raise GatewayRpcError(UNREACHABLE) from None

    def _frame(self) -> dict[str, Any]:
        assert self._socket is not None
        try:
            text = self._socket.recv(timeout=self._left())
        except TimeoutError:
            raise GatewayRpcError(TIMEOUT) from None
        except PayloadTooBig:
            raise GatewayRpcError(TOO_LARGE) from None
        except ConnectionClosed as exc:
            too_large = 1009 in (exc.rcvd.code if exc.rcvd else None, exc.sent.code if exc.sent else None)
            raise GatewayRpcError(TOO_LARGE if too_large else UNREACHABLE) from None
        try:
            frame = json.loads(text)
        except ValueError:
            raise GatewayRpcError(PROTOCOL_ERROR) from None
        if not isinstance(frame, dict):
            raise GatewayRpcError(PROTOCOL_ERROR)
        return frame
