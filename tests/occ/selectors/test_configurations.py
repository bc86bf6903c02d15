"""Configuration reads for the console: the list (per-item authorization, Agents by name),
the details (Secrets by name) and who may have a draft checked."""

from __future__ import annotations

import pytest

from occ.errors import Forbidden, NotFound
from occ.iam.actor import Actor, Source
from occ.models import Principal, SecretBinding
from occ.selectors.configurations import (
    configuration_check_authorize,
    configuration_detail,
    configuration_list,
)
from tests.factories import AgentFactory, ConfigurationFactory, SecretFactory, actor, grant, human


@pytest.fixture
def console_actor(bootstrap) -> Actor:
    return Actor(principal=Principal.objects.get(user__username="admin"), source=Source.CONSOLE)


@pytest.fixture
def layout(ready_namespace):
    """Two Configurations, one used by two Agents, one by none."""
    used = ConfigurationFactory(namespace=ready_namespace,
                                values={"agents": {"defaults": {"model": {"primary": "openai/gpt-5"}}}})
    unused = ConfigurationFactory(namespace=ready_namespace, values={})
    first = AgentFactory(namespace=ready_namespace, name="Billing bot", configuration=used)
    second = AgentFactory(namespace=ready_namespace, name="Alpha helper", configuration=used)
    return used, unused, first, second


def test_the_list_has_every_configuration_with_its_agents_by_name(console_actor, ready_namespace, layout):
    used, unused, *_ = layout
    rows = {row.id: row for row in configuration_list(actor=console_actor, namespace_id=ready_namespace.id)}
    assert set(rows) == {used.id, unused.id}
    assert [a.name for a in rows[used.id].agents] == ["Alpha helper", "Billing bot"]
    assert rows[used.id].model == "openai/gpt-5"
    assert rows[unused.id].agents == []
    assert rows[unused.id].agent_count == 0


def test_the_list_costs_the_same_queries_however_many(console_actor, ready_namespace, layout,
                                                      django_assert_max_num_queries):
    for _ in range(10):
        AgentFactory(namespace=ready_namespace)
    # The actor's policy (bindings, restrictions), the Namespace, its Configurations, their Agents.
    with django_assert_max_num_queries(5):
        configuration_list(actor=console_actor, namespace_id=ready_namespace.id)


def test_a_person_sees_only_what_they_may_read(ready_namespace, layout):
    used, _, first, _ = layout
    person = human("config-reader")
    grant(person, "read:namespace", namespace=ready_namespace)
    grant(person, "read:configuration", namespace=ready_namespace, resource_kind="configuration", resource_id=used.id)
    grant(person, "read:agent", namespace=ready_namespace, resource_kind="agent", resource_id=first.id)
    (row,) = configuration_list(actor=actor(person), namespace_id=ready_namespace.id)
    assert row.id == used.id
    assert [a.name for a in row.agents] == ["Billing bot"]
    assert row.hidden_agents == 1  # counted, never named


def test_the_list_needs_the_namespace(ready_namespace):
    stranger = human("stranger")
    with pytest.raises(Forbidden):
        configuration_list(actor=actor(stranger), namespace_id=ready_namespace.id)


@pytest.mark.parametrize(("query", "found"), [
    pytest.param("", {"used", "unused"}, id="empty"),
    pytest.param("GPT-5", {"used"}, id="model-any-case"),
    pytest.param("alpha", {"used"}, id="agent-name"),
    pytest.param("nothing-like-it", set(), id="none"),
])
def test_search_matches_id_model_and_agent_names(console_actor, ready_namespace, layout, query, found):
    used, unused, *_ = layout
    names = {used.id: "used", unused.id: "unused"}
    rows = configuration_list(actor=console_actor, namespace_id=ready_namespace.id)
    assert {names[row.id] for row in rows if row.matches(query)} == found
    assert [row.id for row in rows if row.matches(unused.id[-6:])] == [unused.id]


def test_the_details_name_the_bound_secrets_the_actor_may_read(ready_namespace, layout):
    used, *_ = layout
    readable = SecretFactory(namespace=ready_namespace, name="Slack bot token")
    hidden = SecretFactory(namespace=ready_namespace, name="Hidden token")
    SecretBinding.objects.create(configuration=used, env_name="SLACK_BOT_TOKEN", secret=readable)
    SecretBinding.objects.create(configuration=used, env_name="OTHER_TOKEN", secret=hidden)
    person = human("detail-reader")
    grant(person, "read:namespace", "read:configuration", "read:agent", namespace=ready_namespace)
    grant(person, "read:secret", namespace=ready_namespace, resource_kind="secret", resource_id=readable.id)
    detail = configuration_detail(actor=actor(person), namespace_id=ready_namespace.id, configuration_id=used.id)
    assert [(b.env_name, b.secret_name) for b in detail.bindings] == [
        ("OTHER_TOKEN", None), ("SLACK_BOT_TOKEN", "Slack bot token")]
    assert [a.name for a in detail.summary.agents] == ["Alpha helper", "Billing bot"]


def test_the_details_of_another_namespace_are_not_found(console_actor, ready_namespace, layout):
    other = ConfigurationFactory()
    with pytest.raises(NotFound):
        configuration_detail(actor=console_actor, namespace_id=ready_namespace.id, configuration_id=other.id)


def test_checking_a_draft_takes_the_right_to_write_it(ready_namespace, layout):
    used, unused, *_ = layout
    writer = human("writer")
    grant(writer, "read:namespace", "create:configuration", namespace=ready_namespace)
    grant(writer, "update:configuration", namespace=ready_namespace, resource_kind="configuration",
          resource_id=used.id)
    configuration_check_authorize(actor=actor(writer), namespace_id=ready_namespace.id)
    configuration_check_authorize(actor=actor(writer), namespace_id=ready_namespace.id, configuration_id=used.id)
    with pytest.raises(Forbidden):
        configuration_check_authorize(actor=actor(writer), namespace_id=ready_namespace.id,
                                      configuration_id=unused.id)
    with pytest.raises(NotFound):
        configuration_check_authorize(actor=actor(writer), namespace_id=ready_namespace.id,
                                      configuration_id="cfg_doesnotexist")
    reader = human("reader")
    grant(reader, "read:namespace", "read:configuration", namespace=ready_namespace)
    with pytest.raises(Forbidden):
        configuration_check_authorize(actor=actor(reader), namespace_id=ready_namespace.id)
