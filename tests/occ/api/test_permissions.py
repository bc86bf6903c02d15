"""``GET /namespaces/{ns}/permissions``, ``.../agents/{id}/permissions``,
``.../configurations/{id}/permissions`` and ``.../secrets/{id}/permissions`` per built-in Role:
the summary is what the engine allows, and the endpoints it describes agree with it."""

from __future__ import annotations

import pytest

from occ.iam.roles import ADMINISTRATOR, AGENT_USER, DEVELOPER, NAMESPACE_ADMINISTRATOR, VIEWER
from occ.models import AccessBinding, AuditEvent, AuditKind, Role
from tests.conftest import ApiClient
from tests.factories import (
    AgentFactory,
    ConfigurationFactory,
    NamespaceFactory,
    SecretFactory,
    grant,
    key_for,
    service_principal,
)

NS_KEYS = ["read", "delete", "createAgent", "createConfiguration", "createSecret", "createPreset", "manageAccess"]
AGENT_KEYS = ["read", "update", "delete", "deploy", "stopStart", "chat", "administer", "readConversations",
              "decideApprovals", "readLogs"]
CONFIGURATION_KEYS = ["read", "update", "delete"]
SECRET_KEYS = ["read", "update", "delete", "use"]

# Role -> (Namespace actions allowed, Agent actions allowed), bound on the Namespace
# (the administrator Installation-wide, as bootstrap binds it). docs/access.md is the matrix.
EXPECTED = {
    VIEWER: ({"read"}, {"read"}),
    AGENT_USER: ({"read"}, {"read", "chat"}),
    DEVELOPER: ({"read", "createAgent", "createConfiguration"},
                {"read", "update", "deploy", "stopStart", "chat", "decideApprovals", "readLogs"}),
    NAMESPACE_ADMINISTRATOR: ({"read", "createAgent", "createConfiguration", "createSecret", "manageAccess"},
                              {"read", "update", "delete", "deploy", "stopStart", "chat", "administer",
                               "readConversations", "decideApprovals", "readLogs"}),
    ADMINISTRATOR: ({"read", "delete", "createAgent", "createConfiguration", "createSecret", "createPreset",
                     "manageAccess"},
                    {"read", "update", "delete", "deploy", "stopStart", "chat", "administer", "readConversations",
                     "decideApprovals", "readLogs"}),
}


def client_for(role_name: str, namespace) -> ApiClient:
    principal = service_principal(f"as-{role_name}")
    AccessBinding.objects.create(principal=principal, role=Role.objects.get(name=role_name, namespace__isnull=True),
                                 namespace=None if role_name == ADMINISTRATOR else namespace)
    return ApiClient(key_for(principal))


@pytest.mark.parametrize("role_name", list(EXPECTED))
def test_each_built_in_role_gets_its_summary(ready_namespace, role_name):
    agent = AgentFactory(namespace=ready_namespace)
    client = client_for(role_name, ready_namespace)
    ns_allowed, agent_allowed = EXPECTED[role_name]
    ns = client.get(f"/namespaces/{ready_namespace.id}/permissions")
    assert ns.status == 200
    assert ns.data == {"actions": {key: key in ns_allowed for key in NS_KEYS}}
    one = client.get(f"/namespaces/{ready_namespace.id}/agents/{agent.id}/permissions")
    assert one.status == 200
    assert one.data == {"actions": {key: key in agent_allowed for key in AGENT_KEYS}}
    # The server agrees with the summary where asking changes nothing but the answer.
    deploy = client.post(f"/namespaces/{ready_namespace.id}/agents/{agent.id}/deploy")
    assert (deploy.status != 403) == ("deploy" in agent_allowed), deploy.body
    secrets = client.post(f"/namespaces/{ready_namespace.id}/secrets", {"name": "perm-probe", "value": "v"})
    assert (secrets.status == 201) == ("createSecret" in ns_allowed)


def test_an_agent_user_on_one_agent_sees_only_that_agent(ready_namespace):
    mine, other = AgentFactory(namespace=ready_namespace), AgentFactory(namespace=ready_namespace)
    principal = service_principal("one-agent-user", namespace=ready_namespace)
    role = Role.objects.create(namespace=ready_namespace, name="chat-one", permissions=["read:agent", "invoke:agent"])
    AccessBinding.objects.create(principal=principal, role=role, namespace=ready_namespace, resource_kind="agent",
                                 resource_id=mine.id)
    client = ApiClient(key_for(principal, namespace=ready_namespace))
    answer = client.get(f"/namespaces/{ready_namespace.id}/agents/{mine.id}/permissions")
    assert answer.data["actions"]["chat"] is True
    assert answer.data["actions"]["deploy"] is False
    before = AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL).count()
    assert client.get(f"/namespaces/{ready_namespace.id}/agents/{other.id}/permissions").status == 403
    assert AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL).count() == before + 1
    # The Namespace the Agent lives in is readable (reading the Agent reveals it), and nothing else in it.
    namespace = client.get(f"/namespaces/{ready_namespace.id}/permissions")
    assert namespace.status == 200
    assert namespace.data == {"actions": {key: key == "read" for key in NS_KEYS}}
    assert [a["id"] for a in client.get(f"/namespaces/{ready_namespace.id}/agents").data["agents"]] == [mine.id]


def test_another_namespace_is_refused_whether_it_exists_or_not(ready_namespace):
    elsewhere = NamespaceFactory(name="elsewhere")
    client = client_for(VIEWER, ready_namespace)
    assert client.get(f"/namespaces/{elsewhere.id}/permissions").status == 403
    assert client.get("/namespaces/ns_00000000-0000-4000-8000-000000000000/permissions").status == 403


# Role -> (Configuration actions, Secret actions) bound on the Namespace; None: the Role may not
# read them, so asking is refused (403) like reading.
EXPECTED_RESOURCES = {
    VIEWER: ({"read"}, {"read"}),
    AGENT_USER: (None, None),
    DEVELOPER: ({"read", "update"}, {"read", "use"}),
    NAMESPACE_ADMINISTRATOR: ({"read", "update", "delete"}, {"read", "update", "delete", "use"}),
    ADMINISTRATOR: ({"read", "update", "delete"}, {"read", "update", "delete", "use"}),
}


@pytest.mark.parametrize("role_name", list(EXPECTED_RESOURCES))
def test_each_built_in_role_gets_its_configuration_and_secret_summaries(ready_namespace, role_name):
    configuration = ConfigurationFactory(namespace=ready_namespace)
    secret = SecretFactory(namespace=ready_namespace, name="summarised")
    client = client_for(role_name, ready_namespace)
    cfg_allowed, secret_allowed = EXPECTED_RESOURCES[role_name]
    cfg = client.get(f"/namespaces/{ready_namespace.id}/configurations/{configuration.id}/permissions")
    sec = client.get(f"/namespaces/{ready_namespace.id}/secrets/{secret.id}/permissions")
    if cfg_allowed is None or secret_allowed is None:
        assert (cfg.status, sec.status) == (403, 403)
        return
    assert cfg.status == 200
    assert cfg.data == {"actions": {key: key in cfg_allowed for key in CONFIGURATION_KEYS}}
    assert sec.status == 200
    assert sec.data == {"actions": {key: key in secret_allowed for key in SECRET_KEYS}}
    # The server agrees with the summary: replacing the value, then deleting the Secret and the
    # Configuration (each refused with 403 exactly when the summary says no).
    replace = client.patch(f"/namespaces/{ready_namespace.id}/secrets/{secret.id}", {"value": "v2"})
    assert (replace.status != 403) == ("update" in secret_allowed), replace.body
    gone = client.delete(f"/namespaces/{ready_namespace.id}/secrets/{secret.id}")
    assert (gone.status != 403) == ("delete" in secret_allowed), gone.body
    dropped = client.delete(f"/namespaces/{ready_namespace.id}/configurations/{configuration.id}")
    assert (dropped.status != 403) == ("delete" in cfg_allowed), dropped.body


def test_an_exact_grant_on_one_secret_and_one_configuration(ready_namespace):
    mine, other = SecretFactory(namespace=ready_namespace, name="mine"), SecretFactory(namespace=ready_namespace,
                                                                                      name="other")
    configuration, hidden = ConfigurationFactory(namespace=ready_namespace), ConfigurationFactory(
        namespace=ready_namespace)
    principal = service_principal("exact", namespace=ready_namespace)
    grant(principal, "read:secret", "update:secret", namespace=ready_namespace, resource_kind="secret",
          resource_id=mine.id)
    grant(principal, "read:configuration", "delete:configuration", namespace=ready_namespace,
          resource_kind="configuration", resource_id=configuration.id)
    client = ApiClient(key_for(principal, namespace=ready_namespace))
    ns = f"/namespaces/{ready_namespace.id}"
    assert client.get(f"{ns}/secrets/{mine.id}/permissions").data == {
        "actions": {"read": True, "update": True, "delete": False, "use": False}}
    assert client.get(f"{ns}/configurations/{configuration.id}/permissions").data == {
        "actions": {"read": True, "update": False, "delete": True}}
    before = AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL).count()
    assert client.get(f"{ns}/secrets/{other.id}/permissions").status == 403
    assert client.get(f"{ns}/configurations/{hidden.id}/permissions").status == 403
    assert AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL).count() == before + 2


def test_a_configuration_or_secret_that_does_not_exist_is_not_found(ready_namespace):
    client = client_for(VIEWER, ready_namespace)
    ns = f"/namespaces/{ready_namespace.id}"
    assert client.get(f"{ns}/secrets/sec_00000000-0000-4000-8000-000000000000/permissions").status == 404
    assert client.get(f"{ns}/configurations/cfg_00000000-0000-4000-8000-000000000000/permissions").status == 404
