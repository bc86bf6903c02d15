"""What an Agent's owner and the people it is shared with reach (issue 26): the revisions of that
Agent when their Role holds ``read:agent_revision`` (an owner, a "can deploy" share; not a "can
chat" one), and the Namespace it lives in, so they can find it, with every list in it filtered to
what they may read and none of the Namespace's audit log."""

from __future__ import annotations

from occ.iam.roles import AGENT_USER, DEVELOPER
from occ.models import AccessBinding, Agent, Role
from tests.agents_support import make_revision
from tests.conftest import ApiClient
from tests.factories import AgentFactory, ConfigurationFactory, SecretFactory, grant, key_for, service_principal

CREATOR = ("read:namespace", "create:agent", "read:configuration", "operate:secret")


def _share(principal, agent: Agent, role_name: str) -> AccessBinding:
    return AccessBinding.objects.create(principal=principal, namespace_id=agent.namespace_id, resource_kind="agent",
                                        resource_id=agent.id,
                                        role=Role.objects.get(name=role_name, namespace__isnull=True))


def test_the_owner_reads_the_revisions_of_the_agent_they_created_and_no_other(ready_namespace, fake_compute):
    configuration = ConfigurationFactory(namespace=ready_namespace, values={
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}})
    harness = SecretFactory(namespace=ready_namespace, name="owner-harness")
    someone_elses = AgentFactory(namespace=ready_namespace)
    hidden = make_revision(someone_elses, 1)
    creator = service_principal("revision-owner")
    grant(creator, *CREATOR, namespace=ready_namespace)  # no read:agent_revision in the Namespace
    client = ApiClient(key_for(creator))
    ns = f"/namespaces/{ready_namespace.id}"
    created = client.post(f"{ns}/agents", {
        "name": "owned", "configurationId": configuration.id,
        "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ready_namespace.id,
                                                        "id": harness.id}}})
    assert created.status == 201, created.body
    agent_id = created.data["id"]
    grant(Agent.objects.get(id=agent_id).service_principal, "operate:secret", namespace=ready_namespace,
          resource_kind="secret", resource_id=harness.id)

    deployed = client.post(f"{ns}/agents/{agent_id}/deploy")
    assert deployed.status == 202, deployed.body
    revision_id = deployed.data["id"]
    listed = client.get(f"{ns}/agents/{agent_id}/revisions")
    assert [r["id"] for r in listed.data["revisions"]] == [revision_id]
    assert client.get(f"{ns}/agents/{agent_id}/revisions/{revision_id}").status == 200
    assert client.get(f"{ns}/agents/{agent_id}/revisions/{revision_id}/diff").status == 200
    assert client.get(f"{ns}/agents/{agent_id}/deployments/{revision_id}").status == 200
    # Another Agent's revisions stay out of reach, whoever asks by id.
    assert client.get(f"{ns}/agents/{someone_elses.id}/revisions/{hidden.id}").status == 403
    assert client.get(f"{ns}/agents/{agent_id}/revisions/{hidden.id}").status == 404  # not this Agent's


def test_a_deploy_share_reads_revisions_and_a_chat_share_does_not(ready_namespace):
    agent = AgentFactory(namespace=ready_namespace)
    first, second = make_revision(agent, 1), make_revision(agent, 2)
    deployer, chatter = service_principal("shared-deployer"), service_principal("shared-chatter")
    _share(deployer, agent, DEVELOPER)
    _share(chatter, agent, AGENT_USER)
    base = f"/namespaces/{ready_namespace.id}/agents/{agent.id}/revisions"
    may_deploy, may_chat = ApiClient(key_for(deployer)), ApiClient(key_for(chatter))
    assert [r["id"] for r in may_deploy.get(base).data["revisions"]] == [first.id, second.id]
    assert may_deploy.get(f"{base}/{second.id}/diff").status == 200
    assert may_chat.get(base).data["revisions"] == []  # reads the Agent, not its revisions
    assert may_chat.get(f"{base}/{first.id}").status == 403


def test_a_share_reveals_the_namespace_and_only_what_is_shared_in_it(ready_namespace, api):
    mine, other = AgentFactory(namespace=ready_namespace, name="mine"), AgentFactory(namespace=ready_namespace)
    SecretFactory(namespace=ready_namespace, name="not-shared")
    api.post(f"/namespaces/{ready_namespace.id}/secrets", {"name": "audited-secret", "value": "v"})
    person = service_principal("shared-only")
    _share(person, mine, AGENT_USER)
    client = ApiClient(key_for(person))
    ns = f"/namespaces/{ready_namespace.id}"
    assert [n["id"] for n in client.get("/namespaces").data["namespaces"]] == [ready_namespace.id]
    assert client.get(ns).status == 200
    assert [a["id"] for a in client.get(f"{ns}/agents").data["agents"]] == [mine.id]
    assert client.get(f"{ns}/secrets").data["secrets"] == []
    assert client.get(f"{ns}/configurations").data["configurations"] == []
    assert client.get(f"{ns}/agents/{other.id}").status == 403
    # Seeing the Namespace is not reading it as a whole: its audit log stays closed.
    assert api.get("/audit").data["events"]  # there are events in it
    assert client.get("/audit").data["events"] == []
    # Revoked: the Namespace is gone from view with the share.
    AccessBinding.objects.filter(principal=person).delete()
    assert client.get("/namespaces").data["namespaces"] == []
    assert client.get(ns).status == 403
