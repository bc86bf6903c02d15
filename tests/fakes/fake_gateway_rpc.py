"""A loopback stand-in of an OpenClaw gateway's WebSocket RPC (real WebSockets, the ``websockets``
library), speaking the frames and payloads the pinned runtime does for what OCC's fleet views
call: ``sessions.list``, ``chat.history``, ``exec.approval.list/resolve`` and
``plugin.approval.list/resolve`` (``dist/exec-approval-*.mjs``, ``approval-shared-*.mjs``):

- the ``connect`` handshake with a shared password, the socket granted the scopes it asked for;
  each method needs its scope (``operator.read``; ``operator.approvals``), else ``MISSING_SCOPE``;
- a list of pending approvals is ``[{id, request, createdAtMs, expiresAtMs, approvalKind}]``;
- a resolve is first-answer-wins: the same decision again answers ``{ok: true}``, another one
  ``INVALID_REQUEST`` with ``details.reason`` ``APPROVAL_ALREADY_RESOLVED``, an unknown id
  ``APPROVAL_NOT_FOUND``.

One stand-in serves many "gateways" (a path each is not needed: each Agent gets its own server).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from websockets.sync.server import ServerConnection, serve

READ, APPROVALS = "operator.read", "operator.approvals"
SCOPES = {"sessions.list": READ, "chat.history": READ, "exec.approval.list": APPROVALS,
          "exec.approval.resolve": APPROVALS, "plugin.approval.list": APPROVALS,
          "plugin.approval.resolve": APPROVALS}


@dataclass
class FakeGateway:
    password: str
    sessions: list[dict[str, Any]] = field(default_factory=list)
    histories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    approvals: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"exec": [], "plugin": []})
    resolved: dict[str, str] = field(default_factory=dict)  # approval id -> decision
    requests: list[dict[str, Any]] = field(default_factory=list)
    silent: bool = False  # accept the connection, then never answer
    url: str = ""

    def start(self) -> FakeGateway:
        self._server = serve(self._connection, "127.0.0.1", 0)
        self.url = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)

    def calls(self, method: str) -> list[dict[str, Any]]:
        return [request["params"] for request in self.requests if request.get("method") == method]

    # --- the protocol -----------------------------------------------------------------------
    def _connection(self, connection: ServerConnection) -> None:
        if self.silent:
            connection.recv(timeout=30)
            return
        connection.send(json.dumps({"type": "event", "event": "connect.challenge", "payload": {"nonce": "n", "ts": 1}}))
        hello = json.loads(connection.recv(timeout=10))
        self.requests.append(hello)
        params = hello.get("params") or {}
        if (params.get("auth") or {}).get("password") != self.password:
            self._answer(connection, hello, error={"code": "INVALID_REQUEST", "message": "unauthorized",
                                                   "details": {"code": "AUTH_PASSWORD_MISMATCH"}})
            return
        granted = list(params.get("scopes") or [])
        self._answer(connection, hello, {"type": "hello-ok", "protocol": 4,
                                         "auth": {"role": "operator", "scopes": granted}})
        while True:
            try:
                request = json.loads(connection.recv(timeout=30))
            except Exception:  # the client closed
                return
            self.requests.append(request)
            method = request.get("method")
            if SCOPES.get(method) not in granted:
                self._answer(connection, request, error={"code": "INVALID_REQUEST", "message": "missing scope",
                                                         "details": {"code": "MISSING_SCOPE"}})
                continue
            payload, error = self._method(method, request.get("params") or {})
            self._answer(connection, request, payload, error=error)

    def _answer(self, connection: ServerConnection, request: dict[str, Any], payload: Any = None, *,
                error: dict[str, Any] | None = None) -> None:
        frame = {"type": "res", "id": request["id"], "ok": error is None}
        frame.update({"error": error} if error else {"payload": payload})
        connection.send(json.dumps(frame))

    def _method(self, method: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        if method == "sessions.list":
            rows = self.sessions[:params.get("limit", 50)]
            return {"ts": 1, "path": "/state", "count": len(rows), "sessions": rows}, None
        if method == "chat.history":
            messages = self.histories.get(params["sessionKey"], [])
            page = messages[-params.get("limit", 1000):]
            return {"sessionKey": params["sessionKey"], "sessionId": "s-1", "messages": page,
                    "totalMessages": len(messages), "offset": 0}, None
        kind = method.split(".")[0]
        if method.endswith(".list"):
            return [dict(a, approvalKind=kind) for a in self.approvals[kind] if a["id"] not in self.resolved], None
        return self._resolve(kind, params)

    def _resolve(self, kind: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        approval_id, decision = params.get("id"), params.get("decision")
        if approval_id in self.resolved:
            if self.resolved[approval_id] == decision:
                return {"ok": True}, None
            return None, {"code": "INVALID_REQUEST", "message": "approval already resolved",
                          "details": {"reason": "APPROVAL_ALREADY_RESOLVED"}}
        if not any(a["id"] == approval_id for a in self.approvals[kind]):
            return None, {"code": "INVALID_REQUEST", "message": "unknown or expired approval id",
                          "details": {"reason": "APPROVAL_NOT_FOUND"}}
        self.resolved[str(approval_id)] = str(decision)
        return {"ok": True}, None


@pytest.fixture
def fake_gateways() -> Iterator[list[FakeGateway]]:
    """Started stand-ins: ``fake_gateways.append(FakeGateway(password).start())``; stopped after."""
    started: list[FakeGateway] = []
    yield started
    for gateway in started:
        gateway.stop()


def running_agent(namespace: Any, gateway: FakeGateway, compute: Any, *, harness_secret_id: str = "sec_x",
                  **fields: Any) -> Any:
    """An Agent that runs (active, wanted running, a serving revision delivering
    ``harness_secret_id``), its gateway password ``gateway.password``, and the fake compute
    driver's endpoint for it ``gateway.url``."""
    from occ.models import DesiredRuntimeState
    from occ.services.secrets import runtime_credential_ensure
    from tests.agents_support import make_revision
    from tests.factories import AgentFactory

    agent = AgentFactory(namespace=namespace, desired_runtime_state=DesiredRuntimeState.RUNNING, **fields)
    agent.active_revision = make_revision(agent, 1, harnessAuth={
        "method": "api_key", "source": {"kind": "secret", "namespaceId": namespace.id, "id": harness_secret_id}})
    agent.save(update_fields=["active_revision"])
    runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: gateway.password)
    compute.serve_gateway_at(agent.id, gateway.url)
    return agent
