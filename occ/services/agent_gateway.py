"""OCC's calls to an Agent's gateway RPC as an operator (issue 29), through the compute driver
(``ComputeDriver.operator_call``): the driver finds the gateway serving the Agent's active
revision and reads its password (the Agent's driver-owned runtime credential) for that one call;
neither leaves the driver.

No database transaction is open here: callers read what they need, call, and write after.
Every call is bounded by ``OCC_GATEWAY_RPC_TIMEOUT_SECONDS`` (the whole call: opening, the
handshake and the answer) and the RPC client's size bound, so a gateway that is down or slow
costs its caller that bound at most. Failures are ``GatewayNotRunning`` or ``GatewayUnavailable``
with the driver's code (``GATEWAY_RPC_*``) and the gateway's own code, never the gateway's words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings

from occ.drivers.compute import CHAT_GATEWAY_NOT_RUNNING, ComputeError, RevisionRef, SecretReference, get_compute_driver
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE, OPERATOR_UNSUPPORTED
from occ.errors import Conflict, DependencyUnavailable, NotImplementedYet
from occ.models import Agent, AgentRevision, AgentStatus, DesiredRuntimeState, Secret

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


def gateway_call(agent: Agent, *, scopes: Sequence[str], method: str, params: Mapping[str, Any] | None = None,
                 timeout: float | None = None) -> Any:
    """One method of the Agent's gateway RPC, as an operator holding ``scopes``; its JSON payload."""
    revision = AgentRevision.objects.filter(id=agent.active_revision_id).first() if runs(agent) else None
    if revision is None:
        raise GatewayNotRunning()
    secret = Secret.objects.filter(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE).first()
    password = (SecretReference(secret_id=secret.id, driver_id=secret.driver_id, backend_name=secret.backend_name)
                if secret is not None else None)
    ref = RevisionRef(id=revision.id, namespace_id=revision.namespace_id, agent_id=agent.id, number=revision.number,
                      spec=revision.spec)
    bound = float(timeout if timeout is not None else settings.OCC_GATEWAY_RPC_TIMEOUT_SECONDS)
    try:
        return get_compute_driver().operator_call(ref, gateway_password=password, method=method,
                                                  params=dict(params or {}), scopes=scopes, timeout=bound)
    except ComputeError as exc:
        if exc.code == OPERATOR_UNSUPPORTED:
            raise NotImplementedYet("This compute backend does not let OCC ask its gateways yet.") from None
        if exc.code == CHAT_GATEWAY_NOT_RUNNING:
            raise GatewayNotRunning() from None
        raise GatewayUnavailable(exc.code, exc.gateway_code) from None
