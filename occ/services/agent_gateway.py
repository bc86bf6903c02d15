"""OCC's calls to an Agent's gateway RPC as an operator (issue 29): where the gateway listens
(the compute driver's ``get_gateway_endpoint`` for the serving revision) and its password (the
Agent's driver-owned runtime credential, held by the SecretDriver for the length of one call).

No database transaction is open here: callers read what they need, call, and write after.
Every call is bounded by ``OCC_GATEWAY_RPC_TIMEOUT_SECONDS`` (the whole call: opening, the
handshake and every answer) and ``GatewayOperator``'s size bound, so a gateway that is down or
slow costs its caller that bound at most. Failures are ``GatewayUnavailable`` with the client's
code (``GATEWAY_RPC_*``), never the gateway's words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from django.conf import settings

from occ.drivers.compute import RevisionRef, get_compute_driver
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.drivers.compute.gateway_rpc import GatewayOperator, GatewayRpcError
from occ.drivers.secrets import get_secret_driver
from occ.errors import Conflict, DependencyUnavailable
from occ.models import Agent, AgentRevision, AgentStatus, DesiredRuntimeState, Secret

T = TypeVar("T")
NOT_RUNNING_CODE = "AGENT_NOT_RUNNING"
UNAVAILABLE_CODE = "GATEWAY_UNAVAILABLE"


class GatewayNotRunning(Conflict):
    code = NOT_RUNNING_CODE
    default_message = "The Agent's gateway is not running. Start or deploy the Agent, then try again."


class GatewayUnavailable(DependencyUnavailable):
    code = UNAVAILABLE_CODE
    default_message = "The Agent's gateway did not answer. Check that the Agent is running, then try again."

    def __init__(self, rpc_code: str, gateway_code: str | None = None) -> None:
        super().__init__()
        self.rpc_code, self.gateway_code = rpc_code, gateway_code


def runs(agent: Agent) -> bool:
    """Whether the Agent should have a gateway serving now (active, wanted running, deployed)."""
    return (agent.status == AgentStatus.ACTIVE and agent.desired_runtime_state == DesiredRuntimeState.RUNNING
            and agent.active_revision_id is not None)


def gateway_endpoint(agent: Agent) -> str | None:
    """The WebSocket URL of the gateway serving the Agent's active revision, or None."""
    revision = AgentRevision.objects.filter(id=agent.active_revision_id).first() if runs(agent) else None
    if revision is None:
        return None
    return get_compute_driver().get_gateway_endpoint(RevisionRef(
        id=revision.id, namespace_id=revision.namespace_id, agent_id=agent.id, number=revision.number,
        spec=revision.spec))


def gateway_call(agent: Agent, *, scopes: Sequence[str], work: Callable[[GatewayOperator], T],
                 timeout: float | None = None) -> T:
    """``work`` on one operator connection to the Agent's gateway with ``scopes``."""
    url = gateway_endpoint(agent)
    secret = Secret.objects.filter(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE).first()
    if url is None or secret is None:
        raise GatewayNotRunning()
    bound = float(timeout if timeout is not None else settings.OCC_GATEWAY_RPC_TIMEOUT_SECONDS)

    def connected(password: str) -> T:
        with GatewayOperator(url, password=password, scopes=scopes, timeout=bound) as gateway:
            return work(gateway)

    try:
        return get_secret_driver(secret.driver_id).with_value(secret.backend_name, connected)
    except GatewayRpcError as exc:
        raise GatewayUnavailable(exc.code, exc.gateway_code) from None
