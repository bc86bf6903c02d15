from __future__ import annotations

import pytest

from occ.commands.base import build, parse
from occ.commands.iam import (
    PERMISSIONS_MAX,
    ROLE_ACTIONS,
    AccessBindingCreate,
    Permission,
    RoleCreate,
    ServicePrincipalCreate,
)
from occ.errors import InvalidRequest


def refused(command, data) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        parse(command, data)
    return caught.value


def role(*pairs, name="r"):
    return {"name": name, "permissions": [{"action": a, "resourceKind": k} for a, k in pairs]}


@pytest.mark.parametrize(("pairs", "stored"), [
    ([("read", "agent")], ["read:agent"]),
    ([("operate", "secret"), ("read", "namespace"), ("read", "agent_revision")],
     ["operate:secret", "read:namespace", "read:agent_revision"]),
    ([("use", "agent"), ("read_logs", "agent"), ("create", "configuration")],
     ["use:agent", "read_logs:agent", "create:configuration"]),
])
def test_a_role_stores_its_pairs_in_order(pairs, stored):
    assert parse(RoleCreate, role(*pairs)).stored_permissions == stored


def test_every_grantable_pair_is_accepted_and_built_from_python_fields_too():
    pairs = [(a.value, k.value) for k, actions in ROLE_ACTIONS.items() for a in sorted(actions)]
    assert len(parse(RoleCreate, role(*pairs)).stored_permissions) == len(pairs) <= PERMISSIONS_MAX
    built = build(RoleCreate, name="r", permissions=[build(Permission, action="read", resource_kind="agent")])
    assert built.stored_permissions == ["read:agent"]


@pytest.mark.parametrize(("pairs", "path", "message"), [
    ([], "/permissions", "A Role needs at least one permission."),
    ([("read", "agent"), ("read", "agent")], "/permissions/1", "Permission 1 repeats an earlier permission."),
    ([("read", "Agent")], "/permissions/0/resourceKind",
     "Permission 0: the resource kind cannot be granted by a Namespace Role."),
    ([("READ", "agent")], "/permissions/0/action", "Permission 0: the action is not valid for its resource kind."),
    ([("administer", "installation")], "/permissions/0/resourceKind",
     "Permission 0: the resource kind cannot be granted by a Namespace Role."),
    ([("create", "namespace")], "/permissions/0/action",
     "Permission 0: the action is not valid for its resource kind."),
    ([("read", "agent"), ("operate", "configuration")], "/permissions/1/action",
     "Permission 1: the action is not valid for its resource kind."),
    ([("read", "")], "/permissions/0/resourceKind",
     "Permission 0: the resource kind cannot be granted by a Namespace Role."),
])
def test_a_bad_pair_is_refused_at_its_place(pairs, path, message):
    error = refused(RoleCreate, role(*pairs))
    assert [d.as_wire() for d in error.details] == [{"code": "INVALID_VALUE", "path": path}]
    assert error.message == message


@pytest.mark.parametrize(("data", "code", "path"), [
    ({"name": "r", "permissions": [{"action": "read", "resourceKind": "agent"}] * (PERMISSIONS_MAX + 1)},
     "TOO_LONG", "/permissions"),
    ({"name": "r", "permissions": [{"action": "read"}]}, "REQUIRED", "/permissions/0/resourceKind"),
    ({"name": "r", "permissions": [{"action": "read", "resourceKind": "agent", "scope": "x"}]},
     "UNKNOWN_FIELD", "/permissions/0/scope"),
    ({"name": "r", "permissions": [{"action": "read", "resourceKind": "agent", "resource_kind": "agent"}]},
     "UNKNOWN_FIELD", "/permissions/0/resource_kind"),
    ({"name": "r", "permissions": ["read:agent"]}, "INVALID_TYPE", "/permissions/0"),
    ({"name": "r", "permissions": {"action": "read"}}, "INVALID_TYPE", "/permissions"),
    ({"name": " r", "permissions": [{"action": "read", "resourceKind": "agent"}]}, "INVALID_FORMAT", "/name"),
    ({"name": "x" * 201, "permissions": [{"action": "read", "resourceKind": "agent"}]}, "TOO_LONG", "/name"),
])
def test_role_shape_refusals(data, code, path):
    assert {"code": code, "path": path} in [d.as_wire() for d in refused(RoleCreate, data).details]


BINDING = {"subjectKind": "identity", "subjectId": "prn_1", "roleId": "role_1", "resourceKind": "agent",
           "resourceId": "agt_1"}


def test_a_binding_names_its_subject_role_and_target():
    command = parse(AccessBindingCreate, BINDING)
    assert (command.subject_id, command.role_id, command.kind, command.resource_id) == (
        "prn_1", "role_1", "agent", "agt_1")


@pytest.mark.parametrize(("change", "code", "path", "message"), [
    ({"subjectKind": "group"}, "INVALID_VALUE", "/subjectKind", 'subjectKind must be "identity".'),
    ({"subjectKind": 1}, "INVALID_TYPE", "/subjectKind", None),
    ({"resourceKind": "installation"}, "INVALID_VALUE", "/resourceKind",
     "resourceKind must be a kind of resource inside a Namespace."),
    ({"resourceKind": "widget"}, "INVALID_VALUE", "/resourceKind", None),
    ({"resourceId": None}, "INVALID_TYPE", "/resourceId", None),
    ({"namespaceId": "ns_1"}, "UNKNOWN_FIELD", "/namespaceId", None),
])
def test_binding_refusals(change, code, path, message):
    error = refused(AccessBindingCreate, {**BINDING, **change})
    assert [d.as_wire() for d in error.details] == [{"code": code, "path": path}]
    if message is not None:
        assert error.message == message


def test_a_database_rule_refuses_at_the_wire_name_of_the_field():
    command = parse(AccessBindingCreate, BINDING)
    assert [d.as_wire() for d in command.refused("subject_id", "The subject does not exist.").details] == [
        {"code": "INVALID_VALUE", "path": "/subjectId"}]


@pytest.mark.parametrize(("name", "code"), [("bot", None), ("", "INVALID_FORMAT"), ("b" * 201, "TOO_LONG"),
                                            (5, "INVALID_TYPE")])
def test_service_principal_name(name, code):
    if code is None:
        assert parse(ServicePrincipalCreate, {"name": name}).name == name
    else:
        assert [d.as_wire() for d in refused(ServicePrincipalCreate, {"name": name}).details] == [
            {"code": code, "path": "/name"}]
