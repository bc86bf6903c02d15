"""Migrations of the work model upgrade existing rows and roll back, on either database."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from occ.models import Namespace, NamespaceStatus
from tests.factories import AgentFactory, ConfigurationFactory

# The work rows of every shape 0003 knew: (key, work_kind, namespace_target, agent_id,
# revision_id, agent_target) and the job 0004 names for each.
SHAPES = [
    (("ns:ready", "lifecycle", "ready", None, None, None), "namespace"),
    (("ns:deleted", "lifecycle", "deleted", None, None, None), "namespace"),
    (("rev", "lifecycle", None, "agt_a", "rev_a", None), "revision"),
    (("stop", "lifecycle", None, "agt_b", None, "stopped"), "agent_stop"),
    (("delete", "lifecycle", None, "agt_c", None, "deleted"), "agent_delete"),
    (("provision", "provisioning", None, "agt_d", None, "provisioned"), "provision"),
]


def _migrate(target: str) -> None:
    call_command("migrate", "occ", target, verbosity=0)


@pytest.fixture(autouse=True)
def _every_migration_applied_after():
    """Each test leaves the database fully migrated, whatever target it ended on: a test that
    stopped at an older migration once left the next one's table missing for the rest of the
    run (CI: a later Agent delete failed on the absent single sign-on table)."""
    yield
    call_command("migrate", verbosity=0)
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == [], "every migration is applied"


def _insert_0003_rows(namespace_id: str) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with connection.cursor() as cursor:
        for (key, kind, ns_target, agent_id, revision_id, agent_target), _ in SHAPES:
            cursor.execute(
                "INSERT INTO occ_controllerwork (idempotency_key, work_kind, namespace_id, agent_id, revision_id,"
                " actor_id, namespace_target, agent_target, state, available_at, attempt_count, max_attempts,"
                " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, 'usr_x', %s, %s, 'queued', %s, 0, 5, %s, %s)",
                [key, kind, namespace_id, agent_id, revision_id, ns_target, agent_target, now, now, now])


def _column(name: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT idempotency_key, {name} FROM occ_controllerwork")
        return dict(cursor.fetchall())


@pytest.mark.django_db(transaction=True)
def test_the_job_column_names_each_existing_rows_job_and_rolls_back():
    namespace = Namespace.objects.create(name="migrations", status=NamespaceStatus.READY)
    try:
        _migrate("0003_work_indexes")
        _insert_0003_rows(namespace.id)
        _migrate("0004_work_job")
        assert _column("job") == {shape[0]: job for shape, job in SHAPES}
        _migrate("0003_work_indexes")
        assert _column("work_kind") == {shape[0]: shape[1] for shape, _ in SHAPES}
    finally:
        _migrate("0003_work_indexes")
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM occ_controllerwork")
        call_command("migrate", verbosity=0)


def _insert_0004_provisioning(key: str, namespace_id: str, progress: dict) -> None:
    """A provisioning row as 0004 stored it (its own status column), through SQL: the model
    has moved on."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    json_value = "CAST(%s AS jsonb)" if connection.vendor == "postgresql" else "%s"
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO occ_agentprovisioningwork (work_id, namespace_id, actor_id, request_id, request_fingerprint,"
            " status, completed_phase, agent_id, configuration_id, plan, progress, created_at, updated_at)"
            f" VALUES (%s, %s, 'usr_x', 'req_migrations', 'f', 'failed', 'configuration', 'agt_m', 'cfg_m',"
            f" {json_value}, {json_value}, %s, %s)",
            [key, namespace_id, "{}", json.dumps(progress), now, now])


def _progress(key: str) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT progress FROM occ_agentprovisioningwork WHERE work_id = %s", [key])
        value = cursor.fetchone()[0]
    return json.loads(value) if isinstance(value, str) else value


@pytest.mark.django_db(transaction=True)
def test_effects_move_from_the_progress_json_to_typed_rows_and_back():
    from occ.models import ControllerWork, WorkEffect

    namespace = Namespace.objects.create(name="migrations-effects", status=NamespaceStatus.READY)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    key = "agent:agt_m:provisioned"
    effects = [
        {"kind": "configuration", "owner": key, "targetId": "cfg_m", "state": "receipted",
         "evidence": {"agentId": "agt_m", "grantedSecretIds": ["sec_a"]}},
        {"kind": "transport", "owner": key, "targetId": "agt_m", "state": "begun", "resend": True,
         "evidence": {"computeDriverId": "fake", "attempt": 2, "begunAt": "2026-01-01T00:00:01+00:00",
                      "observation": "not_found"}},
    ]
    try:
        _migrate("0004_work_job")
        ControllerWork.objects.create(
            idempotency_key=key, job="provision", namespace=namespace, agent_id="agt_m", agent_target="provisioned",
            actor_id="usr_x", available_at=now, created_at=now, updated_at=now)
        _insert_0004_provisioning(key, namespace.id, {"effects": effects, "cancelledAt": "x"})
        _migrate("0005_work_effects")
        rows = {e.kind: e for e in WorkEffect.objects.filter(work_id=key)}
        assert (rows["configuration"].state, rows["configuration"].target_id,
                rows["configuration"].granted_secret_ids) == ("receipted", "cfg_m", ["sec_a"])
        transport = rows["transport"]
        assert (transport.state, transport.resend, transport.attempt, transport.driver_id, transport.observation) == (
            "begun", True, 2, "fake", "not_found")
        assert transport.receipted_at is None
        assert _progress(key) == {"cancelledAt": "x"}
        _migrate("0004_work_job")
        restored = _progress(key)
        assert [(e["kind"], e["state"], e["targetId"], e.get("resend", False)) for e in restored["effects"]] == [
            ("configuration", "receipted", "cfg_m", False), ("transport", "begun", "agt_m", True)]
        assert restored["cancelledAt"] == "x"
    finally:
        call_command("migrate", verbosity=0)
        ControllerWork.objects.filter(pk=key).delete()


@pytest.mark.django_db(transaction=True)
def test_the_stored_provisioning_status_becomes_derived_and_comes_back_on_rollback():
    from occ.models import AgentProvisioningWork, ControllerWork

    namespace = Namespace.objects.create(name="migrations-status", status=NamespaceStatus.READY)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    key = "agent:agt_m:provisioned"
    try:
        _migrate("0005_work_effects")
        ControllerWork.objects.create(
            idempotency_key=key, job="provision", namespace=namespace, agent_id="agt_m", agent_target="provisioned",
            actor_id="usr_x", available_at=now, created_at=now, updated_at=now, state="failed_permanent",
            completed_at=now)
        _insert_0004_provisioning(key, namespace.id, {"cancelledAt": "2026-01-01T00:00:05+00:00"})
        with connection.cursor() as cursor:
            cursor.execute("UPDATE occ_agentprovisioningwork SET status = 'cancelled' WHERE work_id = %s", [key])
        _migrate("0006_provisioning_status_derived")
        row = AgentProvisioningWork.objects.get(work_id=key)
        assert row.cancelled_at == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
        assert row.status == "cancelled"
        AgentProvisioningWork.objects.filter(work_id=key).update(cancelled_at=None)
        _migrate("0005_work_effects")
        with connection.cursor() as cursor:
            cursor.execute("SELECT status FROM occ_agentprovisioningwork WHERE work_id = %s", [key])
            assert cursor.fetchone()[0] == "failed", "derived from the failed work row"
    finally:
        call_command("migrate", verbosity=0)
        ControllerWork.objects.filter(pk=key).delete()


@pytest.mark.django_db(transaction=True)
def test_an_existing_administrator_role_gains_invoke_agent_and_loses_it_on_rollback():
    from occ.models import Role

    role = Role.objects.create(name="administrator", system=True, permissions=["read:agent", "deploy:agent"])
    other = Role.objects.create(name="readers", permissions=["read:agent"])
    try:
        _migrate("0007_harness_auth_codex_pat")
        _migrate("0008_administrator_invoke_agent")
        role.refresh_from_db()
        assert role.permissions == ["deploy:agent", "invoke:agent", "read:agent"]
        other.refresh_from_db()
        assert other.permissions == ["read:agent"], "only the system administrator Role changes"
        _migrate("0007_harness_auth_codex_pat")
        role.refresh_from_db()
        assert "invoke:agent" not in role.permissions
    finally:
        call_command("migrate", verbosity=0)
        Role.objects.filter(pk__in=[role.pk, other.pk]).delete()


@pytest.mark.django_db(transaction=True)
def test_existing_configurations_are_named_after_their_first_agent_or_their_id():
    namespace = Namespace.objects.create(name="naming", status=NamespaceStatus.READY)
    used = ConfigurationFactory(namespace=namespace)
    AgentFactory(namespace=namespace, name="helper", configuration=used)
    AgentFactory(namespace=namespace, name="later", configuration=used)
    unused = ConfigurationFactory(namespace=namespace)
    elsewhere = ConfigurationFactory()
    AgentFactory(namespace=elsewhere.namespace, name="helper", configuration=elsewhere)
    try:
        _migrate("0013_presets")
        _migrate("0014_configuration_name")
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, name FROM occ_configuration")
            names = dict(cursor.fetchall())
        assert names[used.id] == "helper configuration"
        assert names[unused.id] == f"configuration {unused.id[4:12]}"
        assert names[elsewhere.id] == "helper configuration", "unique per Namespace only"
    finally:
        call_command("migrate", verbosity=0)


@pytest.mark.django_db(transaction=True)
def test_the_roles_that_hold_them_gain_reading_conversations_and_deciding_approvals_and_lose_them_on_rollback():
    from occ.models import Role

    developer = Role.objects.create(name="Developer", permissions=["read:agent"])
    team_admin = Role.objects.create(name="Namespace administrator", permissions=["read:agent"])
    viewer = Role.objects.create(name="Viewer", permissions=["read:agent"])
    try:
        _migrate("0016_agent_name_order")
        _migrate("0020_sessions_index")
        for role in (developer, team_admin, viewer):
            role.refresh_from_db()
        assert developer.permissions == ["decide_approvals:agent", "read:agent"]
        assert team_admin.permissions == ["decide_approvals:agent", "read:agent", "read_conversations:agent"]
        assert viewer.permissions == ["read:agent"]
        _migrate("0016_agent_name_order")
        team_admin.refresh_from_db()
        assert team_admin.permissions == ["read:agent"]
    finally:
        call_command("migrate", verbosity=0)
        Role.objects.filter(pk__in=[developer.pk, team_admin.pk, viewer.pk]).delete()
