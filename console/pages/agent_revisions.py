"""The Agent page's Revisions tab: the Agent's revisions, newest first in keyset pages, and for the
one selected its difference from the revision before (``occ.selectors.revisions.revision_diff``,
the same selector as ``GET …/revisions/{id}/diff``) and its read-only snapshot.

Pure presentation: what is compared, and who may see it, is the selector's. A revision's
snapshot holds Secret ids, never a value, so nothing here can show one; a value that is the id
of a Secret the person may read is shown by that Secret's name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Protocol

from django.urls import reverse

from console.common import ConsoleRequest
from console.pages.agent_outcome import audit_refusal
from console.pages.lists import keyset_page
from console.pages.refusals import agent_refusal
from occ.documents import PluginSnapshot
from occ.errors import Forbidden, NotFound
from occ.iam.actor import Actor
from occ.models import Agent, AgentRevision, AgentStatus
from occ.selectors.configurations import configuration_name
from occ.selectors.deployments import deployment_statuses
from occ.selectors.revisions import (
    SECTION_ORDER,
    Change,
    RevisionDiff,
    agent_revision_page,
    revision_deployers,
    revision_diff,
)

PAGE_SIZE = 20
VALUE_LIMIT = 240  # characters of one value's JSON shown inline; the snapshot has the rest

SECTION_LABELS = {
    "configuration": "Configuration", "channels": "Channels", "secretBindings": "Secret bindings",
    "credentials": "Credentials", "plugins": "Plugins", "runtime": "Runtime",
}
assert set(SECTION_LABELS) == set(SECTION_ORDER), "every diff section has a label"


class RevisionsScreen(Protocol):
    """What the tab reads of one request's reads of an Agent (``agent_screen.Screen``)."""

    agent: Agent
    actor: Actor

    @property
    def active(self) -> AgentRevision | None: ...

    def revisions_by_id(self, revision_ids: Iterable[str | None]) -> dict[str, AgentRevision]: ...

    @property
    def secret_names(self) -> dict[str, str]: ...

    @property
    def request(self) -> ConsoleRequest: ...

    @property
    def ids(self) -> dict[str, str]: ...

    @property
    def urls(self) -> dict[str, str]: ...

    @property
    def may(self) -> dict[str, bool]: ...

    @property
    def outcome_unknown(self) -> bool: ...

    @property
    def provisioning_owned(self) -> bool: ...

    def deploy_refusal(self, configuration_id: str, secret_ids: list[str]) -> str: ...

    def tab_url(self, tab: str, **params: str) -> str: ...


def secret_label(screen: RevisionsScreen, secret_id: str) -> dict[str, Any]:
    """A Secret id, with its name where the person may read the Secret."""
    return {"id": secret_id, "name": screen.secret_names.get(secret_id)}


def redeploy_url(agent: Agent, revision_id: str) -> str:
    return reverse("console:agent-revision-redeploy", args=[agent.namespace_id, agent.id, revision_id])


def revision_rows(screen: RevisionsScreen) -> dict[str, Any]:
    """The page of readable revisions the link names (``?after=``), newest first: status, who
    deployed, which is active, and the version each was redeployed from. Four queries whatever the
    page size (the page, statuses, names and source versions each in one)."""

    def read(after: str) -> tuple[list[AgentRevision], str | None]:
        return agent_revision_page(actor=screen.actor, agent=screen.agent, after=after, page_size=PAGE_SIZE,
                                   newest_first=True)

    page = keyset_page(screen.request, read, base=screen.urls["page"], keep={"tab": "revisions"})
    shown: list[AgentRevision] = page.rows
    statuses = deployment_statuses(shown)
    names = revision_deployers(shown)
    on_page = {r.id: r for r in shown}
    sources = [r.spec.source_revision_id for r in shown]
    numbers = {r.id: r.number for r in (*on_page.values(), *screen.revisions_by_id(
        source for source in sources if source not in on_page).values())}
    rows = []
    for revision in shown:
        status = statuses.get(revision.id)
        source = revision.spec.source_revision_id
        rows.append({"revision": revision, "status": status.status if status else None,
                     "active": revision.id == screen.agent.active_revision_id,
                     "other_configuration": revision.configuration_id != screen.agent.configuration_id,
                     "deployed_by": names.get(revision.created_by),
                     "source_number": numbers.get(source) if source is not None else None,
                     "url": screen.tab_url("revisions", revision=revision.id)})
    return {"rows": rows, "page": page}


def next_deploy_notice(screen: RevisionsScreen, configuration_id: str, generation: int) -> dict[str, Any] | None:
    """What the Configuration tab says when the serving revision did not run what the next
    deploy will (a redeploy of an older revision, or a Configuration edited or switched since):
    which generation the serving revision ran, and which the next "Deploy new version" uses."""
    active = screen.active
    if active is None or (active.configuration_id, active.configuration_generation) == (configuration_id, generation):
        return None
    source = screen.revisions_by_id([active.spec.source_revision_id]).get(active.spec.source_revision_id or "")
    return {"active_number": active.number, "active_generation": active.configuration_generation,
            "same_configuration": active.configuration_id == configuration_id,
            "source_number": source.number if source else None, "next_generation": generation}


def _value(screen: RevisionsScreen, value: Any) -> dict[str, Any]:
    """One side of a change: its JSON (cut at ``VALUE_LIMIT``), or a readable Secret by name."""
    if isinstance(value, str) and value in screen.secret_names:
        return {"secret": {"id": value, "name": screen.secret_names[value]}}
    text = json.dumps(value, ensure_ascii=False, sort_keys=False)
    cut = len(text) > VALUE_LIMIT
    return {"text": text[:VALUE_LIMIT] + ("…" if cut else ""), "cut": cut}


def _change(screen: RevisionsScreen, change: Change) -> dict[str, Any]:
    row: dict[str, Any] = {"op": change.op, "path": change.path}
    if change.op != "added":
        row["before"] = _value(screen, change.before)
    if change.op != "removed":
        row["after"] = _value(screen, change.after)
    return row


def diff_context(screen: RevisionsScreen, diff: RevisionDiff) -> dict[str, Any]:
    """The changes grouped by section, in the selector's order, each keyed by its JSON pointer."""
    sections = []
    for name in SECTION_ORDER:
        changes = diff.section(name)
        if changes:
            sections.append({"id": name, "label": SECTION_LABELS[name],
                             "changes": [_change(screen, change) for change in changes]})
    previous = diff.previous
    return {"previous": previous, "sections": sections, "count": len(diff.changes),
            "previous_url": screen.tab_url("revisions", revision=previous.id) if previous else None}


def _snapshot_context(screen: RevisionsScreen, revision_id: str) -> dict[str, Any]:
    """The selected revision: its difference from the one before (the API's diff selector), its
    read-only snapshot, and whether the person may redeploy it."""
    try:
        diff = revision_diff(actor=screen.actor, revision_id=revision_id, **screen.ids)
    except Forbidden as exc:
        audit_refusal(screen.request, exc)
        return {"error": exc.message}
    except NotFound:
        return {"error": "This version does not exist."}
    revision = diff.revision
    spec = revision.spec
    agent = screen.agent
    redeploy_refused = screen.deploy_refusal(revision.configuration_id, list(spec.delivered_secret_ids))
    return {
        "revision": revision,
        "configuration_name": configuration_name(namespace_id=agent.namespace_id,
                                                 configuration_id=revision.configuration_id),
        "diff": diff_context(screen, diff),
        "configuration_json": json.dumps(spec.configuration, indent=2, ensure_ascii=False),
        "harness_auth": secret_label(screen, spec.harness_secret_id) if spec.harness_secret_id else None,
        "bindings": [{"env": env, **secret_label(screen, secret_id)} for env,
                     secret_id in spec.bound_secret_ids.items()],
        "plugins_json": json.dumps((spec.plugins or PluginSnapshot(plugins={})).document(), indent=2,
                                   ensure_ascii=False),
        "harness": spec.harness,
        "compute": spec.compute,
        "active": revision.id == agent.active_revision_id,
        "may_redeploy": screen.may["deploy"] and not redeploy_refused,
        "why_not_redeploy": agent_refusal(screen.may, ("deploy",)) or redeploy_refused,
        "redeploy_disabled": (screen.outcome_unknown or agent.status == AgentStatus.DELETING
                              or screen.provisioning_owned),
        "redeploy_url": redeploy_url(agent, revision.id),
    }


def revisions_context(screen: RevisionsScreen) -> dict[str, Any]:
    rows = revision_rows(screen)
    wanted = screen.request.GET.get("revision")
    return {**rows, "snapshot": _snapshot_context(screen, wanted) if wanted else None,
            "hidden": not rows["rows"] and screen.agent.active_revision_id is not None}
