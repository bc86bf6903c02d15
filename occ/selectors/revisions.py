"""AgentRevision reads. Revisions are immutable; only the deploy service creates them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import AgentRevision
from occ.services.agents import get_agent
from occ.services.checks import get_live_namespace

# Public keys of AgentRevision.snapshot (spec §1.8), stored under their wire names. The
# snapshot may hold internal keys too (the Agent's service principal, driver selections):
# only these are ever exposed.
SNAPSHOT_PUBLIC_FIELDS = (
    "configuration", "harness", "compute", "harnessAuth", "backendId", "secretBindings", "pluginApprovers",
)
SNAPSHOT_OPTIONAL_FIELDS = ("secretDriverId", "plugins", "repositoryCredentials")


def revision_list(*, actor: Actor, namespace_id: str, agent_id: str) -> list[AgentRevision]:
    """The Agent's revisions, oldest first, that the actor may read exactly.

    ``agent:read`` on the Agent opens the list; each revision then needs its own
    ``agent_revision:read`` (an Agent-level grant never reveals revisions).
    """
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    authorize(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    revisions = AgentRevision.objects.filter(namespace=namespace, agent=agent).order_by("number")
    return [
        revision for revision in revisions
        if allowed(actor, Action.READ, Kind.AGENT_REVISION, namespace_id=namespace.id, resource_id=revision.id)
    ]


def revision_get(*, actor: Actor, namespace_id: str, agent_id: str, revision_id: str) -> AgentRevision:
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    revision = AgentRevision.objects.filter(namespace=namespace, agent=agent, id=revision_id).first()
    if revision is None:
        raise NotFound("The revision does not exist.")
    authorize(actor, Action.READ, Kind.AGENT_REVISION, namespace_id=namespace.id, resource_id=revision.id)
    return revision


@dataclass(frozen=True)
class RevisionContents:
    """What a revision deploys, read from its snapshot: ids and documents, never a value."""

    configuration: dict[str, Any]
    harness_secret_id: str | None
    secret_ids: dict[str, str]  # ENV_NAME -> Secret id
    plugins: dict[str, Any]
    harness: dict[str, Any]
    compute: dict[str, Any]


def revision_contents(revision: AgentRevision) -> RevisionContents:
    snapshot = revision.snapshot
    harness_auth = snapshot.get("harnessAuth") or {}
    bindings = snapshot.get("secretBindings") or {}
    return RevisionContents(
        configuration=snapshot.get("configuration") or {},
        harness_secret_id=(harness_auth.get("source") or {}).get("id"),
        secret_ids={env: binding["source"]["id"] for env, binding in sorted(bindings.items())},
        plugins=snapshot.get("plugins") or {"plugins": {}},
        harness=snapshot.get("harness") or {},
        compute=snapshot.get("compute") or {},
    )
