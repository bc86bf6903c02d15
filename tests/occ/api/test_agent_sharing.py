"""Share this Agent through the API (issue 26): an owner shares their Agent with a teammate at a
level, changes the level, sees who has access and why, and revokes; each one audited; nobody
without administer:agent on the Agent may do any of it."""

from __future__ import annotations

from occ.iam.roles import AGENT_USER, DEVELOPER, VIEWER
from occ.models import AccessBinding, AuditEvent, Role
from tests.conftest import ApiClient
from tests.factories import AgentFactory, ConfigurationFactory, grant, key_for, service_principal


def _bind(principal, role_name: str, namespace) -> AccessBinding:
    return AccessBinding.objects.create(principal=principal, namespace=namespace,
                                        role=Role.objects.get(name=role_name, namespace__isnull=True))


def test_an_owner_shares_changes_the_level_lists_and_revokes(ready_namespace):
    ns = f"/namespaces/{ready_namespace.id}"
    owner = service_principal("owner")
    grant(owner, "read:namespace", "create:agent", "read:configuration", namespace=ready_namespace)
    owner_client = ApiClient(key_for(owner))
    configuration = ConfigurationFactory(namespace=ready_namespace)
    agent_id = owner_client.post(f"{ns}/agents", {"name": "helpdesk", "configurationId": configuration.id}).data["id"]
    teammate = service_principal("teammate")
    teammate_client = ApiClient(key_for(teammate))
    _bind(service_principal("namespace-viewer"), VIEWER, ready_namespace)
    shares = f"{ns}/agents/{agent_id}/shares"

    assert teammate_client.get(f"{ns}/agents/{agent_id}/permissions").status == 403
    shared = owner_client.post(shares, {"subjectId": teammate.id, "level": "chat"})
    assert shared.status == 200, shared.body
    assert (shared.data["level"], shared.data["source"], shared.data["roleName"]) == ("chat", "direct", AGENT_USER)
    may = teammate_client.get(f"{ns}/agents/{agent_id}/permissions").data["actions"]
    assert (may["chat"], may["deploy"], may["administer"]) == (True, False, False)

    raised = owner_client.post(shares, {"subjectId": teammate.id, "level": "deploy"})
    assert raised.data["roleName"] == DEVELOPER
    def direct() -> list[str]:
        return list(AccessBinding.objects.filter(principal=teammate, resource_kind="agent", resource_id=agent_id)
                    .values_list("id", flat=True))

    assert direct() == [raised.data["bindingId"]]  # the chat share was replaced
    assert teammate_client.get(f"{ns}/agents/{agent_id}/permissions").data["actions"]["deploy"] is True
    event = AuditEvent.objects.filter(action="openclaw.agents.share", resource_id=agent_id).latest("occurred_at")
    assert event.actor_id == owner.id
    assert event.details["level"] == "deploy"
    assert event.details["replacedBindingIds"] == [shared.data["bindingId"]]

    listed = {(e["subjectName"], e["level"], e["source"], e["revocable"])
              for e in owner_client.get(shares).data["shares"]}
    assert ("teammate", "deploy", "direct", True) in listed
    assert ("owner", "administer", "direct", True) in listed  # delegation
    assert ("namespace-viewer", "see", "namespace", False) in listed
    assert any(source == "installation" and level == "administer" for _, level, source, _ in listed)

    assert owner_client.delete(f"{shares}/{raised.data['bindingId']}").status == 204
    assert direct() == []
    assert teammate_client.get(f"{ns}/agents/{agent_id}/permissions").status == 403
    revoked = AuditEvent.objects.get(action="openclaw.agents.unshare", resource_id=agent_id)
    assert revoked.details["subjectId"] == teammate.id


def test_without_administer_nothing_is_shared_listed_or_revoked(ready_namespace):
    agent = AgentFactory(namespace=ready_namespace)
    ns = f"/namespaces/{ready_namespace.id}/agents/{agent.id}/shares"
    developer = service_principal("developer")
    _bind(developer, DEVELOPER, ready_namespace)
    teammate = service_principal("teammate")
    existing = AccessBinding.objects.create(principal=teammate, namespace=ready_namespace, resource_kind="agent",
                                            resource_id=agent.id,
                                            role=Role.objects.get(name=AGENT_USER, namespace__isnull=True))
    client = ApiClient(key_for(developer))
    before = AccessBinding.objects.count()
    assert client.get(ns).status == 403
    assert client.post(ns, {"subjectId": teammate.id, "level": "administer"}).status == 403
    assert client.delete(f"{ns}/{existing.id}").status == 403
    assert AccessBinding.objects.count() == before
    assert not AuditEvent.objects.filter(action__startswith="openclaw.agents.", resource_id=agent.id).exists()


def test_a_share_names_a_real_subject_and_only_a_direct_share_is_revoked(ready_namespace, api):
    agent = AgentFactory(namespace=ready_namespace)
    ns = f"/namespaces/{ready_namespace.id}/agents/{agent.id}/shares"
    unknown = api.post(ns, {"subjectId": "sp_nobody", "level": "chat"})
    assert (unknown.status, unknown.error_code) == (400, "INVALID_REQUEST")
    itself = api.post(ns, {"subjectId": agent.service_principal.id, "level": "chat"})
    assert itself.status == 400  # an Agent's own principal is not someone to share with
    assert api.post(ns, {"subjectId": "sp_x", "level": "owner"}).status == 400
    viewer = _bind(service_principal("viewer"), VIEWER, ready_namespace)
    assert api.delete(f"{ns}/{viewer.id}").status == 404  # a Namespace Role: changed on the Access page
    assert AccessBinding.objects.filter(id=viewer.id).exists()
