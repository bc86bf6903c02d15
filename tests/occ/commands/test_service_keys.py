from __future__ import annotations

import pytest

from occ.commands.base import build, parse
from occ.commands.service_keys import (
    EXPIRES_IN_DEFAULT,
    EXPIRES_IN_MAX,
    EXPIRES_IN_MIN,
    KEY_NAME_MAX,
    ServiceKeyCreate,
)
from occ.errors import InvalidRequest

SP = "sp_1"
NS = "ns_00000000-0000-4000-8000-000000000000"


def refused(data) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        parse(ServiceKeyCreate, data)
    return caught.value


def test_the_wire_shape_is_camel_case_and_expiry_defaults_to_thirty_days():
    command = parse(ServiceKeyCreate, {"servicePrincipalId": SP, "namespaceId": NS, "name": "ci"})
    assert (command.service_principal_id, command.namespace_id, command.name) == (SP, NS, "ci")
    assert command.expires_in is None
    assert command.lifetime_seconds == EXPIRES_IN_DEFAULT
    assert build(ServiceKeyCreate, service_principal_id=SP, name="k", expires_in=EXPIRES_IN_MIN).lifetime_seconds \
        == EXPIRES_IN_MIN


@pytest.mark.parametrize(("value", "ok"), [
    (EXPIRES_IN_MIN, True), (EXPIRES_IN_MAX, True), (EXPIRES_IN_MIN - 1, False), (EXPIRES_IN_MAX + 1, False),
    (0, False), (-86400, False),
])
def test_expiry_bounds(value, ok):
    data = {"servicePrincipalId": SP, "name": "k", "expiresIn": value}
    if ok:
        assert parse(ServiceKeyCreate, data).lifetime_seconds == value
    else:
        error = refused(data)
        assert [d.as_wire() for d in error.details] == [{"code": "INVALID_VALUE", "path": "/expiresIn"}]
        assert error.message == "expiresIn must be between 86400 (1 day) and 31536000 (365 days) seconds."


@pytest.mark.parametrize("value", ["86400", True, 86400.5])
def test_expiry_is_an_exact_integer(value):
    error = refused({"servicePrincipalId": SP, "name": "k", "expiresIn": value})
    assert [d.as_wire() for d in error.details] == [{"code": "INVALID_TYPE", "path": "/expiresIn"}]


@pytest.mark.parametrize(("name", "code"), [
    ("k", None), ("k" * KEY_NAME_MAX, None), ("é" * KEY_NAME_MAX, None), ("a b", None),
    ("k" * (KEY_NAME_MAX + 1), "TOO_LONG"), ("k" * 801, "TOO_LONG"), ("", "INVALID_FORMAT"),
    (" ", "INVALID_FORMAT"), ("tab\t", "INVALID_FORMAT"), ("x\u007f", "INVALID_FORMAT"), ("\ud800", "INVALID_VALUE"),
    ("ci\u200bkey", "INVALID_FORMAT"), ("\u202eyek", "INVALID_FORMAT"),
])
def test_key_name_rules(name, code):
    data = {"servicePrincipalId": SP, "name": name}
    if code is None:
        assert parse(ServiceKeyCreate, data).name == name
    else:
        error = refused(data)
        assert [d.as_wire() for d in error.details] == [{"code": code, "path": "/name"}]
        # A lone surrogate is refused before the field's own rule, by the one rule for all text.
        assert error.message.startswith("Text must be valid Unicode" if name == "\ud800" else "Key name ")


def test_too_long_name_says_the_bound():
    assert refused({"servicePrincipalId": SP, "name": "k" * 33}).message == "Key name must be at most 32 characters."


@pytest.mark.parametrize(("data", "path", "code"), [
    ({"name": "k"}, "/servicePrincipalId", "REQUIRED"),
    ({"servicePrincipalId": SP}, "/name", "REQUIRED"),
    ({"servicePrincipalId": SP, "name": "k", "key": "x"}, "/key", "UNKNOWN_FIELD"),
    ({"servicePrincipalId": SP, "name": "k", "service_principal_id": SP}, "/service_principal_id", "UNKNOWN_FIELD"),
    ({"servicePrincipalId": 5, "name": "k"}, "/servicePrincipalId", "INVALID_TYPE"),
    ({"servicePrincipalId": SP, "name": "k", "namespaceId": 5}, "/namespaceId", "INVALID_TYPE"),
])
def test_shape_refusals_point_at_their_field(data, path, code):
    assert [d.as_wire() for d in refused(data).details] == [{"code": code, "path": path}]


def test_database_rules_refuse_at_the_commands_fields():
    command = build(ServiceKeyCreate, service_principal_id=SP, name="k")
    assert [d.as_wire() for d in command.not_a_key_principal().details] == [
        {"code": "INVALID_VALUE", "path": "/servicePrincipalId"}]
    assert [d.as_wire() for d in command.not_the_principal_scope().details] == [
        {"code": "INVALID_VALUE", "path": "/namespaceId"}]
