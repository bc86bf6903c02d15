"""The difference between a revision and the one before: each kind of change, by JSON pointer,
authorized on both revisions, and never a Secret value."""

from __future__ import annotations

import json
import uuid

import pytest

from occ.commands.configurations import ConfigurationUpdate
from occ.commands.secrets import SecretCreate, SecretValueUpdate
from occ.errors import Forbidden
from occ.models import Agent, AgentRevision, AuditEvent
from occ.selectors.revisions import json_changes, revision_diff, snapshot_diff
from occ.services.configurations import configuration_update
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create, secret_update_value
from tests.agents_support import make_revision
from tests.factories import AgentFactory, actor, grant, marked_document, service_principal
from tests.fakes.compute import deployable_agent


@pytest.mark.parametrize(("before", "after", "expected"), [
    pytest.param({"a": 1}, {"a": 1}, [], id="same"),
    pytest.param({"a": 1}, {"a": 2}, [("changed", "/a", 1, 2)], id="changed"),
    pytest.param({}, {"a": {"b": 1}}, [("added", "/a", None, {"b": 1})], id="added-object"),
    pytest.param({"a": 1, "b": 2}, {"b": 2}, [("removed", "/a", 1, None)], id="removed"),
    pytest.param({"a": {"b": {"c": 1}}}, {"a": {"b": {"c": 1, "d": 2}}}, [("added", "/a/b/d", None, 2)], id="deep"),
    pytest.param({"l": [1, 2]}, {"l": [1, 3, 4]}, [("changed", "/l/1", 2, 3), ("added", "/l/2", None, 4)],
                 id="array-by-index"),
    pytest.param({"l": [1, 2, 3]}, {"l": [1]}, [("removed", "/l/1", 2, None), ("removed", "/l/2", 3, None)],
                 id="array-shrinks"),
    pytest.param({"a": True}, {"a": 1}, [("changed", "/a", True, 1)], id="true-is-not-1"),
    pytest.param({"a": 1}, {"a": 1.0}, [("changed", "/a", 1, 1.0)], id="1-is-not-1.0"),
    pytest.param({"a": None}, {"a": {}}, [("changed", "/a", None, {})], id="null-to-object"),
    pytest.param({"a/b": 1, "m~n": 1}, {"a/b": 2, "m~n": 2},
                 [("changed", "/a~1b", 1, 2), ("changed", "/m~0n", 1, 2)], id="rfc6901-escapes"),
])
def test_json_changes(before, after, expected):
    assert list(json_changes(before, after)) == expected


@pytest.fixture
def agent(ready_namespace):
    return AgentFactory(namespace=ready_namespace)


def sections(changes) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for change in changes:
        found.setdefault(change.section, []).append((change.op, change.path))
    return found


def test_each_kind_of_change_lands_in_its_section(agent):
    ns = agent.namespace_id
    ref = {"kind": "secret", "namespaceId": ns}
    older = make_revision(
        agent, 1,
        configuration={"agents": {"defaults": {"model": "openai/gpt-5"}},
                       "channels": {"slack": {"enabled": True, "channels": {"C1": {"allow": True}}}}},
        secretBindings={"TOOL_A": {"source": {**ref, "id": "sec_a"}, "delivery": {"type": "env"}},
                        "TOOL_B": {"source": {**ref, "id": "sec_b"}, "delivery": {"type": "env"}}},
        plugins={"driver": {"id": "openclaw", "implementation": "x/1"}, "plugins": {"memory": {"enabled": True}}},
    )
    newer = make_revision(
        agent, 2,
        configuration={"agents": {"defaults": {"model": "anthropic/claude"}},
                       "channels": {"slack": {"enabled": True, "channels": {"C1": {"allow": True},
                                                                            "C2": {"allow": True}}}}},
        secretBindings={"TOOL_A": {"source": {**ref, "id": "sec_a2"}, "delivery": {"type": "env"}},
                        "TOOL_C": {"source": {**ref, "id": "sec_c"}, "delivery": {"type": "env"}}},
        harnessAuth={"method": "api_key", "source": {**ref, "id": "sec_model2"}},
        plugins={"driver": {"id": "openclaw", "implementation": "x/1"}, "plugins": {}},
        pluginApprovers=[],
        harness={"id": "openclaw", "version": "2026.2.0", "mode": "embedded"},
        backendId="backend-1", secretDriverId="database", sourceRevisionId="rev_elsewhere",
    )
    found = sections(snapshot_diff(older, newer))
    assert found == {
        "configuration": [("changed", "/configurationGeneration"),
                          ("changed", "/configuration/agents/defaults/model")],
        "channels": [("added", "/configuration/channels/slack/channels/C2")],
        "secretBindings": [("changed", "/secretBindings/TOOL_A/source/id"), ("removed", "/secretBindings/TOOL_B"),
                           ("added", "/secretBindings/TOOL_C")],
        "credentials": [("changed", "/harnessAuth/source/id"), ("added", "/secretDriverId")],
        "plugins": [("removed", "/pluginApprovers/0"), ("removed", "/plugins/plugins/memory")],
        "runtime": [("changed", "/harness/version"), ("changed", "/backendId")],
    }
    by_path = {c.path: c for c in snapshot_diff(older, newer)}
    assert (by_path["/secretBindings/TOOL_A/source/id"].before, by_path["/secretBindings/TOOL_A/source/id"].after) \
        == ("sec_a", "sec_a2")
    assert by_path["/configuration/agents/defaults/model"].after == "anthropic/claude"
    # Where a revision came from, and the snapshot's internal keys, are never changes.
    assert not [c for c in by_path if "sourceRevisionId" in c or "servicePrincipalId" in c or "sandbox" in c]


def test_the_first_revision_is_all_added(agent):
    first = make_revision(agent, 1)
    changes = snapshot_diff(None, first)
    assert {c.op for c in changes} == {"added"}
    assert {c.path for c in changes} >= {"/configuration", "/harnessAuth", "/harness", "/compute",
                                         "/configurationId"}


def test_diff_is_against_the_revision_just_before(admin_actor, agent):
    revisions = [make_revision(agent, n, configuration={"n": n}) for n in (1, 2, 3)]
    make_revision(AgentFactory(namespace=agent.namespace), 2, configuration={"n": 99})  # another Agent's
    diff = revision_diff(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id,
                         revision_id=revisions[2].id)
    assert diff.previous == revisions[1]
    assert [(c.path, c.before, c.after) for c in diff.section("configuration")] == [
        ("/configurationGeneration", 2, 3), ("/configuration/n", 2, 3)]
    first = revision_diff(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id,
                          revision_id=revisions[0].id)
    assert first.previous is None


def test_both_revisions_need_exact_read(agent):
    older, newer = make_revision(agent, 1), make_revision(agent, 2)
    principal = service_principal("reader")
    grant(principal, "read:namespace", namespace=agent.namespace)
    grant(principal, "read:agent_revision", namespace=agent.namespace, resource_kind="agent_revision",
          resource_id=newer.id)
    with pytest.raises(Forbidden) as raised:
        revision_diff(actor=actor(principal), namespace_id=agent.namespace_id, agent_id=agent.id,
                      revision_id=newer.id)
    assert raised.value.denial.resource_id == older.id
    assert "v1" in raised.value.message
    grant(principal, "read:agent_revision", namespace=agent.namespace, resource_kind="agent_revision",
          resource_id=older.id)
    diff = revision_diff(actor=actor(principal), namespace_id=agent.namespace_id, agent_id=agent.id,
                         revision_id=newer.id)
    assert diff.previous == older


def test_no_secret_value_reaches_a_diff(admin_actor, ready_namespace, fake_compute):
    """Leak canary: Secret values bound, replaced and rebound between two deployed revisions
    appear in no change, no audit row and no snapshot."""
    canary = f"canary-diff-{uuid.uuid4()}"
    agent = deployable_agent(ready_namespace)
    ns = ready_namespace.id
    model_key = secret_create(actor=admin_actor, namespace_id=ns, command=SecretCreate(name="model", value=canary))
    tool = secret_create(actor=admin_actor, namespace_id=ns, command=SecretCreate(name="tool", value=canary + "-t"))
    Agent.objects.filter(id=agent.id).update(harness_secret=model_key)
    for secret in (model_key, tool):
        grant(agent.service_principal, "operate:secret", namespace=ready_namespace, resource_kind="secret",
              resource_id=secret.id)
    first = agent_deploy(actor=admin_actor, namespace_id=ns, agent_id=agent.id)
    secret_update_value(actor=admin_actor, namespace_id=ns, secret_id=model_key.id,
                  command=SecretValueUpdate(value=canary + "-replaced"))
    configuration_update(actor=admin_actor, namespace_id=ns, configuration_id=agent.configuration_id,
                         command=ConfigurationUpdate.model_validate({
                             "values": marked_document({"second": True}),
                             "secretBindings": {"TOOL_TOKEN": {"source": {"kind": "secret", "namespaceId": ns,
                                                                          "id": tool.id}}}}))
    second = agent_deploy(actor=admin_actor, namespace_id=ns, agent_id=agent.id)
    diff = revision_diff(actor=admin_actor, namespace_id=ns, agent_id=agent.id, revision_id=second.id)
    assert diff.previous == AgentRevision.objects.get(id=first.id)
    assert [c.path for c in diff.section("secretBindings")] == ["/secretBindings/TOOL_TOKEN"]
    assert diff.section("secretBindings")[0].after["source"]["id"] == tool.id
    everything = json.dumps([c.__dict__ for c in diff.changes], default=str)
    everything += json.dumps(list(AuditEvent.objects.values_list("details", flat=True)))
    everything += json.dumps(list(AgentRevision.objects.values_list("snapshot", flat=True)))
    assert canary not in everything
