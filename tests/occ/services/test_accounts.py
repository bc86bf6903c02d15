from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError

from occ.commands.accounts import AccountCreate
from occ.commands.base import build
from occ.errors import Conflict, DependencyUnavailable, InvalidRequest
from occ.iam.actor import Source
from occ.models import AccessBinding, AuditEvent, Principal, Role
from occ.services.accounts import account_create
from occ.services.bootstrap import ADMINISTRATOR_ROLE_NAME
from tests.factories import NamespaceFactory, actor

PASSWORD = "tidal-ochre-lantern-57"


def create(by, **fields):
    return account_create(actor=by, command=build(AccountCreate, **fields))


@pytest.fixture
def admin_role(bootstrap) -> Role:
    return Role.objects.get(name=ADMINISTRATOR_ROLE_NAME)


def test_account_is_a_user_a_principal_and_one_installation_binding(admin_actor, admin_role):
    account = create(admin_actor, username="jo", password=PASSWORD, role_id=admin_role.id, name="Jo")
    user = get_user_model().objects.get(username="jo")
    assert account.user_id == str(user.pk)
    assert account.username == "jo"
    assert account.principal.user_id == user.pk
    assert account.principal.kind == "human"
    assert list(AccessBinding.objects.filter(principal=account.principal).values_list(
        "role_id", "namespace_id", "resource_id")) == [(admin_role.id, None, None)]


def test_console_entry_point_is_recorded(bootstrap, admin_role):
    person = Principal.objects.get(user__username=bootstrap.admin_username)
    console = actor(person)
    console.source = Source.CONSOLE
    create(console, username="jo", password=PASSWORD, role_id=admin_role.id)
    event = AuditEvent.objects.get(action="openclaw.accounts.create")
    assert event.actor_id == person.id
    assert event.details["__occAuditMetadata"]["source"] == "console"


def test_audit_failure_creates_no_user(admin_actor, admin_role, monkeypatch):
    users = get_user_model().objects.count()
    monkeypatch.setattr(AuditEvent.objects, "create", lambda **kw: (_ for _ in ()).throw(DatabaseError("down")))
    with pytest.raises(DependencyUnavailable):
        create(admin_actor, username="jo", password=PASSWORD, role_id=admin_role.id)
    assert get_user_model().objects.count() == users
    assert not Principal.objects.filter(name="jo").exists()


def test_duplicate_username_is_case_insensitive(admin_actor, admin_role):
    create(admin_actor, username="Jo", password=PASSWORD, role_id=admin_role.id)
    with pytest.raises(Conflict):
        create(admin_actor, username="jo", password=PASSWORD, role_id=admin_role.id)


@pytest.mark.parametrize("password", ["password1234", "qwertyuiop123"])
def test_a_weak_password_is_refused_at_password_without_repeating_it(admin_actor, admin_role, password):
    users = get_user_model().objects.count()
    with pytest.raises(InvalidRequest) as caught:
        create(admin_actor, username="newbie", password=password, role_id=admin_role.id)
    assert [d.as_wire() for d in caught.value.details] == [{"code": "INVALID_VALUE", "path": "/password"}]
    assert caught.value.message.startswith("Choose a stronger password. ")
    assert password not in caught.value.message
    assert get_user_model().objects.count() == users


def test_a_namespace_role_is_refused_at_role_id(admin_actor, bootstrap):
    role = Role.objects.create(namespace=NamespaceFactory(), name="ns-role", permissions=["read:agent"])
    with pytest.raises(InvalidRequest) as caught:
        create(admin_actor, username="newbie", password=PASSWORD, role_id=role.id)
    assert [d.as_wire() for d in caught.value.details] == [{"code": "INVALID_VALUE", "path": "/roleId"}]
