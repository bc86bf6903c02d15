"""A service's refusal lands on the form field that filled the place it names, one way for every
console form (``console.forms.base.CommandForm``: ``places``/``field_of`` over Python names), and
no table maps JSON pointers to fields anywhere in the console."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from console.forms.access import AccountForm, BindingForm, RoleForm, ServiceKeyForm, ServicePrincipalForm
from console.forms.posted import NamespaceForm, SecretCreateForm, SecretValueForm
from occ.commands.accounts import AccountCreate
from occ.commands.iam import AccessBindingCreate, RoleCreate, ServicePrincipalCreate
from occ.commands.namespaces import NamespaceCreate
from occ.commands.secrets import SecretCreate, SecretValueUpdate
from occ.commands.service_keys import ServiceKeyCreate
from occ.errors import Detail, InvalidRequest
from occ.selectors.access import Choice

CONSOLE = Path(__file__).resolve().parents[2] / "console"
ROLES = [Choice("role_a", "Admin")]
ACCOUNT = {"username": "ann", "password": "a long password", "role": "role_a"}
BINDING = {"subject": "usr_a", "role": "role_a", "target": "namespace:ns_a"}
ROLE = {"name": "Readers", "permissions": [RoleForm.base_fields["permissions"].choices[0][1][0][0]]}


def binding_form() -> BindingForm:
    return BindingForm(BINDING, subjects=[Choice("usr_a", "Ann")], roles=ROLES,
                       targets=[Choice("namespace:ns_a", "The Namespace")])


def pointer_tables(source: str) -> list[int]:
    """The lines of dict literals whose keys are JSON pointers (``{"/name": "name"}``)."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Dict)
            and any(isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.startswith("/")
                    for key in node.keys)]


def test_the_check_finds_a_pointer_table():
    assert pointer_tables('FIELDS = {"/name": "name"}\nrefuse(form, exc, {"/roleId": "role"})\n') == [1, 2]
    assert pointer_tables('PLACES = {"name": "name", "role_id": "role"}\nURL = "/console/"\n') == []


def test_no_console_module_maps_json_pointers_to_fields():
    found = {f"{path.relative_to(CONSOLE.parent)}:{line}": None for path in sorted(CONSOLE.rglob("*.py"))
             for line in pointer_tables(path.read_text())}
    assert not found, f"map a refusal with CommandForm.places / field_of, not a pointer table: {list(found)}"


def refused(*paths: str) -> InvalidRequest:
    return InvalidRequest("That is not allowed.", details=[Detail("INVALID_VALUE", path) for path in paths])


@pytest.mark.parametrize(("form", "command", "path", "field"), [
    pytest.param(AccountForm(ACCOUNT, roles=ROLES, namespaces=[]), AccountCreate, "/roleId", "role", id="account-role"),
    pytest.param(AccountForm(ACCOUNT, roles=ROLES, namespaces=[]), AccountCreate, "/username", "username",
                 id="account-username"),
    pytest.param(binding_form(), AccessBindingCreate, "/subjectId",
                 "subject", id="binding-subject"),
    pytest.param(binding_form(), AccessBindingCreate, "/resourceId",
                 "target", id="binding-resource"),
    pytest.param(RoleForm(ROLE), RoleCreate, "/permissions/0/action", "permissions", id="role-permission"),
    pytest.param(ServicePrincipalForm({"name": "CI"}), ServicePrincipalCreate, "/name", "name", id="principal-name"),
    pytest.param(ServiceKeyForm({"name": "ci", "expires_in_days": "30"}), ServiceKeyCreate, "/expiresIn",
                 "expires_in_days", id="key-expiry"),
    pytest.param(SecretCreateForm({}), SecretCreate, "/value", "value", id="secret-value"),
    pytest.param(SecretValueForm({}), SecretValueUpdate, "/value", "value", id="secret-new-value"),
    pytest.param(NamespaceForm({}), NamespaceCreate, "/name", "name", id="namespace-name"),
])
def test_a_refusal_lands_on_the_field_that_filled_its_place(form, command, path, field):
    assert form.is_valid(), form.errors
    form.refuse(refused(path), command)
    assert form.errors[field] == ["That is not allowed."]
    assert "__all__" not in form.errors


def test_two_places_of_one_field_give_its_message_once_and_an_unknown_place_goes_to_the_form():
    form = binding_form()
    assert form.is_valid(), form.errors
    form.refuse(refused("/resourceKind", "/resourceId", "/subjectKind"), AccessBindingCreate)
    assert form.errors["target"] == ["That is not allowed."]
    assert form.errors["__all__"] == ["That is not allowed."]
