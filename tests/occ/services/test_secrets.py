from __future__ import annotations

import logging

import pytest
from django.db import DatabaseError, transaction

import occ.services.secrets as service
from occ.commands.base import parse
from occ.commands.secrets import VALUE_MAX_BYTES, SecretCreate, SecretValueUpdate
from occ.drivers.secrets import SecretDriver, SecretValueMissing, backend_name_for
from occ.drivers.secrets import base as driver_base
from occ.drivers.secrets.database import DatabaseSecretDriver
from occ.errors import Conflict, DependencyUnavailable, Forbidden, InvalidRequest, NotFound, UnknownOutcome
from occ.models import AccessBinding, AuditEvent, EncryptedSecretValue, Secret
from occ.selectors.secrets import secret_get, secret_list
from occ.services.namespaces import namespace_delete
from occ.services.secrets import (
    runtime_credential_ensure,
    runtime_credentials_delete,
    secret_create,
    secret_delete,
    secret_update_value,
    secret_value_use,
)
from tests.factories import AgentFactory, actor, grant, service_principal


class MemorySecretDriver(SecretDriver):
    """A driver outside the database transaction, like a Kubernetes Secret store."""

    driver_id = "memory"
    values: dict[str, str] = {}

    def put(self, backend_name: str, value: str) -> None:
        self.values[backend_name] = value

    def delete(self, backend_name: str) -> None:
        self.values.pop(backend_name, None)

    def with_value(self, backend_name, consumer):
        if backend_name not in self.values:
            raise SecretValueMissing()
        return consumer(self.values[backend_name])


@pytest.fixture
def memory_driver(settings, monkeypatch):
    monkeypatch.setitem(driver_base.SECRET_DRIVERS.classes, "memory", f"{__name__}.MemorySecretDriver")
    monkeypatch.setattr(MemorySecretDriver, "values", {})
    settings.OCC_SECRET_DRIVER = "memory"
    return MemorySecretDriver.values


def value_of(secret: Secret) -> str:
    return secret_value_use(secret=secret, consumer=lambda value: value)


def fail_audit(monkeypatch) -> None:
    def failing_save(*args, **kwargs):
        raise DatabaseError("audit table unavailable")
    monkeypatch.setattr(AuditEvent, "save", failing_save)


@pytest.mark.parametrize(
    ("value", "code"),
    [
        pytest.param(None, "INVALID_TYPE", id="none"),
        pytest.param(b"bytes", "INVALID_TYPE", id="bytes"),
        pytest.param(42, "INVALID_TYPE", id="int"),
        pytest.param("", "INVALID_VALUE", id="empty"),
        pytest.param("abc\x00", "INVALID_VALUE", id="nul"),
        pytest.param("\udc80", "INVALID_VALUE", id="lone-surrogate"),
        pytest.param("x" * (VALUE_MAX_BYTES + 1), "TOO_LONG", id="too-long-ascii"),
        pytest.param("€" * (VALUE_MAX_BYTES // 3 + 1), "TOO_LONG", id="too-long-in-bytes-not-chars"),
    ],
)
def test_a_secret_value_command_refuses(value, code):
    with pytest.raises(InvalidRequest) as caught:
        parse(SecretValueUpdate, {"value": value})
    assert [d.as_wire() for d in caught.value.details] == [{"code": code, "path": "/value"}]
    assert repr(value) not in caught.value.message


@pytest.mark.parametrize("value", [pytest.param("x", id="one-byte"), pytest.param(" padded ", id="spaces-kept"),
                                   pytest.param("x" * VALUE_MAX_BYTES, id="at-limit"),
                                   pytest.param("line\nbreak\ttab", id="controls-other-than-nul")])
def test_a_secret_value_command_accepts(value):
    assert parse(SecretValueUpdate, {"value": value}).value == value


def test_create_update_and_delete_through_the_service(admin_actor, ready_namespace,
                                                      django_capture_on_commit_callbacks):
    secret = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                           command=SecretCreate(name="token", value="one"))
    assert value_of(secret) == "one"
    updated = secret_update_value(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id,
                                  command=SecretValueUpdate(value="two"))
    assert (updated.id, updated.backend_name) == (secret.id, secret.backend_name)
    assert value_of(secret) == "two"
    with django_capture_on_commit_callbacks(execute=True):
        secret_delete(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id)
    assert not EncryptedSecretValue.objects.exists()
    assert list(AuditEvent.objects.filter(resource_id=secret.id).order_by("occurred_at")
                .values_list("action", flat=True)) == [
        "openclaw.secrets.create", "openclaw.secrets.update", "openclaw.secrets.delete"]


def test_denied_create_never_reaches_the_driver(ready_namespace, monkeypatch):
    calls = []
    monkeypatch.setattr(DatabaseSecretDriver, "put", lambda self, *a: calls.append(a))
    reader = service_principal("reader", namespace=ready_namespace)
    grant(reader, "read:secret", namespace=ready_namespace)
    with pytest.raises(Forbidden):
        secret_create(actor=actor(reader), namespace_id=ready_namespace.id, command=SecretCreate(name="n", value="v"))
    assert calls == []


def test_create_compensates_when_the_metadata_transaction_fails(admin_actor, ready_namespace, monkeypatch):
    fail_audit(monkeypatch)
    with pytest.raises(DependencyUnavailable):
        secret_create(actor=admin_actor, namespace_id=ready_namespace.id, command=SecretCreate(name="n", value="v"))
    assert not Secret.objects.exists()
    assert not EncryptedSecretValue.objects.exists()


def test_create_compensates_when_a_concurrent_create_took_the_name(admin_actor, ready_namespace, monkeypatch):
    """The name is free at admission but taken by the time the metadata is written."""
    real_put = DatabaseSecretDriver.put

    def put_then_race(self, backend_name, value):
        real_put(self, backend_name, value)
        if not Secret.objects.filter(name="raced").exists():
            Secret.objects.create(namespace=ready_namespace, name="raced", driver_id="database",
                                  backend_name="occ-sec-someone-else")

    monkeypatch.setattr(DatabaseSecretDriver, "put", put_then_race)
    with pytest.raises(Conflict):
        secret_create(actor=admin_actor, namespace_id=ready_namespace.id, command=SecretCreate(name="raced", value="v"))
    assert list(Secret.objects.values_list("backend_name", flat=True)) == ["occ-sec-someone-else"]
    assert not EncryptedSecretValue.objects.exists()


def test_failed_compensation_is_logged_without_the_value(admin_actor, ready_namespace, monkeypatch, caplog):
    fail_audit(monkeypatch)

    def broken_delete(self, backend_name):
        raise DatabaseError("store unavailable")

    monkeypatch.setattr(DatabaseSecretDriver, "delete", broken_delete)
    with caplog.at_level(logging.WARNING, logger="occ.services.secrets"), pytest.raises(DependencyUnavailable):
        secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                      command=SecretCreate(name="n", value="canary-in-logs"))
    assert "could not remove secret backend object occ-sec-" in caplog.text
    assert "canary-in-logs" not in caplog.text


def test_unknown_commit_outcome_does_not_compensate(admin_actor, ready_namespace, monkeypatch):
    """If only closing the transaction fails, the metadata may exist: keep the value and say
    UNKNOWN_OUTCOME. (Inside the test's transaction our block ends in a savepoint release.)"""
    connection = transaction.get_connection()
    real_release, real_audit = connection.savepoint_commit, service.audit_record
    armed = []

    def audit_then_arm(**kwargs):
        event = real_audit(**kwargs)
        armed.append(True)
        return event

    def release_fails_once(sid):
        if armed:
            armed.clear()
            raise DatabaseError("connection lost during commit")
        real_release(sid)

    monkeypatch.setattr(service, "audit_record", audit_then_arm)
    monkeypatch.setattr(connection, "savepoint_commit", release_fails_once)
    with pytest.raises(UnknownOutcome):
        secret_create(actor=admin_actor, namespace_id=ready_namespace.id, command=SecretCreate(name="n", value="kept"))
    monkeypatch.undo()
    assert EncryptedSecretValue.objects.count() == 1


def test_update_writes_the_value_last_so_a_failed_audit_keeps_the_old_one(admin_actor, ready_namespace,
                                                                           memory_driver, monkeypatch):
    secret = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                           command=SecretCreate(name="n", value="old"))
    fail_audit(monkeypatch)
    with pytest.raises(DependencyUnavailable):
        secret_update_value(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id,
                            command=SecretValueUpdate(value="new"))
    monkeypatch.undo()
    assert memory_driver == {secret.backend_name: "old"}


def test_create_with_an_outside_driver_compensates_exactly_its_object(admin_actor, ready_namespace, memory_driver,
                                                                      monkeypatch):
    kept = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                         command=SecretCreate(name="kept", value="k"))
    fail_audit(monkeypatch)
    with pytest.raises(DependencyUnavailable):
        secret_create(actor=admin_actor, namespace_id=ready_namespace.id, command=SecretCreate(name="n", value="v"))
    assert memory_driver == {kept.backend_name: "k"}


def test_a_secret_stays_with_the_driver_that_stored_it(admin_actor, ready_namespace, memory_driver, settings,
                                                     django_capture_on_commit_callbacks):
    secret = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                           command=SecretCreate(name="n", value="v1"))
    assert secret.driver_id == "memory"
    settings.OCC_SECRET_DRIVER = "database"
    secret_update_value(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id,
                        command=SecretValueUpdate(value="v2"))
    assert memory_driver == {secret.backend_name: "v2"}
    assert not EncryptedSecretValue.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        secret_delete(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id)
    assert memory_driver == {}


def test_delete_keeps_going_when_the_value_cannot_be_removed(admin_actor, ready_namespace, monkeypatch, caplog,
                                                            django_capture_on_commit_callbacks):
    secret = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                           command=SecretCreate(name="n", value="v"))

    def broken_delete(self, backend_name):
        raise DatabaseError("store unavailable")

    monkeypatch.setattr(DatabaseSecretDriver, "delete", broken_delete)
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
        secret_delete(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id)
    assert not Secret.objects.filter(id=secret.id).exists()
    assert f"could not remove secret backend object {secret.backend_name}" in caplog.text


# --- runtime credentials ----------------------------------------------------------------------


@pytest.fixture
def agent(ready_namespace):
    return AgentFactory(namespace=ready_namespace)


def test_runtime_credential_ensure_is_idempotent(agent):
    calls = []

    def factory() -> str:
        calls.append(1)
        return f"generated-{len(calls)}"

    first = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=factory)
    second = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=factory)
    assert first.id == second.id
    assert calls == [1]
    assert (first.owner_agent_id, first.purpose, first.namespace_id) == (agent.id, "gateway-password",
                                                                         agent.namespace_id)
    assert first.backend_name == backend_name_for(first.id)
    assert value_of(first) == "generated-1"
    assert AuditEvent.objects.filter(action="openclaw.agents.runtime_credentials.create").count() == 1


def test_runtime_credentials_of_different_purposes_are_distinct(agent):
    a = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: "a")
    b = runtime_credential_ensure(agent=agent, purpose="hook-token", value_factory=lambda: "b")
    assert a.id != b.id
    assert (value_of(a), value_of(b)) == ("a", "b")


def test_runtime_credential_ensure_restores_a_value_the_driver_lost(agent):
    secret = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: "first")
    EncryptedSecretValue.objects.all().delete()
    again = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: "second")
    assert again.id == secret.id
    assert value_of(again) == "second"


def test_concurrent_runtime_credential_ensure_keeps_one_credential(agent):
    winner: list[Secret] = []

    def racing_factory() -> str:
        # Another worker stores the credential while this one is generating its value.
        winner.append(runtime_credential_ensure(agent=agent, purpose="gateway-password",
                                                value_factory=lambda: "winner"))
        return "loser"

    result = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=racing_factory)
    assert result.id == winner[0].id
    assert Secret.objects.count() == 1
    assert EncryptedSecretValue.objects.count() == 1
    assert value_of(result) == "winner"


@pytest.mark.parametrize("purpose", ["", "Gateway", "gateway password", "x" * 65, "../x"])
def test_runtime_credential_purpose_must_be_a_slug(agent, purpose):
    with pytest.raises(ValueError, match="purpose"):
        runtime_credential_ensure(agent=agent, purpose=purpose, value_factory=lambda: "v")
    assert not Secret.objects.exists()


def test_runtime_credentials_are_invisible_to_the_secrets_api(admin_actor, agent):
    credential = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: "v")
    namespace_id = agent.namespace_id
    assert secret_list(actor=admin_actor, namespace_id=namespace_id) == []
    with pytest.raises(NotFound):
        secret_get(actor=admin_actor, namespace_id=namespace_id, secret_id=credential.id)
    with pytest.raises(NotFound):
        secret_update_value(actor=admin_actor, namespace_id=namespace_id, secret_id=credential.id,
                            command=SecretValueUpdate(value="x"))
    with pytest.raises(NotFound):
        secret_delete(actor=admin_actor, namespace_id=namespace_id, secret_id=credential.id)
    assert value_of(credential) == "v"


def test_runtime_credentials_do_not_count_as_namespace_secrets(admin_actor, agent):
    runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: "v")
    with pytest.raises(Conflict) as caught:
        namespace_delete(actor=admin_actor, namespace_id=agent.namespace_id)
    assert caught.value.code == "NAMESPACE_NOT_EMPTY"
    assert "agents" in caught.value.message
    assert "secrets" not in caught.value.message


def test_runtime_credential_names_never_collide_with_user_secrets(admin_actor, agent):
    runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: "v")
    user = secret_create(actor=admin_actor, namespace_id=agent.namespace_id,
                         command=SecretCreate(name="runtime:gateway-password", value="mine"))
    assert value_of(user) == "mine"


def test_runtime_credentials_delete_removes_rows_values_and_bindings(agent, django_capture_on_commit_callbacks):
    a = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: "a")
    b = runtime_credential_ensure(agent=agent, purpose="hook-token", value_factory=lambda: "b")
    other = runtime_credential_ensure(agent=AgentFactory(namespace=agent.namespace), purpose="gateway-password",
                                      value_factory=lambda: "other")
    binding = grant(agent.service_principal, "operate:secret", namespace=agent.namespace, resource_kind="secret",
                    resource_id=a.id)

    with django_capture_on_commit_callbacks(execute=True):
        removed = runtime_credentials_delete(agent=agent)

    assert removed == sorted([a.id, b.id])
    assert list(Secret.objects.values_list("id", flat=True)) == [other.id]
    assert list(EncryptedSecretValue.objects.values_list("backend_name", flat=True)) == [other.backend_name]
    assert not AccessBinding.objects.filter(id=binding.id).exists()
    event = AuditEvent.objects.get(action="openclaw.agents.runtime_credentials.delete")
    assert event.details["secretIds"] == removed
    assert event.details["removedAccessBindings"] == [binding.id]
    with pytest.raises(SecretValueMissing):
        value_of(a)
    assert runtime_credentials_delete(agent=agent) == []
    assert AuditEvent.objects.filter(action="openclaw.agents.runtime_credentials.delete").count() == 1


def test_runtime_credentials_delete_rolls_back_when_audit_fails(agent, monkeypatch,
                                                                 django_capture_on_commit_callbacks):
    credential = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: "v")
    fail_audit(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(DependencyUnavailable):
        runtime_credentials_delete(agent=agent)
    monkeypatch.undo()
    assert Secret.objects.filter(id=credential.id).exists()
    assert value_of(credential) == "v"


def test_runtime_credential_create_compensates_when_audit_fails(agent, monkeypatch):
    fail_audit(monkeypatch)
    with pytest.raises(DependencyUnavailable):
        runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: "v")
    assert not Secret.objects.exists()
    assert not EncryptedSecretValue.objects.exists()


def test_outer_transaction_rollback_takes_the_driver_delete_with_it(admin_actor, ready_namespace, memory_driver,
                                                                   django_capture_on_commit_callbacks):
    """The value leaves the driver only once the delete really commits."""
    secret = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                           command=SecretCreate(name="n", value="v"))

    def delete_then_fail() -> None:
        with transaction.atomic():
            secret_delete(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id)
            raise RuntimeError("caller's transaction fails after the delete")

    with django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(RuntimeError):
        delete_then_fail()
    assert callbacks == []
    assert Secret.objects.filter(id=secret.id).exists()
    assert memory_driver == {secret.backend_name: "v"}


# --- Secrets an active revision delivers -------------------------------------------------------


def deploy_and_activate(admin_actor, agent):
    """Deploy through the service and let the real queue and revision job (fake compute)
    make the revision active."""
    from occ.models.work import revision_reconcile_key
    from occ.services.deploy import agent_deploy
    from tests.fakes.compute import run_work

    revision = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    run_work(revision_reconcile_key(revision.id))
    agent.refresh_from_db()
    assert agent.active_revision_id == revision.id
    return revision


def drop_current_reference(agent, secret, how: str) -> None:
    """The Agent's current settings stop naming the Secret; its active revision still does."""
    from occ.models import Agent, SecretBinding
    from tests.factories import SecretFactory

    if how == "harness":
        Agent.objects.filter(id=agent.id).update(harness_secret=SecretFactory(namespace=agent.namespace))
    else:
        SecretBinding.objects.filter(configuration=agent.configuration, secret=secret).delete()


@pytest.mark.parametrize("how", ["harness", "binding"])
def test_a_secret_an_active_revision_delivers_cannot_be_deleted(admin_actor, ready_namespace, fake_compute,
                                                               how, django_capture_on_commit_callbacks):
    from tests.fakes.compute import deployable_agent

    agent = deployable_agent(ready_namespace, bound=1, name="support-bot")
    secret = agent.harness_secret if how == "harness" else agent.configuration.secret_bindings.get().secret
    deploy_and_activate(admin_actor, agent)
    drop_current_reference(agent, secret, how)
    deletes_before = AuditEvent.objects.filter(action="openclaw.secrets.delete").count()

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(Conflict) as refused:
        secret_delete(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id)

    assert refused.value.status == 409
    message = refused.value.message
    assert f"support-bot ({agent.id})" in message
    assert "active revision" in message
    assert Secret.objects.filter(id=secret.id).exists()
    assert AuditEvent.objects.filter(action="openclaw.secrets.delete").count() == deletes_before


@pytest.mark.parametrize("how", ["harness", "binding"])
def test_a_secret_a_revision_being_deployed_delivers_cannot_be_deleted(admin_actor, ready_namespace, fake_compute,
                                                                      how, django_capture_on_commit_callbacks):
    """Deleting it would fail the deployment (SECRET_UNAVAILABLE): refused until the work ends."""
    from occ.models.work import revision_reconcile_key
    from occ.services.deploy import agent_deploy
    from tests.fakes.compute import deployable_agent, run_work

    agent = deployable_agent(ready_namespace, bound=1, name="support-bot")
    secret = agent.harness_secret if how == "harness" else agent.configuration.secret_bindings.get().secret
    revision = agent_deploy(actor=admin_actor, namespace_id=ready_namespace.id, agent_id=agent.id)
    drop_current_reference(agent, secret, how)

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(Conflict) as refused:
        secret_delete(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id)

    assert refused.value.status == 409
    assert f"a revision of Agent support-bot ({agent.id}) that is being deployed" in refused.value.message
    assert Secret.objects.filter(id=secret.id).exists()
    run_work(revision_reconcile_key(revision.id))
    agent.refresh_from_db()
    assert agent.active_revision_id == revision.id  # the deployment had what it needed
    with pytest.raises(Conflict) as still_refused:  # and now the active revision delivers it
        secret_delete(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id)
    assert "active revision" in still_refused.value.message


def test_a_secret_only_an_older_revision_delivered_can_be_deleted(admin_actor, ready_namespace, fake_compute,
                                                                  django_capture_on_commit_callbacks):
    from tests.fakes.compute import deployable_agent

    agent = deployable_agent(ready_namespace, name="support-bot")
    old_key = agent.harness_secret
    deploy_and_activate(admin_actor, agent)
    drop_current_reference(agent, old_key, "harness")
    agent.refresh_from_db()
    grant(agent.service_principal, "operate:secret", namespace=ready_namespace, resource_kind="secret",
          resource_id=agent.harness_secret_id)
    deploy_and_activate(admin_actor, agent)  # the new revision delivers the new key only

    with django_capture_on_commit_callbacks(execute=True):
        secret_delete(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=old_key.id)

    assert not Secret.objects.filter(id=old_key.id).exists()


def test_a_secret_of_a_stopped_agent_can_be_deleted(admin_actor, ready_namespace, fake_compute,
                                                    django_capture_on_commit_callbacks):
    from occ.models import ControllerWork
    from occ.services.agent_lifecycle import agent_stop
    from tests.fakes.compute import deployable_agent, run_work

    agent = deployable_agent(ready_namespace, bound=1)
    secret = agent.configuration.secret_bindings.get().secret
    deploy_and_activate(admin_actor, agent)
    drop_current_reference(agent, secret, "binding")
    agent_stop(actor=admin_actor, namespace_id=ready_namespace.id, agent_id=agent.id)
    run_work(ControllerWork.objects.get(agent_id=agent.id, agent_target="stopped").pk)
    agent.refresh_from_db()
    assert agent.active_revision_id is None

    with django_capture_on_commit_callbacks(execute=True):
        secret_delete(actor=admin_actor, namespace_id=ready_namespace.id, secret_id=secret.id)

    assert not Secret.objects.filter(id=secret.id).exists()
