"""Agent reads: the list's scope, the summaries a list shows, and per-Agent read filtering."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from occ.errors import Forbidden
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in
from occ.models import Agent, Restriction
from occ.selectors.agents import AgentSummary, agent_summaries
from tests.agents_support import make_revision
from tests.factories import AgentFactory, NamespaceFactory, actor, grant, service_principal

pytestmark = pytest.mark.django_db


def test_summaries_are_the_readable_agents_oldest_first_with_what_a_list_shows():
    namespace = NamespaceFactory()
    later = AgentFactory(namespace=namespace, name="later", execution_mode="dedicated")
    first = AgentFactory(namespace=namespace, name="first")
    Agent.objects.filter(id=first.id).update(created_at=datetime(2026, 1, 1, tzinfo=UTC))
    revision = make_revision(later, 1)
    Agent.objects.filter(id=later.id).update(active_revision=revision, desired_runtime_state="running")
    hidden = AgentFactory(namespace=namespace, name="hidden")
    AgentFactory(namespace=NamespaceFactory(), name="elsewhere")
    reader = service_principal("reader")
    grant(reader, "read:namespace", "read:agent", namespace=namespace)
    Restriction.objects.create(principal=reader, action="read", resource_kind="agent", namespace=namespace,
                               resource_id=hidden.id)

    summaries = agent_summaries(actor=actor(reader), namespace_id=namespace.id)

    later.refresh_from_db()
    assert summaries == [
        AgentSummary(id=first.id, name="first", execution_mode="embedded",
                     desired_runtime_state=first.desired_runtime_state, active_revision_id=None,
                     created_at=datetime(2026, 1, 1, tzinfo=UTC)),
        AgentSummary(id=later.id, name="later", execution_mode="dedicated", desired_runtime_state="running",
                     active_revision_id=revision.id, created_at=later.created_at),
    ]


def test_summaries_need_the_namespace_read():
    namespace = NamespaceFactory()
    AgentFactory(namespace=namespace)
    stranger = service_principal("stranger")
    grant(stranger, "read:agent", namespace=namespace)
    with pytest.raises(Forbidden):
        agent_summaries(actor=actor(stranger), namespace_id=namespace.id)


def test_allowed_in_decides_once_only_when_no_restriction_could_deny():
    namespace = NamespaceFactory()
    wide = service_principal("wide")
    grant(wide, "read:agent", namespace=namespace)
    assert wide_policy_allows_every(wide, namespace)
    Restriction.objects.create(principal=None, action="read", resource_kind="agent", namespace=namespace,
                               resource_id="agt_other")
    assert not wide_policy_allows_every(wide, namespace)
    readable = allowed_in(actor(wide), Action.READ, Kind.AGENT, namespace_id=namespace.id)
    assert readable("agt_mine")
    assert not readable("agt_other")
    # Outside a Namespace-scoped key's Namespace nothing is readable.
    other = NamespaceFactory()
    scoped = allowed_in(actor(wide, key_namespace_id=other.id), Action.READ, Kind.AGENT, namespace_id=namespace.id)
    assert not scoped("agt_mine")


def wide_policy_allows_every(principal, namespace) -> bool:
    return actor(principal).policy.allows_every(Action.READ, Kind.AGENT, namespace_id=namespace.id)
