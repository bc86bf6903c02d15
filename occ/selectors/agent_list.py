"""The Agents list's health columns (issue 27): each Agent's runtime state (the rule of
``agent_runtime``, the same the Agent page shows), the model and version it runs, and its last
deploy: five queries whatever the number of Agents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import OuterRef, Subquery

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in
from occ.models import AgentRevision
from occ.openclaw.document import primary_model_ref
from occ.selectors.agents import agent_summaries
from occ.selectors.deployments import AgentRuntime, RuntimeSubject, agent_runtimes, deployment_statuses


@dataclass(frozen=True)
class LastDeploy:
    revision_id: str
    number: int
    created_at: datetime
    status: str | None  # None: its work row is gone


@dataclass(frozen=True)
class AgentListRow:
    agent: RuntimeSubject  # the list's summary (the console) or the Agent itself (the API)
    runtime: AgentRuntime
    model: str | None  # the serving revision's primary model (None: none serves, or not readable)
    last_deploy: LastDeploy | None  # the newest revision, when the caller may read it

    @property
    def transitional(self) -> bool:
        """Whether the row is on its way somewhere (the list re-reads itself sooner)."""
        return self.runtime.state in ("starting", "stopping") or self.runtime.retrying


def agent_list_rows(*, actor: Actor, namespace_id: str) -> list[AgentListRow]:
    """The readable Agents of the Namespace, oldest first, with their health columns."""
    summaries = agent_summaries(actor=actor, namespace_id=namespace_id)
    return agent_health(actor, namespace_id, summaries)


def agent_health(actor: Actor, namespace_id: str, summaries: Sequence[RuntimeSubject]) -> list[AgentListRow]:
    """The health columns of ``summaries`` (Agents the caller has read): the console's list
    passes its summaries, the API's list the Agents it returns."""
    readable = allowed_in(actor, Action.READ, Kind.AGENT_REVISION, namespace_id=namespace_id)
    ids = [summary.id for summary in summaries]
    active = {revision.id: revision for revision in AgentRevision.objects.filter(
        namespace_id=namespace_id, id__in=[s.active_revision_id for s in summaries if s.active_revision_id])
        if readable(revision.id, revision.agent_id)}
    newest_number = AgentRevision.objects.filter(agent_id=OuterRef("agent_id")).order_by("-number").values("number")
    newest = list(AgentRevision.objects.filter(namespace_id=namespace_id, agent_id__in=ids,
                                               number=Subquery(newest_number[:1])))
    deployed = {revision.agent_id for revision in newest}
    latest = [revision for revision in newest if readable(revision.id, revision.agent_id)]
    statuses = deployment_statuses(latest)
    latest_by_agent = {revision.agent_id: revision for revision in latest}
    runtimes = agent_runtimes(summaries)
    rows: list[AgentListRow] = []
    for summary in summaries:
        serving = active.get(summary.active_revision_id or "")
        last = latest_by_agent.get(summary.id)
        status = statuses.get(last.id) if last is not None else None
        runtime = runtimes[summary.id]
        if summary.id not in deployed:  # a draft is stopped, but it never ran: "Not deployed"
            runtime = AgentRuntime(state="none")
        rows.append(AgentListRow(
            agent=summary, runtime=runtime,
            model=primary_model_ref(serving.spec.configuration) if serving is not None else None,
            last_deploy=LastDeploy(last.id, last.number, last.created_at, status.status if status else None)
            if last is not None else None))
    return rows
