from __future__ import annotations

import pytest

from occ.commands.accounts import PASSWORD_MAX, PASSWORD_MIN, USERNAME_MAX, AccountCreate
from occ.commands.base import build, parse
from occ.errors import InvalidRequest

PASSWORD = "tidal-ochre-lantern-57"
ROLE = "role_00000000-0000-4000-8000-000000000000"


def body(**change):
    return {"username": "jo", "password": PASSWORD, "roleId": ROLE, **change}


def refused(data) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        parse(AccountCreate, data)
    return caught.value


def test_the_wire_shape_is_camel_case_and_the_name_defaults_to_the_username():
    command = parse(AccountCreate, body())
    assert (command.username, command.role_id, command.name, command.display_name) == ("jo", ROLE, None, "jo")
    assert build(AccountCreate, username="jo", password=PASSWORD, role_id=ROLE, name="Jo Doe").display_name == "Jo Doe"


@pytest.mark.parametrize(("password", "code"), [
    (PASSWORD, None), ("x" * PASSWORD_MIN, None), ("p" * PASSWORD_MAX, None),
    ("p" * (PASSWORD_MAX + 1), "TOO_LONG"), ("p" * 801, "TOO_LONG"), ("short-pass1", "INVALID_VALUE"),
    ("", "INVALID_VALUE"), (123456789012345, "INVALID_TYPE"),
])
def test_password_bounds(password, code):
    if code is None:
        assert parse(AccountCreate, body(password=password)).password == password
        return
    error = refused(body(password=password))
    assert [d.as_wire() for d in error.details] == [{"code": code, "path": "/password"}]
    assert not password or str(password) not in error.message


@pytest.mark.parametrize(("username", "code"), [
    ("jo", None), ("jo.doe+ops@example.com", None), ("é", None), ("u" * USERNAME_MAX, None),
    ("u" * (USERNAME_MAX + 1), "TOO_LONG"), ("", "INVALID_FORMAT"), ("a b", "INVALID_FORMAT"),
    ("a/b", "INVALID_FORMAT"), (None, "INVALID_TYPE"),
])
def test_username_rules(username, code):
    if code is None:
        assert parse(AccountCreate, body(username=username)).username == username
        return
    assert [d.as_wire() for d in refused(body(username=username)).details] == [{"code": code, "path": "/username"}]


@pytest.mark.parametrize(("change", "path", "code"), [
    ({"name": " padded"}, "/name", "INVALID_FORMAT"),
    ({"name": "n" * 201}, "/name", "TOO_LONG"),
    ({"email": "a@example.com"}, "/email", "UNKNOWN_FIELD"),
    ({"role_id": ROLE}, "/role_id", "UNKNOWN_FIELD"),
    ({"roleId": 5}, "/roleId", "INVALID_TYPE"),
])
def test_other_refusals_point_at_their_field(change, path, code):
    assert [d.as_wire() for d in refused(body(**change)).details] == [{"code": code, "path": path}]


def test_a_missing_field_is_required():
    error = refused({"username": "jo"})
    assert [d.as_wire() for d in error.details] == [{"code": "REQUIRED", "path": "/password"}]


def test_namespaces_need_a_role_and_are_named_once():
    namespaces = {"username": "jo", "password": "a-long-enough-password", "namespaceIds": ["ns_a"]}
    assert [d.as_wire() for d in refused(namespaces).details] == [{"code": "REQUIRED", "path": "/roleId"}]
    twice = {**namespaces, "roleId": "role_x", "namespaceIds": ["ns_a", "ns_a"]}
    assert [d.as_wire() for d in refused(twice).details] == [{"code": "INVALID_VALUE", "path": "/namespaceIds"}]


def test_database_and_configuration_rules_refuse_at_the_commands_fields():
    command = parse(AccountCreate, body())
    weak = command.weak_password(["This password is too common."])
    assert [d.as_wire() for d in weak.details] == [{"code": "INVALID_VALUE", "path": "/password"}]
    assert weak.message == "Choose a stronger password. This password is too common."
    assert [d.as_wire() for d in command.not_an_installation_role().details] == [
        {"code": "INVALID_VALUE", "path": "/roleId"}]
