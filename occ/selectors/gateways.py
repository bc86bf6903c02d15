"""Where an Agent's gateway listens, for a local operator (``manage.py occ_gateway info``).

An operator tool with shell access to the installation, not an API read: it needs no
principal. It reads OCC's metadata and asks the compute driver, and never reads a secret
value (see ``occ.services.gateways`` for the password).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from occ.drivers.compute import DiagnosticCheck, RevisionRef, get_compute_driver
from occ.errors import NotFound
from occ.models import Agent, AgentRevision

CHAT_COMPLETIONS_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class GatewayInfo:
    agent_id: str
    namespace_id: str
    name: str
    status: str
    desired_runtime_state: str
    active_revision_id: str | None
    revision_id: str | None  # the revision the facts below are about: the active one, else the newest
    websocket_url: str | None
    checks: list[DiagnosticCheck] = field(default_factory=list)

    @property
    def http_url(self) -> str | None:
        if self.websocket_url is None:
            return None
        scheme, rest = self.websocket_url.split("://", 1)
        return ("https" if scheme == "wss" else "http") + "://" + rest.rstrip("/")

    @property
    def ready(self) -> bool:
        return bool(self.checks) and all(check.state == "succeeded" for check in self.checks)

    def as_json(self) -> dict[str, Any]:
        http_url = self.http_url
        return {
            "agentId": self.agent_id, "namespaceId": self.namespace_id, "name": self.name, "status": self.status,
            "desiredRuntimeState": self.desired_runtime_state, "activeRevisionId": self.active_revision_id,
            "revisionId": self.revision_id, "ready": self.ready,
            "gateway": None if http_url is None else {
                "url": http_url, "websocketUrl": self.websocket_url,
                "chatCompletionsUrl": http_url + CHAT_COMPLETIONS_PATH,
            },
            "checks": [{"component": c.component, "check": c.check, "state": c.state,
                        **({"code": c.code} if c.code else {})} for c in self.checks],
        }


def gateway_info(*, agent_id: str) -> GatewayInfo:
    """The gateway of ``agent_id`` as the configured compute driver sees it (read-only)."""
    agent = Agent.objects.filter(id=agent_id).first()
    if agent is None:
        raise NotFound("The Agent does not exist.")
    revision = agent.active_revision or AgentRevision.objects.filter(agent=agent).order_by("-number").first()
    websocket_url, checks = None, []
    if revision is not None:
        driver = get_compute_driver()
        ref = RevisionRef(id=revision.id, namespace_id=revision.namespace_id, agent_id=agent.id,
                          number=revision.number, spec=revision.spec)
        websocket_url = driver.get_gateway_endpoint(ref)
        checks = driver.diagnose(ref)
    return GatewayInfo(
        agent_id=agent.id, namespace_id=agent.namespace_id, name=agent.name, status=agent.status,
        desired_runtime_state=agent.desired_runtime_state, active_revision_id=agent.active_revision_id,
        revision_id=revision.id if revision else None, websocket_url=websocket_url, checks=checks,
    )
