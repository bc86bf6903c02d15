"""Delegation (issue 26): a caller who may create Agents in a Namespace owns the Agents they
create (administer on exactly those, through a binding made and audited with the create), and
nothing else: another Agent of the Namespace stays out of reach."""

from __future__ import annotations

from occ.iam.roles import OWNER_ROLE
from occ.models import AccessBinding, AuditEvent
from tests.conftest import ApiClient
from tests.factories import AgentFactory, ConfigurationFactory, grant, key_for, service_principal

CREATOR = ("read:namespace", "create:agent", "read:configuration")


def test_the_creator_owns_the_agent_they_create_and_only_that_one(ready_namespace):
    configuration = ConfigurationFactory(namespace=ready_namespace)
    someone_elses = AgentFactory(namespace=ready_namespace)
    creator = service_principal("agent-creator")
    grant(creator, *CREATOR, namespace=ready_namespace)
    client = ApiClient(key_for(creator))
    ns = f"/namespaces/{ready_namespace.id}"

    created = client.post(f"{ns}/agents", {"name": "delegated", "configurationId": configuration.id})
    assert created.status == 201, created.body
    agent_id = created.data["id"]
    binding = AccessBinding.objects.get(principal=creator, resource_kind="agent", resource_id=agent_id)
    assert (binding.role.name, binding.namespace_id) == (OWNER_ROLE, ready_namespace.id)
    # Audited beside the create: the create's event names the binding, the binding has its own.
    create_event = AuditEvent.objects.get(action="openclaw.agents.create", resource_id=agent_id)
    assert create_event.details["ownerBindingId"] == binding.id
    bound = AuditEvent.objects.get(action="openclaw.iam.access_bindings.create", resource_id=binding.id)
    assert bound.actor_id == creator.id
    assert bound.details["reason"] == "agent_owner"
    assert bound.details["target"] == {"resourceKind": "agent", "resourceId": agent_id}

    mine = client.get(f"{ns}/agents/{agent_id}/permissions").data["actions"]
    assert all(mine[name] for name in ("read", "update", "deploy", "stopStart", "chat", "administer", "delete"))
    # Someone else's Agent: not even readable (the creator holds no read:agent Namespace-wide).
    assert client.get(f"{ns}/agents/{someone_elses.id}/permissions").status == 403
    assert client.post(f"{ns}/agents/{someone_elses.id}/deploy").status == 403
    # Their own: the engine lets them act on it (deploy is authorized, then refused for what the
    # Agent lacks, or admitted; never 403), and delete it.
    assert client.post(f"{ns}/agents/{agent_id}/deploy").status != 403
    assert client.delete(f"{ns}/agents/{agent_id}").status == 202


def test_who_administers_the_agent_already_gets_no_owner_binding(ready_namespace, api):
    configuration = ConfigurationFactory(namespace=ready_namespace)
    created = api.post(f"/namespaces/{ready_namespace.id}/agents",
                       {"name": "admin-made", "configurationId": configuration.id})
    assert created.status == 201, created.body
    assert not AccessBinding.objects.filter(resource_kind="agent", resource_id=created.data["id"]).exists()
    assert AuditEvent.objects.get(action="openclaw.agents.create",
                                  resource_id=created.data["id"]).details["ownerBindingId"] is None


def test_a_refused_create_leaves_no_binding(ready_namespace):
    configuration = ConfigurationFactory(namespace=ready_namespace)
    reader = service_principal("reader-only")
    grant(reader, "read:namespace", "read:configuration", namespace=ready_namespace)
    refused = ApiClient(key_for(reader)).post(f"/namespaces/{ready_namespace.id}/agents",
                                              {"name": "never", "configurationId": configuration.id})
    assert refused.status == 403
    assert not AccessBinding.objects.filter(principal=reader, resource_kind="agent").exists()
