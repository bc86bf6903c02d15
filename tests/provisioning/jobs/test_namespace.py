"""Namespace work: ready (ensure) and deleted (teardown, tombstone, IAM policy removal)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from occ.commands.namespaces import NamespaceCreate
from occ.drivers.compute.fake import error, pending
from occ.iam.keys import create_key_record
from occ.models import (
    AccessBinding,
    AuditEvent,
    AuditKind,
    ControllerWork,
    Namespace,
    NamespaceStatus,
    Principal,
    Restriction,
    Role,
    ServiceKey,
    WorkState,
)
from occ.models.work import namespace_ready_key
from occ.services.namespaces import namespace_create, namespace_delete
from tests.factories import actor, grant, service_principal
from tests.fakes.compute import run_job_twice, run_work
from tests.provisioning.jobs.conftest import code_of, events, work

CREATOR_PERMISSIONS = ("create:namespace", "read:namespace", "delete:namespace")


@pytest.fixture
def creator(bootstrap):
    principal = service_principal("namespace-creator")
    binding = grant(principal, *CREATOR_PERMISSIONS)
    return actor(principal), binding


@pytest.fixture
def fresh(creator, fake_compute) -> Namespace:
    return namespace_create(actor=creator[0], command=NamespaceCreate(name="team-a"))


def status_of(namespace: Namespace) -> str:
    return Namespace.objects.get(id=namespace.id).status


# --- ready --------------------------------------------------------------------------------------


def test_ready_work_makes_the_namespace_ready_with_one_audit(creator, fresh, fake_compute):
    outcome = run_work(namespace_ready_key(fresh.id))

    assert code_of(outcome) == ("Complete", "NAMESPACE_READY")
    assert status_of(fresh) == NamespaceStatus.READY
    assert fake_compute.world()["namespaces"] == {fresh.id: "ready"}
    assert fake_compute.calls_to("ensure_namespace") == [fresh.id]
    ready = events("openclaw.namespaces.ready")
    assert len(ready) == 1
    assert (ready[0].kind, ready[0].actor_id, ready[0].outcome) == (AuditKind.LIFECYCLE, creator[0].id, "succeeded")


def test_pending_ensure_defers_and_keeps_provisioning(fresh, fake_compute):
    fake_compute.script("ensure_namespace", fresh.id, [pending("RECONCILIATION_PENDING")])

    outcome = run_work(namespace_ready_key(fresh.id))

    assert code_of(outcome) == ("Defer", "RECONCILIATION_PENDING")
    row = work(namespace_ready_key(fresh.id))
    assert (row.state, row.attempt_count) == (WorkState.QUEUED, 0)
    assert status_of(fresh) == NamespaceStatus.PROVISIONING


def test_permanent_ensure_failure_fails_the_namespace(fresh, fake_compute):
    fake_compute.script("ensure_namespace", fresh.id, [error("NAMESPACE_QUOTA_REFUSED", retryable=False)])

    outcome = run_work(namespace_ready_key(fresh.id))

    assert code_of(outcome) == ("Fail", "NAMESPACE_QUOTA_REFUSED")
    assert status_of(fresh) == NamespaceStatus.FAILED
    assert work(namespace_ready_key(fresh.id)).state == WorkState.FAILED_PERMANENT
    failed = AuditEvent.objects.filter(resource_id=fresh.id, kind=AuditKind.LIFECYCLE, outcome="failed")
    assert failed.count() == 1, "one failure event (the job's own; the queue's fallback sees it moved on)"


def test_retryable_ensure_failure_retries(fresh, fake_compute):
    fake_compute.script("ensure_namespace", fresh.id, [error("KUBERNETES_API_UNAVAILABLE")])

    outcome = run_work(namespace_ready_key(fresh.id))

    assert code_of(outcome) == ("Retry", "KUBERNETES_API_UNAVAILABLE")
    assert status_of(fresh) == NamespaceStatus.PROVISIONING


def test_ready_work_for_a_namespace_no_longer_provisioning_is_superseded(fresh, fake_compute):
    Namespace.objects.filter(id=fresh.id).update(status=NamespaceStatus.FAILED)

    assert code_of(run_work(namespace_ready_key(fresh.id))) == ("Complete", "SUPERSEDED_TARGET")
    assert fake_compute.calls == []
    assert status_of(fresh) == NamespaceStatus.FAILED


@pytest.mark.parametrize("revoke", [
    pytest.param("binding", id="grant-removed"),
    pytest.param("restriction", id="restriction-on-the-namespace"),
    pytest.param("principal", id="actor-deleted"),
])
def test_revoked_creator_fails_without_a_driver_call(creator, fresh, fake_compute, revoke):
    creator_actor, binding = creator
    if revoke == "binding":
        binding.delete()
    elif revoke == "restriction":
        Restriction.objects.create(principal=creator_actor.principal, namespace=fresh, action="create",
                                   resource_kind="namespace", resource_id=fresh.id)
    else:
        binding.delete()
        Principal.objects.filter(id=creator_actor.id).delete()

    outcome = run_work(namespace_ready_key(fresh.id))

    assert code_of(outcome) == ("Fail", "AUTHORIZATION_DENIED")
    assert fake_compute.calls == []
    denial = AuditEvent.objects.get(kind=AuditKind.AUTHORIZATION_DENIAL)
    assert denial.details["actorId"] == creator_actor.id
    assert denial.details["permission"] == "create:namespace"


def test_ready_job_run_twice_is_harmless(fresh, fake_compute):
    first, applied = run_job_twice(namespace_ready_key(fresh.id))

    assert code_of(first) == code_of(applied) == ("Complete", "NAMESPACE_READY")
    assert status_of(fresh) == NamespaceStatus.READY
    assert len(events("openclaw.namespaces.ready")) == 1


# --- deleted ------------------------------------------------------------------------------------


@pytest.fixture
def policy(fresh) -> dict[str, list[str]]:
    """A Namespace IAM policy: a Role, a Namespace principal with a key, bindings, a Restriction."""
    role = Role.objects.create(namespace=fresh, name="reader", permissions=["read:namespace"])
    member = service_principal("team-bot", namespace=fresh)
    exact = AccessBinding.objects.create(principal=member, role=role, namespace=fresh,
                                         resource_kind="namespace", resource_id=fresh.id)
    outsider = service_principal("installation-bot")
    namespace_wide = grant(outsider, "read:namespace", namespace=fresh)
    restriction = Restriction.objects.create(namespace=fresh, action="read", resource_kind="namespace")
    key, _ = create_key_record(principal_id=member.id, namespace_id=fresh.id, name="bot",
                               expires_at=timezone.now() + timedelta(days=1), created_by="test")
    return {"roles": [role.id, namespace_wide.role_id], "principals": [member.id],
            "bindings": sorted([exact.id, namespace_wide.id]), "restrictions": [restriction.id], "keys": [key.id],
            "outsider": [outsider.id]}


def delete_key(creator_actor, namespace: Namespace) -> str:
    namespace_delete(actor=creator_actor, namespace_id=namespace.id)
    return ControllerWork.objects.get(namespace=namespace, namespace_target="deleted").idempotency_key


def test_delete_work_tombstones_and_removes_the_iam_policy(creator, fresh, policy, fake_compute):
    run_work(namespace_ready_key(fresh.id))
    key = delete_key(creator[0], fresh)

    outcome = run_work(key)

    assert code_of(outcome) == ("Complete", "NAMESPACE_DELETED")
    tombstone = Namespace.objects.get(id=fresh.id)
    assert tombstone.deleted_at is not None
    assert not Namespace.objects.live().filter(id=fresh.id).exists()
    assert fake_compute.world()["namespaces"] == {}
    assert not Role.objects.filter(id__in=policy["roles"]).exists()
    assert not AccessBinding.objects.filter(id__in=policy["bindings"]).exists()
    assert not Principal.objects.filter(id__in=policy["principals"]).exists()
    assert not ServiceKey.objects.filter(id__in=policy["keys"]).exists()
    assert not Restriction.objects.filter(id__in=policy["restrictions"]).exists()
    assert Principal.objects.filter(id__in=policy["outsider"]).exists(), "only the Namespace's own principals go"
    deleted = events("openclaw.namespaces.deleted")
    assert len(deleted) == 1
    assert deleted[0].details["removedAccessBindings"] == policy["bindings"]
    assert deleted[0].details["removedServicePrincipals"] == policy["principals"]
    assert deleted[0].details["removedServiceKeys"] == policy["keys"]
    assert deleted[0].details["removedRestrictions"] == policy["restrictions"]
    assert sorted(deleted[0].details["removedRoles"]) == sorted(policy["roles"])


def test_pending_delete_defers_and_keeps_everything(creator, fresh, policy, fake_compute):
    run_work(namespace_ready_key(fresh.id))
    key = delete_key(creator[0], fresh)
    fake_compute.script("delete_namespace", fresh.id, [pending("RECONCILIATION_PENDING")])

    assert code_of(run_work(key)) == ("Defer", "RECONCILIATION_PENDING")
    assert Namespace.objects.live().filter(id=fresh.id).exists()
    assert Role.objects.filter(id__in=policy["roles"]).count() == 2


def test_revoked_deleter_fails_without_a_driver_call(creator, fresh, policy, fake_compute):
    run_work(namespace_ready_key(fresh.id))
    key = delete_key(creator[0], fresh)
    creator[1].delete()
    fake_compute.clear_calls()

    assert code_of(run_work(key)) == ("Fail", "AUTHORIZATION_DENIED")
    assert fake_compute.calls == []
    assert Namespace.objects.live().filter(id=fresh.id).exists()
    assert AccessBinding.objects.filter(id__in=policy["bindings"]).count() == 2


def test_delete_job_run_twice_is_harmless(creator, fresh, policy, fake_compute):
    run_work(namespace_ready_key(fresh.id))
    key = delete_key(creator[0], fresh)

    first, applied = run_job_twice(key)

    assert code_of(first) == code_of(applied) == ("Complete", "NAMESPACE_DELETED")
    assert Namespace.objects.get(id=fresh.id).deleted_at is not None
    assert len(events("openclaw.namespaces.deleted")) == 1
    assert fake_compute.calls_to("delete_namespace") == [fresh.id, fresh.id]
