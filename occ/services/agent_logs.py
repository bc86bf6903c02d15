"""Reading an Agent's gateway log (the console's Logs tab), filtered of secrets by construction.

The compute driver reads the log and redacts every value the gateway was given: this service
hands it references to every Secret any of the Agent's revisions delivers and to the Agent's
runtime credentials (``ComputeDriver.read_logs``); it never sees a value, and what it returns
is only what the driver returned.

Needs ``agent:read`` and ``agent:read_logs``, or ``agent:administer`` unless a ``read_logs``
Restriction bars it (spec §3). Each view of the log is audited as an ``access`` event
(``openclaw.agents.runtime_logs.view``) before anything is read; a view that cannot be audited
reads nothing. Follow mode continues a view with a signed token (the driver's cursor, bound to
the caller, the Agent and the view's audit id, for ``FOLLOW_MAX_AGE_SECONDS``): a token that
expired, or was not ours, starts a new, audited view.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.core import signing
from django.db import transaction
from django.db.models import Q

from occ.drivers.compute import ComputeError, SecretReference, get_compute_driver
from occ.drivers.compute.base import LogPage
from occ.errors import DependencyUnavailable, NotImplementedYet
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.ids import IdPrefix, new_id
from occ.models import Agent, AgentRevision, AuditKind, Secret
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.permissions import may_read_logs
from occ.selectors.runtime import agent_ref
from occ.services.audit import audit_record

logger = logging.getLogger(__name__)

LOGS_VIEWED = "openclaw.agents.runtime_logs.view"
LOGS_UNSUPPORTED = "LOGS_UNSUPPORTED"
FOLLOW_SALT = "occ.agent-logs.follow"
FOLLOW_MAX_AGE_SECONDS = 3600
# Lines a view shows at first and a follow step adds at most.
VIEW_LINES = 300
FOLLOW_LINES = 200


@dataclass(frozen=True)
class LogView:
    lines: tuple[str, ...]
    follow: str  # the token that continues this view
    view_id: str
    started: bool  # this call began (and audited) a view
    skipped: bool = False
    reset: bool = False
    withheld: int = 0


def delivered_secrets(agent: Agent) -> list[SecretReference]:
    """Every Secret the Agent's gateway may have been given: what any of its revisions delivers
    (those that still exist) and its own runtime credentials."""
    wanted: set[str] = set()
    for revision in AgentRevision.objects.filter(agent=agent).only("snapshot"):
        wanted.update(revision.spec.delivered_secret_ids)
    rows = Secret.objects.filter(Q(namespace_id=agent.namespace_id, id__in=wanted) | Q(owner_agent=agent))
    return [SecretReference(secret_id=s.id, driver_id=s.driver_id, backend_name=s.backend_name)
            for s in rows.order_by("id")]


def _continued(token: str | None, actor: Actor, agent: Agent) -> tuple[str, str] | None:
    """(view id, driver cursor) of a follow token this caller got for this Agent, still fresh."""
    if not token:
        return None
    try:
        data = signing.loads(token, salt=FOLLOW_SALT, max_age=FOLLOW_MAX_AGE_SECONDS)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or (data.get("p"), data.get("a")) != (actor.id, agent.id):
        return None
    view, cursor = data.get("v"), data.get("c")
    return (view, cursor) if isinstance(view, str) and isinstance(cursor, str) else None


def agent_logs_read(*, actor: Actor, namespace_id: str, agent_id: str, follow: str | None = None) -> LogView:
    """The gateway's recent lines (a new view, audited first), or with ``follow`` those written
    since the token's view last read. 503 when the log cannot be read or the view audited."""
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    authorize(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    if not may_read_logs(actor, agent):
        authorize(actor, Action.READ_LOGS, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    continued = _continued(follow, actor, agent)
    if continued is None:
        view_id, cursor = new_id(IdPrefix.REQUEST), None
        with transaction.atomic():
            audit_record(actor=actor, kind=AuditKind.ACCESS, action=LOGS_VIEWED, namespace_id=agent.namespace_id,
                         resource_kind=Kind.AGENT, resource_id=agent.id,
                         details={"viewId": view_id, "activeRevisionId": agent.active_revision_id})
    else:
        view_id, cursor = continued
    page = _read(agent, cursor, max_lines=FOLLOW_LINES if continued else VIEW_LINES)
    token = signing.dumps({"p": actor.id, "a": agent.id, "v": view_id, "c": page.cursor}, salt=FOLLOW_SALT)
    return LogView(lines=page.lines, follow=token, view_id=view_id, started=continued is None,
                   skipped=page.skipped, reset=page.reset, withheld=page.withheld)


def _read(agent: Agent, cursor: str | None, *, max_lines: int) -> LogPage:
    try:
        return get_compute_driver().read_logs(agent_ref(agent), secrets=delivered_secrets(agent), cursor=cursor,
                                              max_lines=max_lines)
    except ComputeError as exc:
        if exc.code == LOGS_UNSUPPORTED:
            raise NotImplementedYet("This compute backend does not provide its gateways' logs.") from exc
        logger.warning("reading the log of %s failed (%s)", agent.id, exc.code)
        raise DependencyUnavailable("The Agent's log could not be read right now. Try again shortly.") from exc
    except Exception as exc:  # driver trouble of any kind: no lines, and no driver text
        logger.warning("reading the log of %s failed", agent.id, exc_info=True)
        raise DependencyUnavailable("The Agent's log could not be read right now. Try again shortly.") from exc
