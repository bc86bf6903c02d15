"""AgentRevision reads. Revisions are immutable; only the deploy service creates them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from django.db.models import QuerySet

from occ.documents import PublicRevision
from occ.errors import Forbidden, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in, authorize
from occ.models import Agent, AgentRevision, Principal
from occ.selectors.agents import agent_get, get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.paging import moment_page

PAGE_SIZE = 50


def revision_page(*, actor: Actor, namespace_id: str, agent_id: str, after: str = "",
                  page_size: int = PAGE_SIZE) -> tuple[list[AgentRevision], str | None]:
    """One page of the Agent's revisions that the actor may read exactly, oldest first, keyset on
    ``(created_at, id)`` (numbers are given in creation order, under the Agent's lock), and the
    next page's cursor (None on the last page).

    ``agent:read`` on the Agent opens the list; each revision then needs its own
    ``agent_revision:read``: Namespace-wide, on exactly the revision, or from a binding on exactly
    this Agent whose Role holds it (an owner's; an ``agent:*`` permission alone never reveals one).
    """
    agent = agent_get(actor=actor, namespace_id=namespace_id, agent_id=agent_id)
    return agent_revision_page(actor=actor, agent=agent, after=after, page_size=page_size)


def _revisions_of(actor: Actor, agent: Agent) -> tuple[QuerySet[AgentRevision], Callable[[str], bool]]:
    """The Agent's revisions and which of them (by id) the actor may read (``revision_page``'s rule)."""
    readable = allowed_in(actor, Action.READ, Kind.AGENT_REVISION, namespace_id=agent.namespace_id)
    return (AgentRevision.objects.filter(namespace_id=agent.namespace_id, agent=agent),
            lambda revision_id: readable(revision_id, agent.id))


def agent_revision_page(*, actor: Actor, agent: Agent, after: str = "", page_size: int = PAGE_SIZE,
                        newest_first: bool = False) -> tuple[list[AgentRevision], str | None]:
    """``revision_page`` for an Agent the caller has already read through ``agent_get`` (which
    authorized ``agent:read``); ``newest_first`` for the console's Revisions tab."""
    revisions, readable = _revisions_of(actor, agent)
    return moment_page(revisions, field="created_at", after=after, readable=readable, page_size=page_size,
                       newest_first=newest_first)


def latest_revision(*, actor: Actor, agent: Agent) -> AgentRevision | None:
    """The newest revision of an already-read Agent that the actor may read, or None."""
    newest, _ = agent_revision_page(actor=actor, agent=agent, page_size=1, newest_first=True)
    return newest[0] if newest else None


def agent_revisions_by_id(*, actor: Actor, agent: Agent,
                          revision_ids: Iterable[str | None]) -> dict[str, AgentRevision]:
    """Those of ``revision_ids`` that are revisions of the already-read Agent the actor may read,
    by id (one query; None and unknown ids are left out)."""
    wanted = {revision_id for revision_id in revision_ids if revision_id}
    if not wanted:
        return {}
    revisions, readable = _revisions_of(actor, agent)
    return {revision.id: revision for revision in revisions.filter(id__in=wanted) if readable(revision.id)}


def revision_deployers(revisions: list[AgentRevision]) -> dict[str, str]:
    """Principal id -> name of whoever created each of ``revisions`` (already read), in one
    query; a principal deleted since is missing."""
    ids = {revision.created_by for revision in revisions if revision.created_by}
    return dict(Principal.objects.filter(id__in=ids).values_list("id", "name")) if ids else {}


def revision_get(*, actor: Actor, namespace_id: str, agent_id: str, revision_id: str) -> AgentRevision:
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    revision = AgentRevision.objects.filter(namespace=namespace, agent=agent, id=revision_id).first()
    if revision is None:
        raise NotFound("The revision does not exist.")
    authorize(actor, Action.READ, Kind.AGENT_REVISION, namespace_id=namespace.id, resource_id=revision.id,
              parent_id=agent.id)
    return revision


# --- the difference between a revision and the one before ------------------------------------------

# Where each public field of a revision (``PublicRevision``) belongs in its diff; the document's
# channel settings (``/configuration/channels``) are a section of their own. The origin of a
# redeployed revision is not something it deploys, so it is never a change.
DIFF_SECTIONS: dict[str, str] = {
    "configuration_id": "configuration", "configuration_generation": "configuration",
    "configuration_kind": "configuration", "configuration": "configuration",
    "secret_bindings": "secretBindings",
    "harness_auth": "credentials", "secret_driver_id": "credentials", "repository_credentials": "credentials",
    "plugins": "plugins", "plugin_approvers": "plugins",
    "harness": "runtime", "compute": "runtime", "backend_id": "runtime", "smoke_conversations": "runtime",
}
SECTION_ORDER = ("configuration", "channels", "secretBindings", "credentials", "plugins", "runtime")
CHANNELS_POINTER = "/configuration/channels"

ChangeOp = Literal["added", "removed", "changed"]


@dataclass(frozen=True)
class Change:
    """One difference, at a JSON pointer into the public revision (``/configuration/...``).
    ``before`` is meaningless for ``added``, ``after`` for ``removed``."""

    section: str
    op: ChangeOp
    path: str
    before: Any = None
    after: Any = None


@dataclass(frozen=True)
class RevisionDiff:
    revision: AgentRevision
    previous: AgentRevision | None  # None: the Agent's first revision, compared with nothing
    changes: list[Change]

    def section(self, name: str) -> list[Change]:
        return [change for change in self.changes if change.section == name]


def revision_document(revision: AgentRevision) -> dict[str, Any]:
    """The public fields of ``revision`` that say what it deploys, as JSON (metadata and
    references only: a snapshot never holds a Secret value)."""
    return revision.spec.public(configuration_id=revision.configuration_id,
                                configuration_generation=revision.configuration_generation).document()


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")  # RFC 6901


def _same(before: Any, after: Any) -> bool:
    # JSON tells true from 1 and 1 from 1.0; Python's == does not.
    return type(before) is type(after) and before == after


def json_changes(before: Any, after: Any, path: str = "") -> Iterator[tuple[ChangeOp, str, Any, Any]]:
    """(op, pointer, before, after) for every place two JSON documents differ: objects key by
    key (the earlier document's order, then new keys), arrays index by index, anything else as
    one value."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            child = f"{path}/{_escape(key)}"
            if key not in after:
                yield "removed", child, before[key], None
            elif key not in before:
                yield "added", child, None, after[key]
            else:
                yield from json_changes(before[key], after[key], child)
    elif isinstance(before, list) and isinstance(after, list):
        for index in range(max(len(before), len(after))):
            child = f"{path}/{index}"
            if index >= len(after):
                yield "removed", child, before[index], None
            elif index >= len(before):
                yield "added", child, None, after[index]
            else:
                yield from json_changes(before[index], after[index], child)
    elif not _same(before, after):
        yield "changed", path, before, after


def _section(pointer: str) -> str:
    if pointer == CHANNELS_POINTER or pointer.startswith(CHANNELS_POINTER + "/"):
        return "channels"
    return DIFF_SECTIONS[PublicRevision.field_named(pointer.split("/")[1].replace("~1", "/").replace("~0", "~"))]


def snapshot_diff(previous: AgentRevision | None, revision: AgentRevision) -> list[Change]:
    """What ``revision`` deploys differently from ``previous`` (everything, without one), in
    section order."""
    before = revision_document(previous) if previous is not None else {}
    changes = [Change(_section(path), op, path, old, new)
               for op, path, old, new in json_changes(before, revision_document(revision))]
    return sorted(changes, key=lambda change: SECTION_ORDER.index(change.section))


def revision_diff(*, actor: Actor, namespace_id: str, agent_id: str, revision_id: str) -> RevisionDiff:
    """``revision_id`` compared with the Agent's revision just before it. Both need
    ``agent_revision:read``: a caller who may not read the earlier one gets 403, not a diff
    against some other revision."""
    revision = revision_get(actor=actor, namespace_id=namespace_id, agent_id=agent_id, revision_id=revision_id)
    previous = (AgentRevision.objects.filter(agent_id=revision.agent_id, number__lt=revision.number)
                .order_by("-number").first())
    if previous is not None:
        try:
            authorize(actor, Action.READ, Kind.AGENT_REVISION, namespace_id=revision.namespace_id,
                      resource_id=previous.id, parent_id=revision.agent_id)
        except Forbidden as exc:
            raise Forbidden(f"You cannot read version v{previous.number}, the one before v{revision.number}, "
                            "so the two cannot be compared.", denial=exc.denial) from None
    return RevisionDiff(revision=revision, previous=previous, changes=snapshot_diff(previous, revision))
