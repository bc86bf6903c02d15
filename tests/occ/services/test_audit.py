"""Audit evidence: in the same transaction as the change, append-only, denials on their own."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction

from occ.models import AuditEvent, ControllerWork, Namespace
from occ.models.audit import AuditKind
from tests.conftest import is_postgres
from tests.factories import grant, key_for, service_principal


@pytest.fixture
def failing_audit(monkeypatch):
    def explode(*args, **kwargs):
        raise DatabaseError("audit table unavailable")

    monkeypatch.setattr(AuditEvent.objects, "create", explode)


def test_mutation_and_audit_commit_together(api):
    before = AuditEvent.objects.count()
    created = api.post("/namespaces", {"name": "audited"}).data
    events = AuditEvent.objects.filter(resource_id=created["id"])
    assert AuditEvent.objects.count() == before + 1
    event = events.get()
    assert event.kind == AuditKind.MUTATION
    assert event.action == "openclaw.namespaces.create"
    meta = event.details["__occAuditMetadata"]
    assert meta["requestId"].startswith("req_")
    assert meta["source"] == "api"


def test_audit_failure_rolls_back_the_change(api, failing_audit):
    before = (Namespace.objects.count(), ControllerWork.objects.count())
    response = api.post("/namespaces", {"name": "never"})
    assert response.status == 503
    assert response.error_code == "DEPENDENCY_UNAVAILABLE"
    assert (Namespace.objects.count(), ControllerWork.objects.count()) == before


def test_denial_is_audited_once_and_changes_nothing(bootstrap):
    from tests.conftest import ApiClient

    reader = service_principal("reader")
    grant(reader, "read:namespace")
    client = ApiClient(key_for(reader))
    before = (Namespace.objects.count(), AuditEvent.objects.count())
    response = client.post("/namespaces", {"name": "denied"})
    assert response.status == 403
    assert response.error_code == "FORBIDDEN"
    assert Namespace.objects.count() == before[0]
    assert AuditEvent.objects.count() == before[1] + 1
    denial = AuditEvent.objects.get(kind=AuditKind.AUTHORIZATION_DENIAL)
    assert denial.kind == AuditKind.AUTHORIZATION_DENIAL
    assert denial.actor_id == reader.id
    assert denial.outcome == "denied"


def test_denial_whose_audit_fails_answers_503(bootstrap, failing_audit):
    from tests.conftest import ApiClient

    reader = service_principal("reader2")
    response = ApiClient(key_for(reader)).post("/namespaces", {"name": "denied"})
    assert response.status == 503


def test_unauthenticated_and_invalid_requests_write_no_audit(api, anon_api):
    before = AuditEvent.objects.count()
    assert anon_api.post("/namespaces", {"name": "x"}).status == 401
    assert api.post("/namespaces", {"name": 1}).status == 400
    assert AuditEvent.objects.count() == before


def test_audit_rows_are_append_only_in_the_database(api):
    api.post("/namespaces", {"name": "immutable"})
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.update(action="rewritten")
    if is_postgres():
        with pytest.raises(DatabaseError), transaction.atomic():
            AuditEvent.objects.all()._raw_delete(AuditEvent.objects.db)
    assert not AuditEvent.objects.filter(action="rewritten").exists()


def test_audit_model_refuses_update(api):
    api.post("/namespaces", {"name": "immutable-model"})
    event = AuditEvent.objects.first()
    event.action = "changed"
    with pytest.raises(TypeError):
        event.save()
