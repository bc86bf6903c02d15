"""Loopback stand-ins of OpenClaw gateways' operator RPC that answer ``sessions.usage`` with
the runtime's shape (``aggregates.byModel``), over real WebSockets (the ``websockets`` server).

``UsageGateways`` runs one server for many stand-in gateways: each connection names its gateway
by path (``ws://127.0.0.1:<port>/<agent id>``), so a benchmark can stand up 1,000 without 1,000
threads listening. A gateway marked ``down`` refuses the upgrade; ``silent`` shakes hands and
never answers (the client's deadline ends it). ``StandInDriver`` is a compute driver whose
``operator_call`` reaches them with OCC's own client (``GatewayOperator``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.http11 import Request, Response
from websockets.sync.server import ServerConnection, serve

from occ.drivers.compute.base import ComputeError, RevisionRef, SecretReference
from occ.drivers.compute.fake import FakeCompute
from occ.drivers.compute.gateway_rpc import GatewayOperator, GatewayRpcError

PASSWORD = "usage-stand-in-password-7d1"


@dataclass
class ModelFigures:
    provider: str
    model: str
    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    def wire(self) -> dict[str, Any]:
        total = self.input + self.output + self.cache_read + self.cache_write
        return {"provider": self.provider, "model": self.model, "count": 1, "totals": {
            "input": self.input, "output": self.output, "cacheRead": self.cache_read, "cacheWrite": self.cache_write,
            "totalTokens": total, "totalCost": self.cost, "inputCost": 0, "outputCost": 0, "cacheReadCost": 0,
            "cacheWriteCost": 0, "missingCostEntries": 0}}


@dataclass
class StandInGateway:
    days: dict[str, list[ModelFigures]] = field(default_factory=dict)  # "YYYY-MM-DD" -> figures
    down: bool = False
    silent: bool = False
    delay: float = 0.0  # seconds before each answer
    requests: list[dict[str, Any]] = field(default_factory=list)


class UsageGateways:
    def __init__(self) -> None:
        self.gateways: dict[str, StandInGateway] = {}
        self.server = serve(self._serve, "127.0.0.1", 0, process_request=self._admit)
        self.url = f"ws://127.0.0.1:{self.server.socket.getsockname()[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, agent_id: str, **kwargs: Any) -> StandInGateway:
        self.gateways[agent_id] = StandInGateway(**kwargs)
        return self.gateways[agent_id]

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)

    def _admit(self, connection: ServerConnection, request: Request) -> Response | None:
        gateway = self.gateways.get(request.path.strip("/"))
        if gateway is None or gateway.down:
            return connection.respond(503, "down\n")
        return None

    def _serve(self, connection: ServerConnection) -> None:
        assert connection.request is not None
        gateway = self.gateways[connection.request.path.strip("/")]
        connection.send(json.dumps({"type": "event", "event": "connect.challenge", "payload": {"nonce": "n"}}))
        hello = json.loads(connection.recv(timeout=10))
        if hello["params"]["auth"].get("password") != PASSWORD:
            connection.send(json.dumps({"type": "res", "id": hello["id"], "ok": False,
                                        "error": {"code": "INVALID_REQUEST", "message": "bad password"}}))
            return
        connection.send(json.dumps({"type": "res", "id": hello["id"], "ok": True, "payload": {
            "type": "hello-ok", "protocol": 4, "auth": {"role": "operator", "scopes": hello["params"]["scopes"]}}}))
        for text in connection:
            request = json.loads(text)
            gateway.requests.append(request)
            if gateway.silent:
                continue
            time.sleep(gateway.delay)
            connection.send(json.dumps({"type": "res", "id": request["id"], "ok": True,
                                        "payload": self._answer(gateway, request)}))

    @staticmethod
    def _answer(gateway: StandInGateway, request: dict[str, Any]) -> dict[str, Any]:
        params = request["params"]
        assert request["method"] == "sessions.usage", request
        assert params["startDate"] == params["endDate"], request
        figures = gateway.days.get(params["startDate"], [])
        return {"updatedAt": 0, "startDate": params["startDate"], "endDate": params["endDate"], "sessions": [],
                "totals": {}, "aggregates": {"byModel": [f.wire() for f in figures], "byProvider": []}}


class StandInDriver(FakeCompute):
    """The fake compute driver, with its gateways' operator RPC on the stand-ins."""

    def __init__(self, gateways: UsageGateways) -> None:
        super().__init__()
        self.gateways = gateways

    def operator_call(self, revision: RevisionRef, *, gateway_password: SecretReference | None, method: str,
                      params: Mapping[str, object], scopes: Sequence[str], timeout: float) -> object:
        try:
            with GatewayOperator(f"{self.gateways.url}/{revision.agent_id}", password=PASSWORD, scopes=scopes,
                                 timeout=timeout) as gateway:
                return gateway.call(method, params)
        except GatewayRpcError as exc:
            raise ComputeError(exc.code, retryable=False) from None
