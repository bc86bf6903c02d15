"""Reading the audit log (the console's Audit log page; operators also keep the Django admin).

Who reads what: a viewer holding ``read:installation`` (the administrators) reads every event;
anyone else reads the events of the live Namespaces they may ``read`` as a whole (a Role bound on
the Namespace or Installation-wide: seeing a Namespace because one Agent in it was shared is not
enough, ``occ.iam.policy.reads_whole_namespace``), and no Installation-level event (accounts,
Installation keys, bootstrap, denials outside a Namespace). The filter is one ``WHERE`` on the
query, so a page is never short of rows the viewer may read.

Paging is keyset on ``(occurred_at, id)``, newest first: the log only grows at the top while
people read it, so an offset would shift every page by the events written since (a row seen
twice or never), and an offset's cost grows with the depth of the page; a keyset page costs the
same anywhere on the ``occurred_at`` index and stays put. The cursor is the edge row's keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, reads_whole_namespace
from occ.models import Agent, AgentRevision, AuditEvent, Configuration, Namespace, Principal, Role, Secret
from occ.selectors.paging import decode_cursor, encode_keys

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
    # What people call the resource: its name now (a revision: "<agent> v<n>"), else the name
    # its event recorded (a deleted Secret or Configuration); None when neither is known.
    resource_name: str | None = None


@dataclass(frozen=True)
class AuditPage:
    rows: list[AuditRow]
    older: str | None  # cursor for the next page back in time
    newer: str | None  # cursor for the page before this one (None on the newest page)


def encode_cursor(event: AuditEvent) -> str:
    return encode_keys(event.occurred_at, event.id)


def readable_events(*, actor: Actor) -> QuerySet[AuditEvent]:
    """Every event ``actor`` may read (see the module docstring)."""
    events = AuditEvent.objects.all()
    if allowed(actor, Action.READ, Kind.INSTALLATION):
        return events
    live = Namespace.objects.live().values_list("id", flat=True)
    return events.filter(namespace_id__in=[ns_id for ns_id in live if reads_whole_namespace(actor, ns_id)])


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
    resources = _resource_names(events)
    return [AuditRow(event=e, actor_name=names.get(e.actor_id or ""), agent_id=agents.get(e.resource_id or ""),
                     resource_deleted=e.id in deleted, resource_name=_resource_name(e, resources))
            for e in events]


# The tables whose rows a resource id of each kind names (by their ``name`` column).
_NAMED: dict[str, type[Namespace | Configuration | Secret | Agent | Principal | Role]] = {
    Kind.NAMESPACE: Namespace, Kind.CONFIGURATION: Configuration, Kind.SECRET: Secret, Kind.AGENT: Agent,
    Kind.SERVICE_ACCOUNT: Principal, "service_principal": Principal, "account": Principal, "role": Role}


def _resource_names(events: list[AuditEvent]) -> dict[str, str]:
    """Resource id -> name for the page's events: one query per kind present."""
    wanted: dict[str, set[str]] = {}
    for event in events:
        if event.resource_kind and event.resource_id:
            wanted.setdefault(event.resource_kind, set()).add(event.resource_id)
    found: dict[str, str] = {}
    for kind, ids in wanted.items():
        model = _NAMED.get(kind)
        if model is not None:
            found.update(model.objects.filter(id__in=ids).values_list("id", "name"))
    revisions = wanted.get(Kind.AGENT_REVISION)
    if revisions:
        found.update((revision_id, f"{agent_name} v{number}") for revision_id, agent_name, number in
                     AgentRevision.objects.filter(id__in=revisions).values_list("id", "agent__name", "number"))
    return found


def _resource_name(event: AuditEvent, names: dict[str, str]) -> str | None:
    if event.resource_id and event.resource_id in names:
        return names[event.resource_id]
    recorded = event.details.get("name") if isinstance(event.details, dict) else None
    return recorded if isinstance(recorded, str) else None


def audit_event_page(*, actor: Actor, query: AuditQuery, older_than: str = "", newer_than: str = "",
                     page_size: int = PAGE_SIZE) -> AuditPage:
    """One page of the events ``actor`` may read that match ``query``, newest first: the
    newest page, the page older than cursor ``older_than``, or the one newer than ``newer_than``
    (a cursor that is not ours, a stale or edited link, starts again at the newest page)."""
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



def audit_event_export(*, actor: Actor, query: AuditQuery, page_size: int = 500) -> Iterator[AuditRow]:
    """Every event ``actor`` may read that matches ``query``, newest first, page by keyset page
    (a bounded number of queries per page; the API streams them as NDJSON or CSV)."""
    cursor = ""
    while True:
        page = audit_event_page(actor=actor, query=query, older_than=cursor, page_size=page_size)
        yield from page.rows
        if page.older is None:
            return
        cursor = page.older
