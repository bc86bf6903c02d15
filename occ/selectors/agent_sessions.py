"""Reading the session index (issue 29): the sessions of every Agent the caller may read the
conversations of (``read_conversations:agent``), across the fleet or on one Agent, filtered by
Agent, channel, person and time, newest activity first in keyset pages.

Which Agents: one ``WHERE`` built from the caller's grants (``agents_allowing``): whole live
Namespaces where a Namespace- or Installation-wide grant allows the action on every Agent, plus
the Agents allowed one by one elsewhere; so a page is never short of rows the caller may read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in, authorize
from occ.models import Agent, AgentSession, AgentStatus, Namespace
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.paging import moment_page

PAGE_SIZE = 50


def agents_allowing(actor: Actor, action: Action, *, agent: str = "agent") -> Q:
    """A filter on the relation ``agent`` ("": the Agents themselves) to the live Agents
    ``actor`` may ``action``."""
    whole: list[str] = []
    some: list[str] = []
    for namespace_id in Namespace.objects.live().values_list("id", flat=True):
        if actor.scope_namespace_id not in (None, namespace_id) or not actor.policy.reaches(namespace_id):
            continue
        if actor.policy.allows_every(action, Kind.AGENT, namespace_id=namespace_id):
            whole.append(namespace_id)
            continue
        decide = allowed_in(actor, action, Kind.AGENT, namespace_id=namespace_id)
        some.extend(agent_id for agent_id in Agent.objects.filter(namespace_id=namespace_id)
                    .values_list("id", flat=True) if decide(agent_id))
    path = f"{agent}__" if agent else ""
    return ((Q(**{f"{path}namespace_id__in": whole}) | Q(**{f"{path}id__in": some}))
            & Q(**{f"{path}status": AgentStatus.ACTIVE}))


@dataclass(frozen=True)
class SessionQuery:
    """What to look for; every part is optional."""

    agent_id: str = ""
    channel: str = ""
    person: str = ""  # part of who it is with
    since: datetime | None = None
    until: datetime | None = None


def _filtered(rows: QuerySet[AgentSession], query: SessionQuery) -> QuerySet[AgentSession]:
    if query.agent_id:
        rows = rows.filter(agent_id=query.agent_id)
    if query.channel:
        rows = rows.filter(channel=query.channel)
    if query.person:
        rows = rows.filter(person__icontains=query.person)
    if query.since:
        rows = rows.filter(last_activity_at__gte=query.since)
    if query.until:
        rows = rows.filter(last_activity_at__lt=query.until)
    return rows


def session_page(*, actor: Actor, query: SessionQuery, after: str = "",
                 page_size: int = PAGE_SIZE) -> tuple[list[AgentSession], str | None]:
    """A page of the fleet's sessions the caller may read, newest activity first, and the next
    page's cursor (None on the last)."""
    rows = _filtered(AgentSession.objects.filter(agents_allowing(actor, Action.READ_CONVERSATIONS))
                     .select_related("agent", "namespace"), query)
    return moment_page(rows, field="last_activity_at", after=after, readable=lambda _: True,
                       page_size=page_size, newest_first=True)


def agent_session_page(*, actor: Actor, namespace_id: str, agent_id: str, query: SessionQuery, after: str = "",
                       page_size: int = PAGE_SIZE) -> tuple[Agent, list[AgentSession], str | None]:
    """A page of one Agent's sessions (its Sessions tab): ``read_conversations`` on the Agent."""
    agent = conversations_agent(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    rows = _filtered(AgentSession.objects.filter(agent=agent).select_related("agent", "namespace"), query)
    chosen, cursor = moment_page(rows, field="last_activity_at", after=after, readable=lambda _: True,
                                 page_size=page_size, newest_first=True)
    return agent, chosen, cursor


def conversations_agent(*, actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    """The Agent, when the caller may read its conversations (403 otherwise; 404 when gone)."""
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    authorize(actor, Action.READ_CONVERSATIONS, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    return agent


def session_get(*, actor: Actor, namespace_id: str, agent_id: str, session_id: str) -> AgentSession:
    """One indexed session of an Agent whose conversations the caller may read."""
    agent = conversations_agent(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    session = AgentSession.objects.filter(agent=agent, id=session_id).select_related("agent", "namespace").first()
    if session is None:
        raise NotFound("The session does not exist (it may have been removed from the Agent's gateway).")
    return session


def session_channels(*, actor: Actor) -> list[str]:
    """The channels of the sessions the caller may read (the filter's choices)."""
    return sorted(set(AgentSession.objects.filter(agents_allowing(actor, Action.READ_CONVERSATIONS))
                      .exclude(channel="").values_list("channel", flat=True).distinct()[:50]))
