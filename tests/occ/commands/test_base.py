from __future__ import annotations

import pytest
from pydantic import ValidationError

from occ.commands.base import build, invalid_request, parse, place
from occ.commands.configurations import ConfigurationCreate
from occ.commands.provisioning import ProvisionCommand, ProvisionWithModelKey
from occ.commands.secrets import SecretCreate
from occ.errors import InvalidRequest

NS = "ns_00000000-0000-4000-8000-000000000000"
SEC = "sec_00000000-0000-4000-8000-000000000000"


def refused(command, data) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        parse(command, data)
    return caught.value


def test_each_problem_is_a_detail_with_its_json_pointer():
    error = refused(ConfigurationCreate, {
        "kind": "agent", "values": {}, "extra": 1,
        "secretBindings": {"A/B~C": {"source": {"kind": "secret", "namespaceId": NS, "id": SEC}}},
    })
    assert [d.as_wire() for d in error.details] == [
        {"code": "INVALID_FORMAT", "path": "/secretBindings/A~1B~0C"},  # a map key's own problem
        {"code": "UNKNOWN_FIELD", "path": "/extra"},
    ]
    assert error.message.startswith("The request has 2 problems; see details. First: A binding name must be")


def test_our_message_is_kept_and_pydantic_texts_are_not_shown():
    assert refused(SecretCreate, {"name": "n", "value": ""}).message == "The value must not be empty."
    missing = refused(SecretCreate, {"name": "n"})
    assert missing.message == "A required field is missing."
    assert [d.as_wire() for d in missing.details] == [{"code": "REQUIRED", "path": "/value"}]


def test_a_string_literal_given_another_type_is_invalid_type():
    error = refused(ConfigurationCreate, {"kind": 1, "values": {}})
    assert [d.as_wire() for d in error.details] == [{"code": "INVALID_TYPE", "path": "/kind"}]


def test_details_are_bounded_and_the_message_fits_the_wire():
    errors = [{"type": "missing", "loc": ("f", i), "msg": "x"} for i in range(40)]
    error = invalid_request(errors)
    assert len(error.details) == 32
    assert len(error.message) <= 256


def test_commands_read_camel_case_and_python_names_alike():
    wire = parse(ConfigurationCreate, {"kind": "agent", "values": {}, "secretBindings": {}})
    python = ConfigurationCreate(kind="agent", values={}, secret_bindings={})
    assert wire == python


def test_build_points_at_the_wire_names():
    with pytest.raises(InvalidRequest) as caught:
        build(ConfigurationCreate, kind="agent", values={}, secret_bindings=None)
    assert [d.as_wire() for d in caught.value.details] == [{"code": "INVALID_TYPE", "path": "/secretBindings"}]


def test_a_refused_value_never_appears_in_the_error_text():
    canary = "sk-canary-\x00-value"
    with pytest.raises(ValidationError) as caught:
        SecretCreate(name="n", value=canary)
    assert canary not in str(caught.value)
    assert canary not in refused(SecretCreate, {"name": "n", "value": canary}).message


@pytest.mark.parametrize(("command", "path", "expected"), [
    pytest.param(ProvisionCommand, "/name", ("name",), id="field"),
    pytest.param(ProvisionCommand, "/requestId", ("request_id",), id="wire-name"),
    pytest.param(ProvisionCommand, "/configuration/secretBindings/A~1B~0C/source/namespaceId",
                 ("configuration", "secret_bindings", "A/B~C", "source", "namespace_id"), id="through-a-map"),
    pytest.param(ProvisionCommand, "/configuration/values/agents/defaults/model",
                 ("configuration", "values", "agents", "defaults", "model"), id="inside-a-plain-value"),
    pytest.param(ProvisionCommand, "/pluginApprovers/0/id", ("plugin_approvers", "0", "id"), id="through-a-list"),
    pytest.param(ProvisionCommand, "/plugins/occ-plugin:a/toolDefaults/approval",
                 ("plugins", "occ-plugin:a", "tool_defaults", "approval"), id="a-key-named-like-a-field"),
    pytest.param(ProvisionWithModelKey, "/modelKey", ("model_key",), id="its-own-field"),
    pytest.param(ProvisionCommand, "/modelKey", ("modelKey",), id="not-a-field"),
    pytest.param(ProvisionCommand, "/harness_auth/source", ("harness_auth", "source"), id="python-name"),
    pytest.param(ProvisionCommand, "", (), id="the-whole-request"),
])
def test_a_pointer_is_placed_in_python_names(command, path, expected):
    assert place(command, path) == expected


def test_placing_inverts_the_pointer_of_a_refusal():
    error = refused(ProvisionCommand, {"requestId": "req_bad", "name": "", "configuration": {
        "kind": "agent", "values": {}, "secretBindings": {"TEAM": {"source": {"kind": "secret", "namespaceId": NS,
                                                                             "id": "nope"}}}}})
    assert [place(ProvisionCommand, d.path) for d in error.details] == [
        ("request_id",), ("name",), ("configuration", "secret_bindings", "TEAM", "source", "id"), ("harness_auth",)]
