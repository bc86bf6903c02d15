"""The agents list's JSON is built by the database: prove it is exactly ``agent_wire``."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from occ.api.agent_list import agent_list_json
from occ.api.routers.agents import agent_wire
from occ.models import Agent, Restriction
from occ.selectors.agents import agent_list, agent_list_scope, agent_summaries
from tests.agents_support import make_revision
from tests.factories import AgentFactory, NamespaceFactory, SecretFactory, actor, grant, service_principal

pytestmark = pytest.mark.django_db


def _varied_agents(namespace) -> list[Agent]:
    secret = SecretFactory(namespace=namespace)
    plain = AgentFactory(namespace=namespace, name="plain")
    rich = AgentFactory(
        namespace=namespace, name='ünïcode "quoted" \\ name\n✓', harness_auth_method="api_key",
        harness_secret=secret, backend_id="backend-1",
        plugins={"memory": {"enabled": True, "config": {"depth": 2, "list": [1, "two", None]}}},
        plugin_approvers=[{"channel": "slack", "id": "U123"}], repository_bindings=[],
    )
    active = AgentFactory(namespace=namespace, name="active")
    revision = make_revision(active, 1)
    Agent.objects.filter(id=active.id).update(active_revision=revision)
    # Timestamp edges: no fraction at all, and a fraction that must truncate, not round.
    Agent.objects.filter(id=plain.id).update(created_at=datetime(2026, 1, 1, tzinfo=UTC),
                                             updated_at=datetime(2026, 1, 1, 0, 0, 0, 999999, tzinfo=UTC))
    Agent.objects.filter(id=rich.id).update(created_at=datetime(2026, 1, 1, 0, 0, 1, 999500, tzinfo=UTC))
    return [Agent.objects.get(id=agent.id) for agent in (plain, rich, active)]


def test_each_text_is_exactly_the_wire_object_in_list_order():
    namespace = NamespaceFactory()
    agents = _varied_agents(namespace)
    AgentFactory(namespace=NamespaceFactory(), name="elsewhere")  # another Namespace: not listed
    reader = service_principal("reader")
    grant(reader, "read:namespace", "read:agent", namespace=namespace)

    texts = agent_list_json(agent_list_scope(actor=actor(reader), namespace_id=namespace.id))

    assert [json.loads(text) for text in texts] == [agent_wire(agent) for agent in agents]
    assert "activeRevisionId" not in json.loads(texts[0])
    assert json.loads(texts[0])["createdAt"] == "2026-01-01T00:00:00.000Z"
    assert json.loads(texts[0])["updatedAt"] == "2026-01-01T00:00:00.999Z"
    assert json.loads(texts[2])["activeRevisionId"] == agents[2].active_revision_id
    assert json.loads(texts[1])["harnessAuth"]["source"]["id"] == agents[1].harness_secret_id


def test_exact_grants_and_restrictions_filter_items_like_allowed():
    namespace = NamespaceFactory()
    first, second, third = (AgentFactory(namespace=namespace, name=f"agent-{n}") for n in range(3))
    exact = service_principal("exact")
    grant(exact, "read:namespace", namespace=namespace)
    grant(exact, "read:agent", namespace=namespace, resource_kind="agent", resource_id=second.id)
    scope = agent_list_scope(actor=actor(exact), namespace_id=namespace.id)
    assert [json.loads(t)["id"] for t in agent_list_json(scope)] == [second.id]

    wide = service_principal("wide")
    grant(wide, "read:namespace", "read:agent", namespace=namespace)
    Restriction.objects.create(principal=wide, action="read", resource_kind="agent", namespace=namespace,
                               resource_id=third.id)
    scope = agent_list_scope(actor=actor(wide), namespace_id=namespace.id)
    listed = [json.loads(t)["id"] for t in agent_list_json(scope)]
    assert listed == [first.id, second.id]
    assert [row["id"] for row in agent_list(actor=actor(wide), namespace_id=namespace.id)] == listed
    assert [agent.id for agent in agent_summaries(actor=actor(wide), namespace_id=namespace.id)] == listed
