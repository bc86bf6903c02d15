"""The Agents list (``GET /namespaces/{ns}/agents``): each item is the Agent's public view
(``agent_wire``) and its health as the console's Agents list shows it (``agent_health``: runtime
state, model, last deploy), oldest first, filtered per item like ``allowed``, in a fixed number
of queries per page (the keyset pages themselves: test_agent_pages)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from occ.api.routers.agents import agent_wire
from occ.models import Agent, Restriction
from occ.selectors.agent_list import agent_health
from occ.selectors.agents import agent_page, agent_summaries
from tests.agents_support import caller, make_revision
from tests.factories import AgentFactory, NamespaceFactory, SecretFactory, actor, grant, service_principal

pytestmark = pytest.mark.django_db

# The key and its principal, the policy (bindings, restrictions), the Namespace, the Agents
# with their service principals; their Configurations' names; the health columns (active and
# newest revisions, their work rows, the stop and revision work of the runtime state).
LIST_QUERIES = 11
HEALTH = ("runtime", "model", "lastDeploy")


def _public(item: dict) -> dict:
    return {key: value for key, value in item.items() if key not in HEALTH}


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


def test_each_item_is_exactly_the_wire_object_in_list_order():
    namespace = NamespaceFactory()
    agents = _varied_agents(namespace)
    AgentFactory(namespace=NamespaceFactory(), name="elsewhere")  # another Namespace: not listed
    _reader, client = caller("read:namespace", "read:agent", namespace=namespace)

    with CaptureQueriesContext(connection) as captured:
        page = client.get(f"/namespaces/{namespace.id}/agents").data

    assert page["nextCursor"] is None
    items = page["agents"]
    assert [_public(item) for item in items] == [agent_wire(agent) for agent in agents]
    assert all(set(HEALTH) <= set(item) for item in items)
    assert "activeRevisionId" not in items[0]
    assert items[0]["createdAt"] == "2026-01-01T00:00:00.000Z"
    assert items[0]["updatedAt"] == "2026-01-01T00:00:00.999Z"
    assert items[1]["createdAt"] == "2026-01-01T00:00:01.999Z"
    assert items[1]["name"] == 'ünïcode "quoted" \\ name\n✓'
    assert items[1]["harnessAuth"] == {"method": "api_key", "source": {
        "kind": "secret", "namespaceId": namespace.id, "id": agents[1].harness_secret_id}}
    assert items[2]["activeRevisionId"] == agents[2].active_revision_id
    assert len(captured) <= LIST_QUERIES


def test_the_list_is_the_same_queries_for_one_agent_or_forty(django_assert_max_num_queries):
    namespace = NamespaceFactory()
    _reader, client = caller("read:namespace", "read:agent", namespace=namespace)
    AgentFactory(namespace=namespace)
    with django_assert_max_num_queries(LIST_QUERIES):
        assert len(client.get(f"/namespaces/{namespace.id}/agents").data["agents"]) == 1
    for _ in range(39):
        AgentFactory(namespace=namespace)
    with django_assert_max_num_queries(LIST_QUERIES):
        assert len(client.get(f"/namespaces/{namespace.id}/agents").data["agents"]) == 40


def test_exact_grants_and_restrictions_filter_items_like_allowed():
    namespace = NamespaceFactory()
    first, second, third = (AgentFactory(namespace=namespace, name=f"agent-{n}") for n in range(3))
    exact = service_principal("exact")
    grant(exact, "read:namespace", namespace=namespace)
    grant(exact, "read:agent", namespace=namespace, resource_kind="agent", resource_id=second.id)
    assert [agent.id for agent in agent_page(actor=actor(exact), namespace_id=namespace.id).rows] == [second.id]

    wide = service_principal("wide")
    grant(wide, "read:namespace", "read:agent", namespace=namespace)
    Restriction.objects.create(principal=wide, action="read", resource_kind="agent", namespace=namespace,
                               resource_id=third.id)
    listed = [agent.id for agent in agent_page(actor=actor(wide), namespace_id=namespace.id).rows]
    assert listed == [first.id, second.id]
    assert [agent.id for agent in agent_summaries(actor=actor(wide), namespace_id=namespace.id)] == listed


def test_each_item_carries_the_health_the_console_list_shows():
    """One source: the API's health columns are the console list's (``agent_health`` over its
    summaries), and the Configuration's name rides beside its id."""
    namespace = NamespaceFactory()
    draft = AgentFactory(namespace=namespace, name="draft")
    deployed = AgentFactory(namespace=namespace, name="deployed")
    first = make_revision(deployed, 1)
    newest = make_revision(deployed, 2, configuration={"agents": {"defaults": {"model": "anthropic/claude-x"}}})
    Agent.objects.filter(id=deployed.id).update(active_revision=first, desired_runtime_state="running")
    reader, client = caller("read:namespace", "read:agent", "read:agent_revision", namespace=namespace)

    items = {item["name"]: item for item in client.get(f"/namespaces/{namespace.id}/agents").data["agents"]}

    assert items["draft"]["runtime"]["state"] == "none"
    assert (items["draft"]["model"], items["draft"]["lastDeploy"]) == (None, None)
    assert items["deployed"]["model"] == "openai/gpt-5"  # the revision it runs, not the newest
    assert items["deployed"]["lastDeploy"]["revisionId"] == newest.id
    assert items["deployed"]["lastDeploy"]["revision"] == 2
    assert items["deployed"]["configurationName"] == deployed.configuration.name
    assert items["draft"]["configurationName"] == draft.configuration.name
    console = {row.agent.name: row for row in agent_health(actor(reader), namespace.id,
                                                           agent_summaries(actor=actor(reader),
                                                                           namespace_id=namespace.id))}
    for name, item in items.items():
        assert item["runtime"]["state"] == console[name].runtime.state
        assert item["model"] == console[name].model

    # Without read on revisions: no model and no last deploy, the Agent still listed.
    _blind, blind_client = caller("read:namespace", "read:agent", namespace=namespace)
    blind = {item["name"]: item for item in blind_client.get(f"/namespaces/{namespace.id}/agents").data["agents"]}
    assert (blind["deployed"]["model"], blind["deployed"]["lastDeploy"]) == (None, None)
    assert blind["deployed"]["runtime"]["state"] == items["deployed"]["runtime"]["state"]

