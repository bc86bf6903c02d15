from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import DatabaseError
from django.utils import timezone

from occ.commands.base import build
from occ.commands.service_keys import EXPIRES_IN_DEFAULT, ServiceKeyCreate
from occ.errors import DependencyUnavailable, Forbidden, NotFound
from occ.iam.actor import Source
from occ.iam.keys import actor_for_token, digest
from occ.models import AuditEvent, Principal, ServiceKey
from occ.services.service_keys import service_key_create, service_key_revoke
from tests.factories import NamespaceFactory, actor, grant, service_principal


def issue(by, **fields):
    return service_key_create(actor=by, command=build(ServiceKeyCreate, **fields))


def test_create_stores_only_a_digest_and_the_token_authenticates(admin_actor):
    principal = service_principal("automation")
    issued = issue(admin_actor, service_principal_id=principal.id, name="ci")
    record = ServiceKey.objects.get(id=issued.record.id)
    assert record.digest == digest(issued.token)
    assert issued.token not in {record.digest, record.name, record.id}
    assert timezone.now() + timedelta(seconds=EXPIRES_IN_DEFAULT - 60) < record.expires_at
    authenticated = actor_for_token(issued.token)
    assert authenticated is not None
    assert (authenticated.id, authenticated.key_id, authenticated.key_namespace_id) == (principal.id, record.id, None)


def test_namespace_key_is_scoped_to_its_namespace(admin_actor):
    namespace = NamespaceFactory()
    principal = service_principal("ns-bot", namespace)
    issued = issue(admin_actor, service_principal_id=principal.id, name="k", namespace_id=namespace.id)
    assert actor_for_token(issued.token).scope_namespace_id == namespace.id


def test_audit_failure_rolls_back_the_key(admin_actor, monkeypatch):
    principal = service_principal("automation")

    def broken(**kwargs):
        raise DatabaseError("audit down")

    monkeypatch.setattr(AuditEvent.objects, "create", broken)
    with pytest.raises(DependencyUnavailable):
        issue(admin_actor, service_principal_id=principal.id, name="ci")
    assert not ServiceKey.objects.filter(principal=principal).exists()


def test_revoke_audit_failure_keeps_the_key(admin_actor, bootstrap, monkeypatch):
    monkeypatch.setattr(AuditEvent.objects, "create", lambda **kw: (_ for _ in ()).throw(DatabaseError("down")))
    with pytest.raises(DependencyUnavailable):
        service_key_revoke(actor=admin_actor, key_id=bootstrap.key.id)
    assert ServiceKey.objects.filter(id=bootstrap.key.id).exists()


def test_audit_carries_the_entry_point_and_no_secret(bootstrap):
    person = Principal.objects.get(user__username=bootstrap.admin_username)
    console = actor(person)
    console.source = Source.CONSOLE
    principal = service_principal("automation")
    issued = issue(console, service_principal_id=principal.id, name="ci")
    event = AuditEvent.objects.get(action="openclaw.service_keys.create")
    assert event.details["__occAuditMetadata"]["source"] == "console"
    assert issued.token not in json.dumps(event.details)


def test_expired_key_stops_authenticating(admin_actor):
    principal = service_principal("automation")
    issued = issue(admin_actor, service_principal_id=principal.id, name="ci")
    ServiceKey.objects.filter(id=issued.record.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert actor_for_token(issued.token) is None


def test_revoke_deletes_the_record_and_keeps_the_principal(admin_actor):
    principal = service_principal("automation")
    issued = issue(admin_actor, service_principal_id=principal.id, name="ci")
    assert service_key_revoke(actor=admin_actor, key_id=issued.record.id) == issued.record.id
    assert actor_for_token(issued.token) is None
    assert Principal.objects.filter(id=principal.id).exists()
    with pytest.raises(NotFound):
        service_key_revoke(actor=admin_actor, key_id=issued.record.id)


def test_principal_in_a_deleted_namespace_is_not_found(admin_actor):
    namespace = NamespaceFactory(deleted_at=timezone.now())
    principal = service_principal("gone", namespace)
    with pytest.raises(NotFound):
        issue(admin_actor, service_principal_id=principal.id, name="k", namespace_id=namespace.id)
    assert not ServiceKey.objects.filter(principal=principal).exists()


def test_denial_names_installation_administer(bootstrap):
    bot = service_principal("reader")
    grant(bot, "read:installation")
    with pytest.raises(Forbidden) as caught:
        issue(actor(bot), service_principal_id=bot.id, name="k")
    assert (caught.value.denial.action, caught.value.denial.resource_kind) == ("administer", "installation")
