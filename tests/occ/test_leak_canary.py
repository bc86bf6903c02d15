"""Leak canary: a recognisable Secret value, stored through create and patch, must never
come back out — not in a response body or header, not in any database row other than the
driver's ciphertext (which must not contain it either), and not in any log line, SQL
included — across every Secrets route and its error paths."""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.core import serializers
from django.db import DatabaseError, connection
from django.test import Client

from occ.models import AuditEvent, ControllerWork, EncryptedSecretValue, Secret
from occ.services.secrets import secret_value_use
from tests.factories import NamespaceFactory, grant, key_for, service_principal

CANARY = f"canary-{uuid.uuid4()}"
PATCHED = f"{CANARY}-patched"


@dataclass
class Exchange:
    step: str
    status: int
    content: bytes
    headers: dict[str, str]


class Recorder:
    """Calls the API and keeps every raw response."""

    def __init__(self) -> None:
        self.client = Client()
        self.exchanges: list[Exchange] = []

    def call(self, step: str, method: str, path: str, *, key: str | None, body: Any = None,
             raw: bytes | None = None, expect: int) -> Any:
        data = raw if raw is not None else (json.dumps(body) if body is not None else "")
        headers = {"x-api-key": key} if key else {}
        response = self.client.generic(method, path, data=data, content_type="application/json", headers=headers)
        self.exchanges.append(Exchange(step, response.status_code, response.content, dict(response.items())))
        assert response.status_code == expect, (step, response.status_code, response.content)
        return json.loads(response.content) if response.content else None


@pytest.fixture
def all_logs_at_debug(caplog):
    """Every logger at DEBUG, SQL statements with their parameters included."""
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        caplog.set_level(logging.DEBUG, logger=name)
    forced = connection.force_debug_cursor
    connection.force_debug_cursor = True
    yield caplog
    connection.force_debug_cursor = forced


def every_row_as_text() -> str:
    """All rows of every table Django knows, serialized."""
    return "\n".join(serializers.serialize("json", model._default_manager.all()) for model in apps.get_models())


def test_secret_values_never_leak(api, admin_key, ready_namespace, all_logs_at_debug, settings, monkeypatch,
                                  django_capture_on_commit_callbacks):
    caplog = all_logs_at_debug
    ns = ready_namespace
    rec = Recorder()
    secrets = f"/namespaces/{ns.id}/secrets"
    not_ready = NamespaceFactory(status="provisioning")
    outsider = service_principal("outsider", namespace=ns)
    grant(outsider, "read:namespace", "read:secret", namespace=ns)
    outsider_key = key_for(outsider, namespace=ns)

    with django_capture_on_commit_callbacks(execute=True):
        created = rec.call("create", "POST", secrets, key=admin_key, body={"name": "canary", "value": CANARY},
                           expect=201)["data"]
        one = f"{secrets}/{created['id']}"
        stored = EncryptedSecretValue.objects.get(backend_name=Secret.objects.get(id=created["id"]).backend_name)
        assert CANARY not in stored.ciphertext
        rec.call("get", "GET", one, key=admin_key, expect=200)
        rec.call("list", "GET", secrets, key=admin_key, expect=200)
        rec.call("patch", "PATCH", one, key=admin_key, body={"value": PATCHED}, expect=200)
        stored.refresh_from_db()
        assert CANARY not in stored.ciphertext
        assert secret_value_use(secret=Secret.objects.get(id=created["id"]), consumer=lambda v: v) == PATCHED

        # Error paths, each carrying the canary in its body.
        rec.call("duplicate", "POST", secrets, key=admin_key, body={"name": "canary", "value": CANARY}, expect=409)
        rec.call("not-ready", "POST", f"/namespaces/{not_ready.id}/secrets", key=admin_key,
                 body={"name": "n", "value": CANARY}, expect=409)
        rec.call("nul", "POST", secrets, key=admin_key, body={"name": "n", "value": CANARY + "\x00"}, expect=400)
        rec.call("surrogate", "POST", secrets, key=admin_key, body={"name": "n", "value": CANARY + "\ud800"},
                 expect=400)
        rec.call("wrong-type", "POST", secrets, key=admin_key, body={"name": "n", "value": [CANARY]}, expect=400)
        rec.call("object-type", "PATCH", one, key=admin_key, body={"value": {"v": CANARY}}, expect=400)
        rec.call("unknown-field", "POST", secrets, key=admin_key, body={"name": "n", "value": CANARY, "x": CANARY},
                 expect=400)
        rec.call("truncated-json", "POST", secrets, key=admin_key,
                 raw=f'{{"name": "n", "value": "{CANARY}'.encode(), expect=400)
        rec.call("bad-name", "POST", secrets, key=admin_key, body={"name": " n", "value": CANARY}, expect=400)
        rec.call("oversize-body", "POST", secrets, key=admin_key, body={"name": "n", "value": CANARY * 2000},
                 expect=413)
        settings.OCC_API_BODY_LIMIT = 256 * 1024
        rec.call("oversize-value", "POST", secrets, key=admin_key, body={"name": "n", "value": CANARY * 2000},
                 expect=400)
        rec.call("denied-create", "POST", secrets, key=outsider_key, body={"name": "n", "value": CANARY},
                 expect=403)
        rec.call("denied-patch", "PATCH", one, key=outsider_key, body={"value": CANARY}, expect=403)
        rec.call("unauthenticated", "PATCH", one, key="not-a-key", body={"value": CANARY}, expect=401)
        rec.call("missing", "PATCH", f"{secrets}/sec_00000000-0000-4000-8000-000000000000", key=admin_key,
                 body={"value": CANARY}, expect=404)
        rec.call("rename", "PATCH", one, key=admin_key, body={"value": CANARY, "name": "x"}, expect=400)

        def failing_save(*args: Any, **kwargs: Any) -> None:
            raise DatabaseError("audit unavailable")

        monkeypatch.setattr(AuditEvent, "save", failing_save)
        rec.call("audit-down-create", "POST", secrets, key=admin_key, body={"name": "n2", "value": CANARY},
                 expect=503)
        rec.call("audit-down-patch", "PATCH", one, key=admin_key, body={"value": CANARY}, expect=503)
        monkeypatch.undo()

        rec.call("delete", "DELETE", one, key=admin_key, expect=204)
        rec.call("delete-again", "DELETE", one, key=admin_key, expect=404)

    # The capture was live: SQL went to the log with its parameters (the ciphertext included).
    assert any(r.name == "django.db.backends" for r in caplog.records)
    assert stored.ciphertext in caplog.text
    assert not EncryptedSecretValue.objects.exists()

    for value in (CANARY, PATCHED):
        for exchange in rec.exchanges:
            assert value.encode() not in exchange.content, exchange.step
            assert all(value not in f"{k}: {v}" for k, v in exchange.headers.items()), exchange.step
        assert value not in caplog.text
        assert all(value not in record.getMessage() for record in caplog.records)
        assert value not in serializers.serialize("json", AuditEvent.objects.all())
        assert value not in serializers.serialize("json", ControllerWork.objects.all())
        assert value not in every_row_as_text()
    assert AuditEvent.objects.filter(action__startswith="openclaw.secrets.").count() == 3
    assert AuditEvent.objects.filter(kind="authorization_denial").count() == 2
