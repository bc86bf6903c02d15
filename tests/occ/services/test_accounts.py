from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError

from occ.errors import Conflict, DependencyUnavailable, InvalidRequest
from occ.iam.actor import Source
from occ.models import AccessBinding, AuditEvent, Principal, Role
from occ.services.accounts import account_create, check_password, check_username
from occ.services.bootstrap import ADMINISTRATOR_ROLE_NAME
from tests.factories import actor

PASSWORD = "tidal-ochre-lantern-57"


@pytest.fixture
def admin_role(bootstrap) -> Role:
    return Role.objects.get(name=ADMINISTRATOR_ROLE_NAME)


def test_account_is_a_user_a_principal_and_one_installation_binding(admin_actor, admin_role):
    account = account_create(actor=admin_actor, username="jo", password=PASSWORD, role_id=admin_role.id, name="Jo")
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
    account_create(actor=console, username="jo", password=PASSWORD, role_id=admin_role.id)
    event = AuditEvent.objects.get(action="openclaw.accounts.create")
    assert event.actor_id == person.id
    assert event.details["__occAuditMetadata"]["source"] == "console"


def test_audit_failure_creates_no_user(admin_actor, admin_role, monkeypatch):
    users = get_user_model().objects.count()
    monkeypatch.setattr(AuditEvent.objects, "create", lambda **kw: (_ for _ in ()).throw(DatabaseError("down")))
    with pytest.raises(DependencyUnavailable):
        account_create(actor=admin_actor, username="jo", password=PASSWORD, role_id=admin_role.id)
    assert get_user_model().objects.count() == users
    assert not Principal.objects.filter(name="jo").exists()


def test_duplicate_username_is_case_insensitive(admin_actor, admin_role):
    account_create(actor=admin_actor, username="Jo", password=PASSWORD, role_id=admin_role.id)
    with pytest.raises(Conflict):
        account_create(actor=admin_actor, username="jo", password=PASSWORD, role_id=admin_role.id)


@pytest.mark.parametrize(("password", "ok"), [
    (PASSWORD, True), ("x" * 12 + "Q7", True), ("p" * 128, True), ("p" * 129, False), ("short-pass1", False),
    ("password1234", False),
])
def test_check_password(db, password, ok):
    if ok:
        check_password(password, username="someone")
        return
    with pytest.raises(InvalidRequest) as caught:
        check_password(password, username="someone")
    assert password not in caught.value.message


@pytest.mark.parametrize(("username", "ok"), [
    ("jo", True), ("jo.doe+ops@example.com", True), ("é", True), ("u" * 150, True), ("u" * 151, False),
    ("", False), ("a b", False), ("a/b", False),
])
def test_check_username(username, ok):
    if ok:
        check_username(username)
    else:
        with pytest.raises(InvalidRequest):
            check_username(username)
