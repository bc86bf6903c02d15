"""Who has access to one Agent and why (issue 26, "Share this Agent"): every binding that grants
something on the Agent, as a level (can chat, can deploy, can administer, can see) and where it
comes from (this Agent directly, a Role on its Namespace, an Installation Role). Only a direct
binding is revoked from the Agent's page; the others are changed on the Access and Members pages.

Reading it needs ``administer:agent`` on the Agent, as sharing it does.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind, permission
from occ.iam.policy import authorize
from occ.iam.roles import AGENT_USER, DEVELOPER, NAMESPACE_ADMINISTRATOR
from occ.models import AccessBinding, Agent, Principal, PrincipalKind
from occ.selectors.agents import agent_get
from occ.selectors.paging import moment_page, text_page

PAGE_SIZE = 50

# Share level -> the built-in Role bound on the Agent for it. Bound on one Agent, only the Role's
# Agent permissions apply: Agent user = read, chat; Developer adds update, deploy, stop/start,
# logs; Namespace administrator adds delete and administer.
LEVEL_ROLES: dict[str, str] = {"chat": AGENT_USER, "deploy": DEVELOPER, "administer": NAMESPACE_ADMINISTRATOR}
LEVEL_WORDS = {"administer": "Can administer", "deploy": "Can deploy", "chat": "Can chat", "see": "Can see"}
SOURCE_WORDS = {"direct": "Shared directly", "namespace": "Role on the Namespace", "installation": "Installation Role"}


@dataclass(frozen=True)
class AccessEntry:
    binding_id: str
    principal_id: str
    principal_name: str
    principal_kind: str  # "human" or "service"
    role_name: str
    level: str  # administer, deploy, chat, see
    source: str  # direct, namespace, installation

    @property
    def level_words(self) -> str:
        return LEVEL_WORDS[self.level]

    @property
    def source_words(self) -> str:
        return SOURCE_WORDS[self.source]

    @property
    def revocable(self) -> bool:
        return self.source == "direct"


def level_of(permissions: list[str]) -> str | None:
    """The highest share level a Role's permissions give on an Agent, or None (nothing on Agents)."""
    held = set(permissions)
    for level, action in (("administer", Action.ADMINISTER), ("deploy", Action.DEPLOY), ("chat", Action.INVOKE),
                          ("see", Action.READ)):
        if permission(action, Kind.AGENT) in held:
            return level
    return None


def _reaching(agent: Agent) -> QuerySet[AccessBinding]:
    """The bindings that can reach the Agent (the Agent's own principal left out)."""
    reaching = (Q(namespace__isnull=True)
                | Q(namespace_id=agent.namespace_id, resource_kind__isnull=True)
                | Q(namespace_id=agent.namespace_id, resource_kind=Kind.AGENT.value, resource_id=agent.id))
    return AccessBinding.objects.filter(reaching).exclude(principal__agent_id=agent.id).select_related("principal",
                                                                                                        "role")


def _grants_on_agents(binding: AccessBinding) -> bool:
    return level_of(binding.role.permissions) is not None


def _entry(binding: AccessBinding) -> AccessEntry:
    source = ("installation" if binding.namespace_id is None
              else "namespace" if binding.resource_kind is None else "direct")
    return AccessEntry(
        binding_id=binding.id, principal_id=binding.principal_id, principal_name=binding.principal.name,
        principal_kind="human" if binding.principal.kind == PrincipalKind.HUMAN else "service",
        role_name=binding.role.name, level=level_of(binding.role.permissions) or "see", source=source)


def access_entries(agent: Agent) -> list[AccessEntry]:
    """Every binding that reaches the Agent with some Agent permission (no authorization: the
    caller has authorized ``administer:agent``), by name. The Agent's own principal is left out."""
    return [_entry(binding) for binding in _reaching(agent).order_by("principal__name", "id")
            if _grants_on_agents(binding)]


def shared_agent(*, actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    """The Agent, for a caller who may share it (``administer:agent`` on it)."""
    agent = agent_get(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    authorize(actor, Action.ADMINISTER, Kind.AGENT, namespace_id=agent.namespace_id, resource_id=agent.id)
    return agent


def agent_access(*, actor: Actor, namespace_id: str, agent_id: str) -> tuple[Agent, list[AccessEntry]]:
    agent = shared_agent(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    return agent, access_entries(agent)


def share_subjects(agent: Agent) -> list[Principal]:
    """Whom the Agent can be shared with: every active person, and the service principals of the
    Installation or of the Agent's Namespace (no Agent's own principal)."""
    return list(_subjects(agent).order_by("kind", "name", "id"))


def _subjects(agent: Agent) -> QuerySet[Principal]:
    people = Q(kind=PrincipalKind.HUMAN, user__is_active=True)
    services = Q(kind=PrincipalKind.SERVICE) & (Q(namespace__isnull=True) | Q(namespace_id=agent.namespace_id))
    # No Agent's own principal; said once so the page reads the principal_name_order index.
    return Principal.objects.filter(people | services, agent__isnull=True)


def agent_share_subjects(*, actor: Actor, namespace_id: str, agent_id: str) -> list[Principal]:
    """``share_subjects`` for a caller who may share the Agent (``administer:agent``), as the
    Agent page's Share form offers them."""
    return share_subjects(shared_agent(actor=actor, namespace_id=namespace_id, agent_id=agent_id))


def agent_access_page(*, actor: Actor, namespace_id: str, agent_id: str, after: str = "",
                      page_size: int = PAGE_SIZE) -> tuple[list[AccessEntry], str | None]:
    """``agent_access``'s entries one keyset page at a time, oldest binding first on
    ``(created_at, id)``, and the next page's cursor (None on the last page)."""
    agent = shared_agent(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    bindings, next_cursor = moment_page(_reaching(agent), field="created_at", after=after,
                                        readable=lambda _binding_id: True, keep=_grants_on_agents,
                                        page_size=page_size)
    return [_entry(binding) for binding in bindings], next_cursor


def agent_share_subject_page(*, actor: Actor, namespace_id: str, agent_id: str, after: str = "",
                             page_size: int = PAGE_SIZE) -> tuple[list[Principal], str | None]:
    """``agent_share_subjects`` one keyset page at a time on ``(name, id)``, and the next page's
    cursor (None on the last page)."""
    agent = shared_agent(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    return text_page(_subjects(agent), field="name", after=after, page_size=page_size)
