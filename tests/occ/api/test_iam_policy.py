"""Contract tests for the Namespace IAM policy API (/namespaces/{ns}/iam/...)."""

from __future__ import annotations

from typing import Any

import pytest

from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.iam.roles import DEVELOPER
from occ.models import AccessBinding, AgentRevision, AgentStatus, AuditEvent, AuditKind, Principal, Role
from occ.services.bootstrap import ADMINISTRATOR_ROLE_NAME
from tests.conftest import ApiClient
from tests.factories import (
    AgentFactory,
    ConfigurationFactory,
    NamespaceFactory,
    SecretFactory,
    actor,
    grant,
    human,
    key_for,
    service_principal,
)

MISSING_ROLE = "role_00000000-0000-4000-8000-000000000000"
MISSING_NS = "ns_00000000-0000-4000-8000-000000000000"


def snapshot() -> tuple[int, int, int, int]:
    return Role.objects.count(), AccessBinding.objects.count(), Principal.objects.count(), AuditEvent.objects.count()


def unchanged_but_one_denial(before: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    return (*before[:3], before[3] + 1)


@pytest.fixture
def world(ready_namespace):
    """A Namespace with one resource of each bindable kind, and a second Namespace."""
    ns = ready_namespace
    other = NamespaceFactory()
    agent = AgentFactory(namespace=ns)
    revision = AgentRevision.objects.create(namespace=ns, agent=agent, number=1,
                                            configuration_id=agent.configuration_id, configuration_generation=1,
                                            snapshot={}, created_by="test")
    return {
        "ns": ns, "other": other, "agent": agent, "revision": revision,
        "configuration": agent.configuration, "secret": SecretFactory(namespace=ns),
        "person": human("member"), "ns_sp": service_principal("ns-bot", ns),
        "agent_sp": agent.service_principal,
    }


def make_role(ns, *permissions: str, name: str | None = None, system: bool = False) -> Role:
    return Role.objects.create(namespace=ns, name=name or f"role-{Role.objects.count() + 1}",
                               permissions=list(permissions), system=system)


def base(ns) -> str:
    return f"/namespaces/{ns.id}/iam"


# -- Roles -------------------------------------------------------------------------------


def test_create_role(api, world):
    ns = world["ns"]
    body = {"name": "agent-operator", "permissions": [{"action": "read", "resourceKind": "agent"},
                                                      {"action": "operate", "resourceKind": "agent"}]}
    response = api.post(f"{base(ns)}/roles", body)
    assert response.status == 201
    data = response.data
    assert data["id"].startswith("role_")
    assert data["namespaceId"] == ns.id
    assert data["name"] == "agent-operator"
    assert data["permissions"] == body["permissions"]
    assert data["createdAt"].endswith("Z")
    role = Role.objects.get(id=data["id"])
    assert (role.namespace_id, role.system, role.permissions) == (ns.id, False, ["read:agent", "operate:agent"])
    event = AuditEvent.objects.get(action="openclaw.iam.roles.create")
    assert (event.namespace_id, event.resource_id) == (ns.id, role.id)
    assert api.get(f"{base(ns)}/roles/{role.id}").data == data


def test_every_valid_pair_is_accepted(api, world):
    from occ.commands.iam import ROLE_ACTIONS

    permissions = [{"action": a.value, "resourceKind": k.value}
                   for k, actions in ROLE_ACTIONS.items() for a in sorted(actions)]
    response = api.post(f"{base(world['ns'])}/roles", {"name": "everything", "permissions": permissions})
    assert response.status == 201
    assert len(response.data["permissions"]) == len(permissions)


def _perm(action: str, kind: str) -> dict[str, str]:
    return {"action": action, "resourceKind": kind}


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        pytest.param({"permissions": [_perm("read", "agent")]}, "REQUIRED", "/name", id="missing-name"),
        pytest.param({"name": "r"}, "REQUIRED", "/permissions", id="missing-permissions"),
        pytest.param({"name": "r", "permissions": []}, "INVALID_VALUE", "/permissions", id="no-permissions"),
        pytest.param({"name": "r", "permissions": {"action": "read"}}, "INVALID_TYPE", "/permissions",
                     id="permissions-not-a-list"),
        pytest.param({"name": "r", "permissions": ["read:agent"]}, "INVALID_TYPE", "/permissions/0",
                     id="permission-as-string"),
        pytest.param({"name": "r", "permissions": [{"action": "read"}]}, "REQUIRED", "/permissions/0/resourceKind",
                     id="permission-missing-kind"),
        pytest.param({"name": "r", "permissions": [{**_perm("read", "agent"), "scope": "x"}]}, "UNKNOWN_FIELD",
                     "/permissions/0/scope", id="permission-extra-field"),
        pytest.param({"name": "r", "permissions": [_perm("read", 1)]}, "INVALID_TYPE",
                     "/permissions/0/resourceKind", id="permission-int-kind"),
        pytest.param({"name": "r", "permissions": [_perm("read", "agent"), _perm("read", "planet")]},
                     "INVALID_VALUE", "/permissions/1/resourceKind", id="unknown-kind"),
        pytest.param({"name": "r", "permissions": [_perm("read", "installation")]}, "INVALID_VALUE",
                     "/permissions/0/resourceKind", id="installation-read"),
        pytest.param({"name": "r", "permissions": [_perm("administer", "installation")]}, "INVALID_VALUE",
                     "/permissions/0/resourceKind", id="installation-administer"),
        pytest.param({"name": "r", "permissions": [_perm("create", "namespace")]}, "INVALID_VALUE",
                     "/permissions/0/action", id="namespace-create"),
        pytest.param({"name": "r", "permissions": [_perm("delete", "namespace")]}, "INVALID_VALUE",
                     "/permissions/0/action", id="namespace-delete"),
        pytest.param({"name": "r", "permissions": [_perm("deploy", "secret")]}, "INVALID_VALUE",
                     "/permissions/0/action", id="action-not-valid-for-kind"),
        pytest.param({"name": "r", "permissions": [_perm("update", "agent_revision")]}, "INVALID_VALUE",
                     "/permissions/0/action", id="revision-update"),
        pytest.param({"name": "r", "permissions": [_perm("fly", "agent")]}, "INVALID_VALUE",
                     "/permissions/0/action", id="unknown-action"),
        pytest.param({"name": "r", "permissions": [_perm("*", "agent")]}, "INVALID_VALUE",
                     "/permissions/0/action", id="wildcard-action"),
        pytest.param({"name": "r", "permissions": [_perm("read", "agent"), _perm("deploy", "agent"),
                                                   _perm("read", "agent")]},
                     "INVALID_VALUE", "/permissions/2", id="duplicate-pair"),
        pytest.param({"name": "r", "permissions": [_perm("read", "agent")] * 65}, "TOO_LONG", "/permissions",
                     id="too-many"),
        pytest.param({"name": " r", "permissions": [_perm("read", "agent")]}, "INVALID_FORMAT", "/name",
                     id="padded-name"),
        pytest.param({"name": "x" * 201, "permissions": [_perm("read", "agent")]}, "TOO_LONG", "/name",
                     id="long-name"),
        pytest.param({"name": "r", "permissions": [_perm("read", "agent")], "namespaceId": "ns_x"},
                     "UNKNOWN_FIELD", "/namespaceId", id="unknown-field"),
    ],
)
def test_create_role_rejects_bad_input_and_changes_nothing(api, world, body, code, path):
    before = snapshot()
    response = api.post(f"{base(world['ns'])}/roles", body)
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert snapshot() == before


def test_duplicate_role_name_conflicts(api, world):
    ns = world["ns"]
    make_role(ns, "read:agent", name="readers")
    before = snapshot()
    response = api.post(f"{base(ns)}/roles", {"name": "readers", "permissions": [_perm("read", "secret")]})
    assert response.status == 409
    assert response.error_code == "RESOURCE_CONFLICT"
    assert snapshot() == before
    # The same name in another Namespace is fine.
    assert api.post(f"{base(world['other'])}/roles", {"name": "readers",
                                                      "permissions": [_perm("read", "secret")]}).status == 201


def test_list_roles_hides_system_and_foreign_roles(api, world):
    ns = world["ns"]
    first = make_role(ns, "read:agent")
    make_role(ns, "operate:secret", system=True)
    make_role(world["other"], "read:agent")
    second = make_role(ns, "read:secret")
    response = api.get(f"{base(ns)}/roles")
    assert response.status == 200
    assert [r["id"] for r in response.data["roles"]] == [first.id, second.id]
    assert response.data["roles"][0]["permissions"] == [_perm("read", "agent")]


@pytest.mark.parametrize("which", ["missing", "system", "foreign", "installation"])
def test_get_role_outside_the_policy_api_is_404(api, world, which):
    ns = world["ns"]
    role_id = {
        "missing": lambda: MISSING_ROLE,
        "system": lambda: make_role(ns, "operate:secret", system=True).id,
        "foreign": lambda: make_role(world["other"], "read:agent").id,
        "installation": lambda: Role.objects.get(name=ADMINISTRATOR_ROLE_NAME).id,
    }[which]()
    assert api.get(f"{base(ns)}/roles/{role_id}").status == 404
    before = snapshot()
    response = api.delete(f"{base(ns)}/roles/{role_id}")
    assert response.status == 404
    assert response.error_code == "NOT_FOUND"
    assert snapshot() == before


def test_delete_role(api, world):
    ns = world["ns"]
    role = make_role(ns, "read:agent")
    response = api.delete(f"{base(ns)}/roles/{role.id}")
    assert response.status == 204
    assert response.body is None
    assert not Role.objects.filter(id=role.id).exists()
    event = AuditEvent.objects.get(action="openclaw.iam.roles.delete")
    assert (event.namespace_id, event.resource_id) == (ns.id, role.id)
    assert api.get(f"{base(ns)}/roles/{role.id}").status == 404


def test_delete_bound_role_conflicts(api, world):
    ns = world["ns"]
    role = make_role(ns, "read:agent")
    AccessBinding.objects.create(principal=world["person"], role=role, namespace=ns, resource_kind="agent",
                                 resource_id=world["agent"].id)
    before = snapshot()
    response = api.delete(f"{base(ns)}/roles/{role.id}")
    assert response.status == 409
    assert response.error_code == "RESOURCE_CONFLICT"
    assert snapshot() == before


# -- Access bindings ---------------------------------------------------------------------

TARGET_ROLES = {
    "namespace": "read:namespace",
    "agent": "read:agent",
    "agent_revision": "read:agent_revision",
    "configuration": "read:configuration",
    "secret": "operate:secret",
}


def _target_id(world: dict[str, Any], kind: str) -> str:
    return world["ns"].id if kind == "namespace" else world[{"agent_revision": "revision"}.get(kind, kind)].id


@pytest.mark.parametrize("subject", ["person", "ns_sp", "agent_sp"])
@pytest.mark.parametrize("kind", list(TARGET_ROLES))
def test_create_binding_grants_exactly_the_target(api, world, subject, kind):
    ns = world["ns"]
    permission = TARGET_ROLES[kind]
    role = make_role(ns, permission, "read:agent_revision" if kind != "agent_revision" else "read:agent")
    principal = world[subject]
    target_id = _target_id(world, kind)
    body = {"subjectKind": "identity", "subjectId": principal.id, "roleId": role.id,
            "resourceKind": kind, "resourceId": target_id}
    response = api.post(f"{base(ns)}/access-bindings", body)
    assert response.status == 201
    data = response.data
    assert data["id"].startswith("bnd_")
    assert {k: v for k, v in data.items() if k not in ("id", "createdAt")} == {**body, "namespaceId": ns.id}
    binding = AccessBinding.objects.get(id=data["id"])
    assert (binding.principal_id, binding.role_id, binding.namespace_id, binding.resource_kind,
            binding.resource_id) == (principal.id, role.id, ns.id, kind, target_id)
    event = AuditEvent.objects.get(action="openclaw.iam.access_bindings.create")
    assert (event.namespace_id, event.resource_id) == (ns.id, binding.id)
    action, _, _ = permission.partition(":")
    subject_actor = actor(principal)
    assert allowed(subject_actor, Action(action), Kind(kind), namespace_id=ns.id, resource_id=target_id)
    # Only the exact target, and only permissions of the target's kind.
    assert not allowed(subject_actor, Action(action), Kind(kind), namespace_id=ns.id, resource_id="other_id")
    assert api.get(f"{base(ns)}/access-bindings/{binding.id}").data == data


def _binding_cases():
    def body(w, **change):
        role = w["roles"]["agent-reader"]
        return {"subjectKind": "identity", "subjectId": w["person"].id, "roleId": role.id,
                "resourceKind": "agent", "resourceId": w["agent"].id, **change}

    def deleting_agent(w):
        agent = AgentFactory(namespace=w["ns"])
        agent.status = AgentStatus.DELETING
        agent.save(update_fields=["status"])
        return agent

    return [
        pytest.param(lambda w: body(w, subjectKind="group"), "INVALID_VALUE", "/subjectKind", id="group-subject"),
        pytest.param(lambda w: body(w, subjectId="prn_missing"), "INVALID_VALUE", "/subjectId",
                     id="unknown-subject"),
        pytest.param(lambda w: body(w, subjectId=service_principal("installation-bot").id), "INVALID_VALUE",
                     "/subjectId", id="installation-service-principal"),
        pytest.param(lambda w: body(w, subjectId=service_principal("foreign", w["other"]).id), "INVALID_VALUE",
                     "/subjectId", id="foreign-service-principal"),
        pytest.param(lambda w: body(w, subjectId=AgentFactory(namespace=w["other"]).service_principal.id),
                     "INVALID_VALUE", "/subjectId", id="foreign-agent-principal"),
        pytest.param(lambda w: body(w, subjectId=deleting_agent(w).service_principal.id), "INVALID_VALUE",
                     "/subjectId", id="deleting-agent-principal"),
        pytest.param(lambda w: body(w, roleId=MISSING_ROLE), "INVALID_VALUE", "/roleId", id="unknown-role"),
        pytest.param(lambda w: body(w, roleId=make_role(w["other"], "read:agent").id), "INVALID_VALUE", "/roleId",
                     id="foreign-role"),
        pytest.param(lambda w: body(w, roleId=make_role(w["ns"], "read:agent", system=True).id), "INVALID_VALUE",
                     "/roleId", id="system-role"),
        pytest.param(lambda w: body(w, roleId=Role.objects.get(name=ADMINISTRATOR_ROLE_NAME).id),
                     "INVALID_VALUE", "/roleId", id="installation-role"),
        pytest.param(lambda w: body(w, roleId=make_role(w["ns"], "read:agent", "create:agent").id),
                     "INVALID_VALUE", "/roleId", id="role-with-create"),
        pytest.param(lambda w: body(w, roleId=make_role(w["ns"], "read:secret").id), "INVALID_VALUE", "/roleId",
                     id="role-without-target-kind"),
        pytest.param(lambda w: body(w, roleId=make_role(w["ns"], "read:agent_revision").id), "INVALID_VALUE",
                     "/roleId", id="revision-role-on-agent"),
        pytest.param(lambda w: body(w, resourceKind="installation", resourceId="ins_x"), "INVALID_VALUE",
                     "/resourceKind", id="installation-target"),
        pytest.param(lambda w: body(w, resourceKind="planet"), "INVALID_VALUE", "/resourceKind",
                     id="unknown-kind"),
        pytest.param(lambda w: body(w, resourceKind="*", resourceId="*"), "INVALID_VALUE", "/resourceKind",
                     id="wildcard-target"),
        pytest.param(lambda w: body(w, resourceKind="preset", resourceId="pre_x"), "INVALID_VALUE", "/resourceId",
                     id="preset-target-missing"),
        pytest.param(lambda w: body(w, resourceId="agt_missing"), "INVALID_VALUE", "/resourceId",
                     id="missing-agent"),
        pytest.param(lambda w: body(w, resourceId=AgentFactory(namespace=w["other"]).id), "INVALID_VALUE",
                     "/resourceId", id="foreign-agent"),
        pytest.param(lambda w: body(w, resourceId=deleting_agent(w).id), "INVALID_VALUE", "/resourceId",
                     id="deleting-agent"),
        pytest.param(lambda w: body(w, resourceKind="namespace", resourceId=w["other"].id,
                                    roleId=make_role(w["ns"], "read:namespace").id),
                     "INVALID_VALUE", "/resourceId", id="other-namespace-target"),
        pytest.param(lambda w: body(w, resourceKind="configuration",
                                    resourceId=ConfigurationFactory(namespace=w["other"]).id,
                                    roleId=make_role(w["ns"], "read:configuration").id),
                     "INVALID_VALUE", "/resourceId", id="foreign-configuration"),
        pytest.param(lambda w: body(w, resourceKind="secret",
                                    resourceId=SecretFactory(namespace=w["ns"], owner_agent=w["agent"],
                                                             purpose="gateway").id,
                                    roleId=make_role(w["ns"], "read:secret").id),
                     "INVALID_VALUE", "/resourceId", id="runtime-credential"),
        pytest.param(lambda w: body(w, resourceKind="agent_revision", resourceId="rev_missing",
                                    roleId=make_role(w["ns"], "read:agent_revision").id),
                     "INVALID_VALUE", "/resourceId", id="missing-revision"),
        pytest.param(lambda w: {k: v for k, v in body(w).items() if k != "resourceId"}, "REQUIRED",
                     "/resourceId", id="missing-resource-id"),
        pytest.param(lambda w: {k: v for k, v in body(w).items() if k != "subjectKind"}, "REQUIRED",
                     "/subjectKind", id="missing-subject-kind"),
        pytest.param(lambda w: body(w, groupId="grp_x"), "UNKNOWN_FIELD", "/groupId", id="group-field"),
        pytest.param(lambda w: body(w, resourceId=None), "INVALID_TYPE", "/resourceId", id="null-resource"),
        pytest.param(lambda w: body(w, roleId=["role_x"]), "INVALID_TYPE", "/roleId", id="list-role"),
    ]


@pytest.mark.parametrize(("make_body", "code", "path"), _binding_cases())
def test_create_binding_rejects_bad_input_and_changes_nothing(api, world, make_body, code, path):
    world["roles"] = {"agent-reader": make_role(world["ns"], "read:agent", name="agent-reader")}
    body = make_body(world)
    before = snapshot()
    response = api.post(f"{base(world['ns'])}/access-bindings", body)
    assert response.status == 400, response.body
    assert response.error_code == "INVALID_REQUEST"
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert snapshot() == before


def test_duplicate_binding_conflicts(api, world):
    ns = world["ns"]
    role = make_role(ns, "read:agent")
    body = {"subjectKind": "identity", "subjectId": world["person"].id, "roleId": role.id,
            "resourceKind": "agent", "resourceId": world["agent"].id}
    assert api.post(f"{base(ns)}/access-bindings", body).status == 201
    before = snapshot()
    response = api.post(f"{base(ns)}/access-bindings", body)
    assert response.status == 409
    assert response.error_code == "RESOURCE_CONFLICT"
    assert snapshot() == before


def test_binding_creation_needs_read_on_the_exact_target(world):
    ns = world["ns"]
    admin = human("policy-admin")
    grant(admin, "administer:installation")
    grant(admin, "read:namespace", namespace=ns)
    client = ApiClient(None)
    client.client.force_login(admin.user)
    role = make_role(ns, "read:agent")
    body = {"subjectKind": "identity", "subjectId": world["person"].id, "roleId": role.id,
            "resourceKind": "agent", "resourceId": world["agent"].id}
    before = snapshot()
    response = client.post(f"{base(ns)}/access-bindings", body)
    assert response.status == 403
    assert AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL, actor_id=admin.id,
                                     resource_id=world["agent"].id).count() == 1
    assert snapshot() == unchanged_but_one_denial(before)
    grant(admin, "read:agent", namespace=ns, resource_kind="agent", resource_id=world["agent"].id)
    assert client.post(f"{base(ns)}/access-bindings", body).status == 201


def test_list_bindings_of_the_namespace_only(api, world):
    ns = world["ns"]
    role = make_role(ns, "read:agent")
    exact = AccessBinding.objects.create(principal=world["person"], role=role, namespace=ns, resource_kind="agent",
                                         resource_id=world["agent"].id)
    broad = AccessBinding.objects.create(principal=world["ns_sp"], role=role, namespace=ns)
    grant(world["person"], "read:agent", namespace=world["other"])
    grant(world["person"], "read:installation")
    response = api.get(f"{base(ns)}/access-bindings")
    assert response.status == 200
    assert [b["id"] for b in response.data["accessBindings"]] == [exact.id, broad.id]
    assert response.data["accessBindings"][1]["resourceKind"] is None
    assert response.data["accessBindings"][1]["resourceId"] is None
    assert response.data["accessBindings"][1]["subjectKind"] == "identity"


def test_get_binding_of_another_namespace_is_404(api, world):
    other_binding = grant(world["person"], "read:agent", namespace=world["other"])
    assert api.get(f"{base(world['ns'])}/access-bindings/{other_binding.id}").status == 404
    before = snapshot()
    assert api.delete(f"{base(world['ns'])}/access-bindings/{other_binding.id}").status == 404
    assert api.delete(f"{base(world['ns'])}/access-bindings/bnd_missing").status == 404
    assert snapshot() == before


def test_delete_binding_revokes_the_grant(api, world):
    ns = world["ns"]
    role = make_role(ns, "read:agent")
    body = {"subjectKind": "identity", "subjectId": world["person"].id, "roleId": role.id,
            "resourceKind": "agent", "resourceId": world["agent"].id}
    binding_id = api.post(f"{base(ns)}/access-bindings", body).data["id"]
    response = api.delete(f"{base(ns)}/access-bindings/{binding_id}")
    assert response.status == 204
    assert not AccessBinding.objects.filter(id=binding_id).exists()
    event = AuditEvent.objects.get(action="openclaw.iam.access_bindings.delete")
    assert (event.namespace_id, event.resource_id) == (ns.id, binding_id)
    assert not allowed(actor(world["person"]), Action.READ, Kind.AGENT, namespace_id=ns.id,
                       resource_id=world["agent"].id)
    # The Role is free again.
    assert api.delete(f"{base(ns)}/roles/{role.id}").status == 204


def test_namespace_wide_binding_is_not_deletable_here(api, world):
    broad = grant(world["person"], "read:agent", namespace=world["ns"])
    before = snapshot()
    response = api.delete(f"{base(world['ns'])}/access-bindings/{broad.id}")
    assert response.status == 409
    assert snapshot() == before


# -- Service principals ------------------------------------------------------------------


def test_create_service_principal(api, world):
    ns = world["ns"]
    response = api.post(f"{base(ns)}/service-principals", {"name": "deployer"})
    assert response.status == 201
    data = response.data
    assert set(data) == {"id", "name", "namespaceId"}
    assert data["id"].startswith("sp_")
    assert data["name"] == "deployer"
    assert data["namespaceId"] == ns.id
    principal = Principal.objects.get(id=data["id"])
    assert (principal.kind, principal.namespace_id, principal.agent_id) == ("service", ns.id, None)
    assert not principal.bindings.exists()
    event = AuditEvent.objects.get(action="openclaw.iam.service_principals.create")
    assert (event.namespace_id, event.resource_id) == (ns.id, principal.id)
    assert api.get(f"{base(ns)}/service-principals/{principal.id}").data == data
    # A key can then be issued for it, scoped to the Namespace.
    assert api.post("/api/auth/service-keys", {"servicePrincipalId": principal.id, "namespaceId": ns.id,
                                               "name": "deploy"}).status == 201


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        pytest.param({}, "REQUIRED", "/name", id="missing-name"),
        pytest.param({"name": ""}, "INVALID_FORMAT", "/name", id="empty-name"),
        pytest.param({"name": "bot "}, "INVALID_FORMAT", "/name", id="trailing-space"),
        pytest.param({"name": 3}, "INVALID_TYPE", "/name", id="int-name"),
        pytest.param({"name": "bot", "namespaceId": "ns_x"}, "UNKNOWN_FIELD", "/namespaceId", id="unknown-field"),
    ],
)
def test_create_service_principal_rejects_bad_input(api, world, body, code, path):
    before = snapshot()
    response = api.post(f"{base(world['ns'])}/service-principals", body)
    assert response.status == 400
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert snapshot() == before


def test_list_service_principals_of_the_namespace_only(api, world):
    ns = world["ns"]
    second = service_principal("second", ns)
    service_principal("foreign", world["other"])
    response = api.get(f"{base(ns)}/service-principals")
    assert response.status == 200
    # Agent-owned, Installation, foreign principals and people are not listed.
    assert [p["id"] for p in response.data["servicePrincipals"]] == [world["ns_sp"].id, second.id]


@pytest.mark.parametrize("which", ["agent_sp", "person", "foreign", "installation"])
def test_get_other_principals_is_404(api, world, bootstrap, which):
    principal_id = {
        "agent_sp": lambda: world["agent_sp"].id,
        "person": lambda: world["person"].id,
        "foreign": lambda: service_principal("foreign", world["other"]).id,
        "installation": lambda: bootstrap.key.principal_id,
    }[which]()
    assert api.get(f"{base(world['ns'])}/service-principals/{principal_id}").status == 404


# -- Authorization over every route ------------------------------------------------------

ROUTES = [
    pytest.param("GET", "roles", None, id="list-roles"),
    pytest.param("POST", "roles", {"name": "r", "permissions": [_perm("read", "agent")]}, id="create-role"),
    pytest.param("GET", "roles/{role}", None, id="get-role"),
    pytest.param("DELETE", "roles/{role}", None, id="delete-role"),
    pytest.param("GET", "access-bindings", None, id="list-bindings"),
    pytest.param("POST", "access-bindings", "binding", id="create-binding"),
    pytest.param("GET", "access-bindings/{binding}", None, id="get-binding"),
    pytest.param("DELETE", "access-bindings/{binding}", None, id="delete-binding"),
    pytest.param("GET", "service-principals", None, id="list-service-principals"),
    pytest.param("POST", "service-principals", {"name": "bot"}, id="create-service-principal"),
    pytest.param("GET", "service-principals/{sp}", None, id="get-service-principal"),
]


def _route(world: dict[str, Any], method: str, suffix: str, body: Any) -> tuple[str, Any]:
    ns = world["ns"]
    role = make_role(ns, "read:agent")
    spare = make_role(ns, "read:secret")
    binding = AccessBinding.objects.create(principal=world["person"], role=role, namespace=ns,
                                           resource_kind="agent", resource_id=world["agent"].id)
    path = f"{base(ns)}/" + suffix.format(role=spare.id, binding=binding.id, sp=world["ns_sp"].id)
    if body == "binding":
        body = {"subjectKind": "identity", "subjectId": world["ns_sp"].id, "roleId": role.id,
                "resourceKind": "agent", "resourceId": world["agent"].id}
    return path, body


def _administrator_without_namespace_read(world):
    person = human("installation-admin")
    grant(person, "administer:installation", "read:agent", "read:secret")
    return person, None


def _namespace_reader_without_administer(world):
    person = human("namespace-reader")
    grant(person, "read:namespace", "read:agent", "read:installation")
    return person, None


def _namespace_key(world):
    """A key scoped to the Namespace whose principal builds everything there (Developer bound on
    it) but does not administer it: no ``administer:namespace``, and ``installation:administer``
    is out of a Namespace key's scope."""
    bot = service_principal("ns-developer", world["ns"])
    AccessBinding.objects.create(principal=bot, role=Role.objects.get(name=DEVELOPER, namespace__isnull=True),
                                 namespace=world["ns"])
    return bot, key_for(bot, namespace=world["ns"])


@pytest.mark.parametrize("make_caller", [
    pytest.param(_administrator_without_namespace_read, id="administer-without-namespace-read"),
    pytest.param(_namespace_reader_without_administer, id="namespace-read-without-administer"),
    pytest.param(_namespace_key, id="namespace-scoped-key"),
])
@pytest.mark.parametrize(("method", "suffix", "body"), ROUTES)
def test_every_route_needs_administer_and_namespace_read(world, make_caller, method, suffix, body):
    principal, key = make_caller(world)
    client = ApiClient(key)
    if key is None:
        client.client.force_login(principal.user)
    path, body = _route(world, method, suffix, body)
    before = snapshot()
    response = client.request(method, path, body)
    assert response.status == 403
    assert response.error_code == "FORBIDDEN"
    assert AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL, actor_id=principal.id).count() == 1
    assert snapshot() == unchanged_but_one_denial(before)


@pytest.mark.parametrize(("method", "suffix", "body"), ROUTES)
def test_every_route_is_401_without_credentials(world, anon_api, method, suffix, body):
    path, body = _route(world, method, suffix, body)
    before = snapshot()
    response = anon_api.request(method, path, body)
    assert response.status == 401
    assert snapshot() == before


@pytest.mark.parametrize(("method", "suffix", "body"), ROUTES)
def test_every_route_is_404_for_a_missing_or_deleted_namespace(api, world, method, suffix, body):
    path, body = _route(world, method, suffix, body)
    tombstone = NamespaceFactory()
    tombstone.deleted_at = tombstone.created_at
    tombstone.save(update_fields=["deleted_at"])
    for namespace_id in (MISSING_NS, tombstone.id):
        before = snapshot()
        response = api.request(method, path.replace(world["ns"].id, namespace_id), body)
        assert response.status == 404
        assert snapshot() == before


@pytest.mark.parametrize(("method", "suffix", "body"), ROUTES)
def test_every_route_allows_an_administrator(api, world, method, suffix, body):
    path, body = _route(world, method, suffix, body)
    response = api.request(method, path, body)
    assert response.status in (200, 201, 204)


def test_a_signed_in_administrator_manages_policy(world, bootstrap):
    person = Principal.objects.get(user__username=bootstrap.admin_username)
    client = ApiClient(None)
    client.client.force_login(person.user)
    response = client.post(f"{base(world['ns'])}/roles", {"name": "r", "permissions": [_perm("read", "agent")]})
    assert response.status == 201
    assert AuditEvent.objects.get(action="openclaw.iam.roles.create").actor_id == person.id
