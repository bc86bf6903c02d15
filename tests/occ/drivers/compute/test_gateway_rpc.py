"""The gateway operator client against a loopback WebSocket server that speaks the gateway's
frames (a stand-in for the edges a real gateway rarely shows: silence, oversize frames, garbage).
The real gateway is in test_local_gateway.py."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.sync.server import ServerConnection, serve

from occ.drivers.compute.gateway_rpc import (
    APPROVALS,
    AUTH_REFUSED,
    PROTOCOL_ERROR,
    READ,
    REFUSED,
    SCOPE_MISSING,
    TIMEOUT,
    TOO_LARGE,
    UNREACHABLE,
    GatewayOperator,
    GatewayRpcError,
)

PASSWORD = "loopback-gateway-password-91c2"
LEAK = "gateway-text-never-shown-3f"


class StandIn:
    """Answers each connection with ``behave(connection)``; keeps every request frame it read."""

    def __init__(self, behave: Callable[[StandIn, ServerConnection], None]) -> None:
        self.behave = behave
        self.requests: list[dict[str, Any]] = []
        self.server = serve(lambda connection: self.behave(self, connection), "127.0.0.1", 0)
        self.url = f"ws://127.0.0.1:{self.server.socket.getsockname()[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def read(self, connection: ServerConnection) -> dict[str, Any]:
        frame = json.loads(connection.recv(timeout=10))
        self.requests.append(frame)
        return frame

    def handshake(self, connection: ServerConnection) -> bool:
        connection.send(json.dumps({"type": "event", "event": "connect.challenge", "payload": {"nonce": "n", "ts": 1}}))
        hello = self.read(connection)
        if hello["params"]["auth"].get("password") != PASSWORD:
            connection.send(json.dumps({"type": "res", "id": hello["id"], "ok": False, "error": {
                "code": "INVALID_REQUEST", "message": LEAK, "details": {"code": "AUTH_PASSWORD_MISMATCH"}}}))
            return False
        connection.send(json.dumps({"type": "res", "id": hello["id"], "ok": True, "payload": {
            "type": "hello-ok", "protocol": 4, "auth": {"role": "operator", "scopes": hello["params"]["scopes"]}}}))
        return True


@pytest.fixture
def stand_in() -> Iterator[Callable[[Callable[[StandIn, ServerConnection], None]], StandIn]]:
    started: list[StandIn] = []

    def start(behave: Callable[[StandIn, ServerConnection], None]) -> StandIn:
        server = StandIn(behave)
        server.thread.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.server.shutdown()
        server.thread.join(timeout=10)


def gateway(connection_behaviour: Callable[[StandIn, ServerConnection, dict[str, Any]], None]
            ) -> Callable[[StandIn, ServerConnection], None]:
    """A gateway that shakes hands, then answers each request with ``connection_behaviour``."""

    def behave(server: StandIn, connection: ServerConnection) -> None:
        if not server.handshake(connection):
            return
        while True:
            try:
                request = server.read(connection)
            except Exception:  # the client closed
                return
            connection_behaviour(server, connection, request)

    return behave


def answer(payload: Any) -> Callable[[StandIn, ServerConnection, dict[str, Any]], None]:
    def reply(server: StandIn, connection: ServerConnection, request: dict[str, Any]) -> None:
        connection.send(json.dumps({"type": "event", "event": "tick", "payload": {}}))  # skipped
        connection.send(json.dumps({"type": "res", "id": request["id"], "ok": True, "payload": payload}))
    return reply


def test_a_call_as_an_operator_with_the_scopes_asked_for(stand_in):
    server = stand_in(gateway(answer({"sessions": [{"key": "main"}], "count": 1})))
    with GatewayOperator(server.url, password=PASSWORD, scopes=[READ]) as client:
        assert client.granted == [READ]
        assert client.call("sessions.list", {"limit": 5}) == {"sessions": [{"key": "main"}], "count": 1}
    connect, call = server.requests
    assert connect["method"] == "connect"
    assert connect["params"]["role"] == "operator"
    assert connect["params"]["scopes"] == [READ]
    assert (connect["params"]["minProtocol"], connect["params"]["maxProtocol"]) == (4, 4)
    assert (call["method"], call["params"]) == ("sessions.list", {"limit": 5})


def refusal(code: str, detail: str | None) -> Callable[[StandIn, ServerConnection, dict[str, Any]], None]:
    def reply(server: StandIn, connection: ServerConnection, request: dict[str, Any]) -> None:
        error = {"code": code, "message": LEAK, **({"details": {"code": detail}} if detail else {})}
        connection.send(json.dumps({"type": "res", "id": request["id"], "ok": False, "error": error}))
    return reply


@pytest.mark.parametrize(("code", "detail", "expected", "gateway_code"), [
    ("FORBIDDEN", "MISSING_SCOPE", SCOPE_MISSING, "MISSING_SCOPE"),
    ("INVALID_REQUEST", None, REFUSED, "INVALID_REQUEST"),
    ("not a <token>", None, REFUSED, None),
])
def test_a_refused_method_says_which_kind_and_never_the_gateways_words(stand_in, code, detail, expected,
                                                                        gateway_code):
    server = stand_in(gateway(refusal(code, detail)))
    with GatewayOperator(server.url, password=PASSWORD, scopes=[READ]) as client, \
            pytest.raises(GatewayRpcError) as refused:
        client.call("exec.approval.list")
    assert (refused.value.code, refused.value.gateway_code) == (expected, gateway_code)
    assert LEAK not in str(refused.value)


def test_a_wrong_password_is_an_auth_refusal(stand_in):
    server = stand_in(gateway(answer({})))
    with pytest.raises(GatewayRpcError) as refused, GatewayOperator(server.url, password="wrong", scopes=[APPROVALS]):
        pass
    assert (refused.value.code, refused.value.gateway_code) == (AUTH_REFUSED, "AUTH_PASSWORD_MISMATCH")
    assert LEAK not in str(refused.value)


def silent(server: StandIn, connection: ServerConnection) -> None:
    time.sleep(3)


def test_a_silent_gateway_ends_at_the_deadline(stand_in):
    server = stand_in(silent)
    started = time.monotonic()
    with pytest.raises(GatewayRpcError) as refused, GatewayOperator(server.url, password=PASSWORD, scopes=[READ],
                                                                    timeout=0.5):
        pass
    assert refused.value.code == TIMEOUT
    assert time.monotonic() - started < 2.5


def test_a_slow_answer_ends_at_the_deadline_of_the_whole_call(stand_in):
    def slow(server: StandIn, connection: ServerConnection, request: dict[str, Any]) -> None:
        for _ in range(30):  # events keep coming, the answer never does
            connection.send(json.dumps({"type": "event", "event": "tick", "payload": {}}))
            time.sleep(0.1)

    server = stand_in(gateway(slow))
    started = time.monotonic()
    with GatewayOperator(server.url, password=PASSWORD, scopes=[READ], timeout=1.0) as client, \
            pytest.raises(GatewayRpcError) as refused:
        client.call("sessions.list")
    assert refused.value.code == TIMEOUT
    assert time.monotonic() - started < 2.5


def test_a_frame_over_the_bound_ends_the_call(stand_in):
    server = stand_in(gateway(answer({"blob": "x" * 200_000})))
    with GatewayOperator(server.url, password=PASSWORD, scopes=[READ], max_bytes=64_000) as client, \
            pytest.raises(GatewayRpcError) as refused:
        client.call("sessions.list")
    assert refused.value.code == TOO_LARGE


@pytest.mark.parametrize("frame", ["not json", "[1, 2]", json.dumps({"type": "res", "id": "someone-else", "ok": True})])
def test_frames_the_protocol_does_not_describe(stand_in, frame):
    def garbage(server: StandIn, connection: ServerConnection, request: dict[str, Any]) -> None:
        connection.send(frame)

    server = stand_in(gateway(garbage))
    with GatewayOperator(server.url, password=PASSWORD, scopes=[READ]) as client, \
            pytest.raises(GatewayRpcError) as refused:
        client.call("sessions.list")
    assert refused.value.code == PROTOCOL_ERROR


def test_nothing_listening_is_unreachable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(GatewayRpcError) as refused, GatewayOperator(f"ws://127.0.0.1:{port}", password=PASSWORD,
                                                                    scopes=[READ]):
        pass
    assert refused.value.code == UNREACHABLE
