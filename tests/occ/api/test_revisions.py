from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from occ.api.wire import revision_wire
from occ.models import AgentRevision, AuditEvent, Configuration
from tests.agents_support import SNAPSHOT, after_one_denial, caller, make_revision, state
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, grant

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
UNKNOWN_REV = "rev_00000000-0000-4000-8000-000000000000"


@pytest.fixture
def agent(ready_namespace):
    return AgentFactory(namespace=ready_namespace)


def revisions_url(agent, *rest: str) -> str:
    return "/".join([f"/namespaces/{agent.namespace_id}/agents/{agent.id}/revisions", *rest])


def test_revision_wire_reads_the_snapshot_and_hides_internal_keys(agent):
    revision = make_revision(agent, 1, secretDriverId="database")
    data = revision_wire(revision)
    assert data == {
        "id": revision.id,
        "namespaceId": agent.namespace_id,
        "agentId": agent.id,
        "revision": 1,
        "createdAt": data["createdAt"],
        "configurationId": agent.configuration_id,
        "configurationName": agent.configuration.name,
        "configurationKind": "agent",
        "configurationGeneration": 1,
        "configuration": SNAPSHOT["configuration"],
        "harness": SNAPSHOT["harness"],
        "compute": SNAPSHOT["compute"],
        "harnessAuth": {"method": "api_key",
                        "source": {"kind": "secret", "namespaceId": agent.namespace_id, "id": "sec_x"}},
        "backendId": None,
        "secretBindings": {},
        "pluginApprovers": SNAPSHOT["pluginApprovers"],
        "secretDriverId": "database",
    }
    assert TIMESTAMP.match(data["createdAt"])
    assert "servicePrincipalId" not in data
    assert "sandboxDriver" not in data


def test_optional_snapshot_fields_appear_only_when_present(agent):
    plain = revision_wire(make_revision(agent, 1))
    assert not {"secretDriverId", "plugins", "repositoryCredentials"} & set(plain)
    plugins = {"driver": {"id": "curated", "implementation": "curated"}, "plugins": {}}
    full = revision_wire(make_revision(agent, 2, plugins=plugins, repositoryCredentials={"bindings": []}))
    assert full["plugins"] == plugins
    assert full["repositoryCredentials"] == {"bindings": []}


def test_list_returns_revisions_in_order(api, agent):
    revisions = [make_revision(agent, n) for n in (1, 2, 3)]
    make_revision(AgentFactory(namespace=agent.namespace), 1)  # another Agent's
    response = api.get(revisions_url(agent))
    assert response.status == 200
    listed = response.data["revisions"]
    assert [r["id"] for r in listed] == [r.id for r in revisions]
    assert [r["revision"] for r in listed] == [1, 2, 3]
    assert listed[1] == revision_wire(revisions[1])
    assert response.data["nextCursor"] is None


def test_each_revision_names_its_configuration_as_it_is_named_now(api, agent):
    """Issue 27, item 5: the name beside every id; a Configuration renamed since shows its new
    name, one deleted since (the Agent moved on) shows none, in one query for the whole list."""
    first = make_revision(agent, 1)
    old = agent.configuration
    Configuration.objects.filter(id=old.id).update(name="support bot")
    moved_to = ConfigurationFactory(namespace=agent.namespace, name="support bot v2")
    agent.configuration = moved_to
    agent.save(update_fields=["configuration"])
    second = AgentRevision.objects.create(namespace_id=agent.namespace_id, agent=agent, number=2,
                                          configuration_id=moved_to.id, configuration_generation=1,
                                          snapshot=first.snapshot, created_by="prn_test")
    listed = api.get(revisions_url(agent)).data["revisions"]
    assert [(r["configurationId"], r["configurationName"]) for r in listed] == [
        (old.id, "support bot"), (moved_to.id, "support bot v2")]
    assert api.get(revisions_url(agent, second.id)).data["configurationName"] == "support bot v2"
    assert api.get(f"/namespaces/{agent.namespace_id}/agents/{agent.id}").data["configurationName"] == (
        "support bot v2")

    Configuration.objects.filter(id=old.id).delete()
    assert api.get(revisions_url(agent, first.id)).data["configurationName"] is None
    assert api.get(revisions_url(agent)).data["revisions"][0]["configurationName"] is None


def test_list_filters_each_revision_by_exact_read(agent):
    revisions = [make_revision(agent, n) for n in (1, 2, 3)]
    principal, client = caller()
    grant(principal, "read:agent", namespace=agent.namespace, resource_kind="agent", resource_id=agent.id)
    assert client.get(revisions_url(agent)).data["revisions"] == []  # reading the Agent reveals no revision
    grant(principal, "read:agent_revision", namespace=agent.namespace, resource_kind="agent_revision",
          resource_id=revisions[2].id)
    assert [r["id"] for r in client.get(revisions_url(agent)).data["revisions"]] == [revisions[2].id]
    # agent_revision:read bound on the Agent covers its revisions (an owner's; docs/access.md), and
    # only this Agent's.
    other = AgentFactory(namespace=agent.namespace)
    make_revision(other, 1)
    grant(principal, "read:agent_revision", namespace=agent.namespace, resource_kind="agent", resource_id=agent.id)
    assert [r["id"] for r in client.get(revisions_url(agent)).data["revisions"]] == [r.id for r in revisions]


def test_list_needs_agent_read(agent):
    make_revision(agent, 1)
    _principal, client = caller("read:agent_revision", "read:namespace", "update:agent", namespace=agent.namespace)
    before = state()
    response = client.get(revisions_url(agent))
    assert response.status == 403
    assert state() == after_one_denial(before)
    denial = AuditEvent.objects.get(kind="authorization_denial")
    assert (denial.details["permission"], denial.resource_id) == ("read:agent", agent.id)


@pytest.mark.parametrize("who", ["admin", "exact-reader"])
def test_list_queries_do_not_grow_with_revisions(api, agent, who):
    principal, reader = caller("read:agent", namespace=agent.namespace)
    client = api if who == "admin" else reader

    def add(first: int, last: int) -> None:
        for number in range(first, last + 1):
            revision = make_revision(agent, number)
            if who == "exact-reader":
                grant(principal, "read:agent_revision", namespace=agent.namespace, resource_kind="agent_revision",
                      resource_id=revision.id)

    def measure() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(revisions_url(agent))
        assert response.status == 200
        return len(captured), len(response.data["revisions"])

    add(1, 3)
    small = measure()
    add(4, 30)
    large = measure()
    assert (small[1], large[1]) == (3, 30)
    assert small[0] == large[0]


def test_list_of_unknown_or_foreign_agent_is_404(api, agent):
    other = AgentFactory(namespace=NamespaceFactory())
    assert api.get(f"/namespaces/{agent.namespace_id}/agents/{other.id}/revisions").status == 404
    assert api.get(f"/namespaces/{other.namespace_id}/agents/{agent.id}/revisions").status == 404


def test_get_revision(api, agent):
    revision = make_revision(agent, 1)
    response = api.get(revisions_url(agent, revision.id))
    assert response.status == 200
    assert response.data == revision_wire(revision)


def test_get_needs_exact_revision_read_only(agent):
    first, second = make_revision(agent, 1), make_revision(agent, 2)
    principal, client = caller()
    grant(principal, "read:agent_revision", namespace=agent.namespace, resource_kind="agent_revision",
          resource_id=first.id)
    # No agent:read needed for an exact revision read.
    assert client.get(revisions_url(agent, first.id)).status == 200
    before = state()
    response = client.get(revisions_url(agent, second.id))
    assert response.status == 403
    assert state() == after_one_denial(before)
    denial = AuditEvent.objects.get(kind="authorization_denial")
    assert (denial.details["permission"], denial.resource_id) == ("read:agent_revision", second.id)


def test_agent_permissions_do_not_reveal_a_revision(agent):
    revision = make_revision(agent, 1)
    _principal, client = caller("read:agent", "update:agent", "deploy:agent", "operate:agent",
                                namespace=agent.namespace)
    assert client.get(revisions_url(agent, revision.id)).status == 403


def test_get_with_owner_mismatch_is_404(api, agent):
    sibling = AgentFactory(namespace=agent.namespace)
    revision = make_revision(sibling, 1)
    assert api.get(revisions_url(agent, revision.id)).status == 404
    assert api.get(revisions_url(agent, UNKNOWN_REV)).status == 404
    other_ns = NamespaceFactory()
    assert api.get(f"/namespaces/{other_ns.id}/agents/{sibling.id}/revisions/{revision.id}").status == 404
    assert api.get(revisions_url(sibling, revision.id)).status == 200


def test_revisions_are_read_only(api, agent):
    revision = make_revision(agent, 1)
    before = state()
    assert api.post(revisions_url(agent), {}).status == 405
    assert api.patch(revisions_url(agent, revision.id), {}).status == 405
    assert api.delete(revisions_url(agent, revision.id)).status == 405
    assert state() == before
    with pytest.raises(TypeError):
        revision.save()
    assert AgentRevision.objects.get(id=revision.id).snapshot["harness"] == SNAPSHOT["harness"]
