"""Agent reads. Lists filter per item in memory (no query per Agent) and are read in keyset
pages: the API's by creation, the console's by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime

from django.db.models import Q
from django.db.models.functions import Lower

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in, authorize
from occ.models import Agent, DesiredRuntimeState, ExecutionMode, Namespace
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.paging import (
    any_readable,
    decode_text_cursor,
    encode_text_keys,
    moment_page,
    past_keys,
    readable_page,
)


def get_agent(namespace: Namespace, agent_id: str, *, for_update: bool = False) -> Agent:
    """The Agent under its exact Namespace, or NotFound (a mismatched owner is not revealed)."""
    qs = Agent.objects.filter(namespace=namespace, id=agent_id).select_related("service_principal")
    if for_update:
        qs = qs.select_for_update(of=("self",))
    agent = qs.first()
    if agent is None:
        raise NotFound("The Agent does not exist.")
    return agent


@dataclass(frozen=True)
class AgentListScope:
    """The Agents of one live Namespace that one actor may read: the Namespace read was
    authorized, and ``readable`` says for each Agent id whether ``agent:read`` allows it."""

    namespace_id: str
    readable: Callable[[str], bool]


def agent_list_scope(*, actor: Actor, namespace_id: str) -> AgentListScope:
    """Authorize reading the Namespace's list; the per-Agent filter every list applies."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    return AgentListScope(namespace.id, allowed_in(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id))


PAGE_SIZE = 50


@dataclass(frozen=True)
class AgentPage:
    rows: list[Agent]
    next_cursor: str | None  # the page after this one (newer Agents); None on the last page


def agent_page(*, actor: Actor, namespace_id: str, after: str = "", page_size: int = PAGE_SIZE) -> AgentPage:
    """One page of the Namespace's Agents the actor may read exactly (``agent:read`` on each),
    oldest first, keyset on ``(created_at, id)``: an Agent created while someone pages lands on
    the last page, none is seen twice or skipped. Each comes with its service principal; the
    staged initial workspace files are left deferred (no list shows them). Rows the actor may
    not read are skipped in SQL-ordered batches, so a page is full unless it is the last."""
    scope = agent_list_scope(actor=actor, namespace_id=namespace_id)
    rows, next_cursor = moment_page(
        Agent.objects.filter(namespace_id=scope.namespace_id).select_related("service_principal")
        .defer("initial_workspace_files"),
        field="created_at", after=after, readable=scope.readable, page_size=page_size)
    return AgentPage(rows=rows, next_cursor=next_cursor)


@dataclass(frozen=True, slots=True)
class AgentSummary:
    """One line of an Agents list: what a person picks an Agent by."""

    id: str
    name: str
    execution_mode: str
    desired_runtime_state: str
    active_revision_id: str | None
    created_at: datetime
    stopped_reason: str = ""  # why OCC itself stopped it (BUDGET_EXCEEDED), else empty

    def get_execution_mode_display(self) -> str:
        """The mode's label, as ``Agent.get_execution_mode_display`` names it."""
        return ExecutionMode(self.execution_mode).label

    def get_desired_runtime_state_display(self) -> str:
        return DesiredRuntimeState(self.desired_runtime_state).label


_SUMMARY_FIELDS = tuple(field.name for field in fields(AgentSummary))


def agent_summaries(*, actor: Actor, namespace_id: str) -> list[AgentSummary]:
    """The readable Agents of the Namespace, oldest first, with the few columns a list shows
    (one query, no JSON column read)."""
    scope = agent_list_scope(actor=actor, namespace_id=namespace_id)
    rows = Agent.objects.filter(namespace_id=scope.namespace_id).order_by("created_at", "id").values_list(
        *_SUMMARY_FIELDS)
    return [AgentSummary(*row) for row in rows if scope.readable(row[0])]


@dataclass(frozen=True)
class AgentSummaryPage:
    rows: list[AgentSummary]
    next_cursor: str | None  # the page after this one; None on the last page
    previous_cursor: str | None  # the page before this one; None on the first page
    any_agents: bool  # whether the actor may read any Agent of the Namespace, the search aside


# ``only`` names the foreign key by its field; the summary by its column.
_SUMMARY_ONLY = tuple("active_revision" if name == "active_revision_id" else name for name in _SUMMARY_FIELDS)


def _summary(agent: Agent) -> AgentSummary:
    return AgentSummary(*(getattr(agent, name) for name in _SUMMARY_FIELDS))


def _sort_keys(agent: Agent) -> tuple[str, str]:
    return agent.sort_name, agent.id  # type: ignore[attr-defined]  # the annotation below


def agent_summary_page(*, actor: Actor, namespace_id: str, query: str = "", after: str = "", before: str = "",
                       page_size: int = PAGE_SIZE) -> AgentSummaryPage:
    """One page of the Namespace's Agents the actor may read whose name or id contains ``query``
    (ignoring case; every one when empty), with the few columns a list shows, by name: keyset
    on ``(lower(name), id)``, which the ``agent_name_order`` index serves. The page after cursor
    ``after``, the page before cursor ``before``, else the first; a cursor that is not ours, or
    whose page has no row left (a stale link), gives the first page. Rows the actor may not read
    are skipped in SQL-ordered batches, so a page is full unless it is the last."""
    scope = agent_list_scope(actor=actor, namespace_id=namespace_id)
    agents = Agent.objects.filter(namespace_id=scope.namespace_id)
    found = agents.filter(Q(name__icontains=query) | Q(id__icontains=query)) if query else agents
    ordered = found.annotate(sort_name=Lower("name")).only(*_SUMMARY_ONLY)

    def page(start: tuple[str, str] | None, *, backwards: bool = False) -> tuple[list[Agent], bool]:
        return readable_page(
            ordered.order_by("-sort_name", "-id") if backwards else ordered.order_by("sort_name", "id"),
            start=None if start is None else past_keys("sort_name", *start, newest_first=backwards),
            past=lambda agent: past_keys("sort_name", *_sort_keys(agent), newest_first=backwards),
            readable=scope.readable, page_size=page_size)

    after_keys = decode_text_cursor(after) if after else None
    before_keys = decode_text_cursor(before) if before and after_keys is None else None
    rows: list[Agent] = []
    more_before = more_after = False
    if after_keys is not None:
        rows, more_after = page(after_keys)
        more_before = True  # the page we came from
    elif before_keys is not None:
        back, more_before = page(before_keys, backwards=True)
        if more_before:  # else the first page, full
            rows, more_after = back[::-1], True
    if not rows:
        rows, more_after = page(None)
        more_before = False
    return AgentSummaryPage(
        rows=[_summary(agent) for agent in rows],
        next_cursor=encode_text_keys(*_sort_keys(rows[-1])) if more_after else None,
        previous_cursor=encode_text_keys(*_sort_keys(rows[0])) if more_before else None,
        any_agents=bool(rows) or (bool(query) and any_readable(agents, scope.readable)))


def agent_get(*, actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    authorize(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    return agent
