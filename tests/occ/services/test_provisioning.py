"""provision_admit below the API: the race path and the plan's fingerprint."""

from __future__ import annotations

from typing import Any

import pytest

from occ.commands.provisioning import ProvisionCommand
from occ.commands.secrets import SecretCreate
from occ.errors import Conflict
from occ.models import AgentProvisioningWork, AuditEvent, ControllerWork
from occ.services import provisioning
from occ.services.provisioning import provision_admit, provision_plan
from occ.services.secrets import secret_create


@pytest.fixture
def request_body(ready_namespace, admin_actor) -> dict[str, Any]:
    secret = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                           command=SecretCreate(name="model-key", value="sk-test"))
    return {
        "requestId": "req_service-level-1",
        "name": "raced",
        "configuration": {"kind": "agent", "values": {"tools": {"profile": "coding"}}},
        "harnessAuth": {"method": "api_key",
                        "source": {"kind": "secret", "namespaceId": ready_namespace.id, "id": secret.id}},
    }


def test_a_lost_insert_race_returns_the_winner(monkeypatch, ready_namespace, admin_actor, request_body):
    """Two identical requests that both miss the dedup lookup: the unique constraint refuses
    the second insert, whose savepoint (work row included) rolls back, and the re-read
    returns the first request's work."""
    winner, created = provision_admit(actor=admin_actor, namespace_id=ready_namespace.id,
                                      command=ProvisionCommand.model_validate(request_body))
    assert created
    real_existing = provisioning._existing
    lookups: list[int] = []

    def blind_until_the_insert(*args: Any) -> AgentProvisioningWork | None:
        lookups.append(1)
        return None if len(lookups) <= 1 else real_existing(*args)  # the locked lookup (no channel: no pre-check)

    monkeypatch.setattr(provisioning, "_existing", blind_until_the_insert)
    monkeypatch.setattr(provisioning, "_refuse_taken_name", lambda *args: None)  # would see the winner too
    audit_before = AuditEvent.objects.count()

    replayed, created = provision_admit(actor=admin_actor, namespace_id=ready_namespace.id,
                                        command=ProvisionCommand.model_validate(request_body))

    assert (replayed.pk, created) == (winner.pk, False)
    assert len(lookups) == 2
    assert ControllerWork.objects.count() == ControllerWork.objects.exclude(job="provision").count() + 1
    assert AgentProvisioningWork.objects.count() == 1
    assert AuditEvent.objects.count() == audit_before

    changed = {**request_body, "name": "other-name"}
    lookups.clear()
    with pytest.raises(Conflict):
        provision_admit(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=ProvisionCommand.model_validate(changed))


def test_the_fingerprint_ignores_spelling_but_not_meaning(ready_namespace, request_body):
    plan = provision_plan(ProvisionCommand.model_validate(request_body), namespace_id=ready_namespace.id)
    spelled = {**dict(reversed(list(request_body.items()))), "executionMode": "embedded", "plugins": {},
               "pluginApprovers": [], "repositoryBindings": [], "initialWorkspaceFiles": {}, "backendId": None}
    assert provision_plan(ProvisionCommand.model_validate(spelled),
                          namespace_id=ready_namespace.id).fingerprint == plan.fingerprint
    assert plan.fingerprint == plan.plan.fingerprint()
    renamed = provision_plan(ProvisionCommand.model_validate({**request_body, "name": "another"}),
                             namespace_id=ready_namespace.id)
    assert renamed.fingerprint != plan.fingerprint
