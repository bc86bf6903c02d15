"""Reading the audit log (the console's Audit log page; operators also keep the Django admin).

Who reads what: a viewer holding ``read:installation`` (the administrators) reads every event;
anyone else reads the events of the live Namespaces they may ``read``, and no Installation-level
event (accounts, Installation keys, bootstrap, denials outside a Namespace). The filter is one
``WHERE`` on the query, so a page is never short of rows the viewer may read.

Paging is keyset on ``(occurred_at, id)``, newest first: the log only grows at the top while
people read it, so an offset would shift every page by the events written since (a row seen
twice or never), and an offset's cost grows with the depth of the page; a keyset page costs the
same anywhere on the ``occurred_at`` index and stays put. The cursor is the edge row's keys.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils.dateparse import parse_datetime

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import Agent, AgentRevision, AuditEvent, Configuration, Namespace, Principal
from occ.selectors.namespaces import namespace_list

PAGE_SIZE = 50


@dataclass(frozen=True)
class AuditQuery:
    """What to look for; every part is optional. ``actor`` is a principal id or part of a name
    or username; ``resource`` a resource id or kind; ``action`` part of an action name."""

    actor: str = ""
    resource: str = ""
    action: str = ""
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class AuditRow:
    event: AuditEvent
    actor_name: str | None  # the principal's name, when it still exists
    agent_id: str | None  # the Agent a revision event belongs to
    # The resource's page would be a 404: the Agent, revision, Configuration, service principal
    # (a key's owner) or the Namespace it lived in no longer exists.
    resource_deleted: bool = False


@dataclass(frozen=True)
class AuditPage:
    rows: list[AuditRow]
    older: str | None  # cursor for the next page back in time
    newer: str | None  # cursor for the page before this one (None on the newest page)


def encode_cursor(event: AuditEvent) -> str:
    raw = f"{event.occurred_at.isoformat()}|{event.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str] | None:
    """The keys a cursor names, or None for anything that is not one of ours (a stale or
    edited link starts again at the newest page rather than failing)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    at, _, event_id = raw.partition("|")
    moment = parse_datetime(at) if at else None
    if moment is None or not event_id:
        return None
    return moment, event_id


def readable_events(*, actor: Actor) -> QuerySet[AuditEvent]:
    """Every event ``actor`` may read (see the module docstring)."""
    events = AuditEvent.objects.all()
    if allowed(actor, Action.READ, Kind.INSTALLATION):
        return events
    return events.filter(namespace_id__in=[ns.id for ns in namespace_list(actor=actor)])


def _actor_ids(text: str) -> Q:
    matching = Principal.objects.filter(Q(id=text) | Q(name__icontains=text) | Q(user__username__icontains=text))
    return Q(actor_id__in=matching.values("id")) | Q(actor_id=text)


def _filtered(events: QuerySet[AuditEvent], query: AuditQuery) -> QuerySet[AuditEvent]:
    if query.actor:
        events = events.filter(_actor_ids(query.actor))
    if query.resource:
        events = events.filter(Q(resource_id=query.resource) | Q(resource_kind=query.resource)
                               | Q(namespace_id=query.resource))
    if query.action:
        events = events.filter(action__icontains=query.action)
    if query.since is not None:
        events = events.filter(occurred_at__gte=query.since)
    if query.until is not None:
        events = events.filter(occurred_at__lt=query.until)
    return events


def _key_owner(event: AuditEvent) -> str | None:
    owner = event.details.get("servicePrincipalId") if isinstance(event.details, dict) else None
    return owner if isinstance(owner, str) else None


def _existing(model: type[Agent | Configuration | Namespace | Principal], ids: set[str]) -> set[str]:
    return set(model.objects.filter(id__in=ids).values_list("id", flat=True)) if ids else set()


def _deleted(events: list[AuditEvent], agents: dict[str, str]) -> set[str]:
    """The ids of the events whose resource page is gone, in one query per kind of page."""
    def wanted(kind: str) -> set[str]:
        return {e.resource_id for e in events if e.resource_kind == kind and e.resource_id}

    revisions = wanted(Kind.AGENT_REVISION)
    agent_ids = wanted(Kind.AGENT) | set(agents.values())
    principal_ids = wanted("service_principal") | {o for e in events if e.resource_kind == "service_key"
                                                   if (o := _key_owner(e))}
    alive = {
        "agent": _existing(Agent, agent_ids), "configuration": _existing(Configuration, wanted(Kind.CONFIGURATION)),
        "principal": _existing(Principal, principal_ids),
        "namespace": _existing(Namespace, {e.namespace_id for e in events if e.namespace_id}),
    }

    def gone(e: AuditEvent) -> bool:
        if e.namespace_id and e.namespace_id not in alive["namespace"]:
            return True
        rid, kind = e.resource_id or "", e.resource_kind
        if kind == Kind.AGENT_REVISION and rid in revisions:
            return agents.get(rid) not in alive["agent"]
        targets = {Kind.AGENT: ("agent", rid), Kind.CONFIGURATION: ("configuration", rid),
                   "service_principal": ("principal", rid), "service_key": ("principal", _key_owner(e))}
        if kind in targets and targets[kind][1]:
            group, target = targets[kind]
            return target not in alive[group]
        return False

    return {e.id for e in events if gone(e)}


def _rows(events: list[AuditEvent]) -> list[AuditRow]:
    """The events with their actors' names, revisions' Agents and whether their resource's page
    still exists: a bounded number of queries for the page (one per kind), never one per row."""
    names = dict(Principal.objects.filter(id__in={e.actor_id for e in events if e.actor_id})
                 .values_list("id", "name"))
    revision_ids = {e.resource_id for e in events if e.resource_kind == Kind.AGENT_REVISION and e.resource_id}
    agents = dict(AgentRevision.objects.filter(id__in=revision_ids).values_list("id", "agent_id")) \
        if revision_ids else {}
    deleted = _deleted(events, agents)
    return [AuditRow(event=e, actor_name=names.get(e.actor_id or ""), agent_id=agents.get(e.resource_id or ""),
                     resource_deleted=e.id in deleted) for e in events]


def audit_event_page(*, actor: Actor, query: AuditQuery, older_than: str = "", newer_than: str = "",
                     page_size: int = PAGE_SIZE) -> AuditPage:
    """One page of the events ``actor`` may read that match ``query``, newest first: the
    newest page, the page older than cursor ``older_than``, or the one newer than ``newer_than``."""
    events = _filtered(readable_events(actor=actor), query)
    older_keys = decode_cursor(older_than) if older_than else None
    newer_keys = decode_cursor(newer_than) if newer_than and older_keys is None else None
    window: list[AuditEvent]
    if newer_keys is not None:
        at, event_id = newer_keys
        after = Q(occurred_at__gt=at) | Q(occurred_at=at, id__gt=event_id)
        window = list(events.filter(after).order_by("occurred_at", "id")[:page_size + 1])
        more_newer = len(window) > page_size
        window = window[:page_size][::-1]
        more_older = True  # the edge we came from is older than this page
    else:
        if older_keys is not None:
            at, event_id = older_keys
            events = events.filter(Q(occurred_at__lt=at) | Q(occurred_at=at, id__lt=event_id))
        window = list(events.order_by("-occurred_at", "-id")[:page_size + 1])
        more_older = len(window) > page_size
        window = window[:page_size]
        more_newer = older_keys is not None
    return AuditPage(
        rows=_rows(window),
        older=encode_cursor(window[-1]) if window and more_older else None,
        newer=encode_cursor(window[0]) if window and more_newer else None,
    )

