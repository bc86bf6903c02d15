"""The Configuration services, called directly as the console, admin and CLI will call them."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from django.db import DatabaseError
from django.utils import timezone
from pydantic.alias_generators import to_camel

from occ.commands.base import parse
from occ.commands.configurations import ConfigurationCreate, ConfigurationUpdate
from occ.errors import Conflict, DependencyUnavailable, Forbidden, InvalidRequest, NotFound
from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS
from occ.models import (
    AccessBinding,
    AgentProvisioningWork,
    AgentRevision,
    AuditEvent,
    Configuration,
    ControllerWork,
    NamespaceStatus,
    SecretBinding,
)
from occ.services.configurations import (
    configuration_create,
    configuration_delete,
    configuration_update,
)
from tests.factories import (
    AgentFactory,
    NamespaceFactory,
    SecretFactory,
    actor,
    grant,
    marked_document,
    service_principal,
)

CANARY = "canary-literal-Vx7Qp"


def ref(secret) -> dict:
    return {"source": {"kind": "secret", "namespaceId": secret.namespace_id, "id": secret.id}}


def state() -> tuple[int, int, int]:
    return Configuration.objects.count(), SecretBinding.objects.count(), AuditEvent.objects.count()


@pytest.fixture
def ns(db):
    return NamespaceFactory()


@pytest.fixture
def admin(ns):
    person = service_principal("cfg-admin")
    grant(person, *ADMINISTRATOR_PERMISSIONS)
    return actor(person)


def create(admin, ns, **kw) -> Configuration:
    kw.setdefault("values", {"agents": {"defaults": {"skipBootstrap": True}}})
    return configuration_create(actor=admin, namespace_id=ns.id, command=ConfigurationCreate(kind="agent", **kw))


# --- create -------------------------------------------------------------------------------------

def test_create_writes_row_bindings_and_one_audit_event(admin, ns):
    github, slack = SecretFactory(namespace=ns), SecretFactory(namespace=ns)
    values = {"models": {"providers": {"p": {"apiKey": CANARY, "baseUrl": "https://x.example/v1"}}}}
    cfg = create(admin, ns, values=values, secret_bindings={"GITHUB_TOKEN": ref(github), "SLACK_TOKEN": ref(slack)})
    cfg.refresh_from_db()
    assert (cfg.generation, cfg.kind, cfg.values) == (1, "agent", values)
    assert dict(cfg.secret_bindings.values_list("env_name", "secret_id")) == {
        "GITHUB_TOKEN": github.id, "SLACK_TOKEN": slack.id}
    event = AuditEvent.objects.get(action="openclaw.configurations.create")
    assert (event.namespace_id, event.resource_kind, event.resource_id) == (ns.id, "configuration", cfg.id)
    assert event.details["secretBindings"] == {"GITHUB_TOKEN": github.id, "SLACK_TOKEN": slack.id}
    assert CANARY not in json.dumps(event.details)


def test_create_without_bindings(admin, ns):
    cfg = create(admin, ns)
    assert cfg.secret_bindings.count() == 0


@pytest.mark.parametrize("status", [NamespaceStatus.PROVISIONING, NamespaceStatus.READY])
def test_create_allowed_while_provisioning_or_ready(admin, status):
    namespace = NamespaceFactory(status=status)
    assert create(admin, namespace).namespace_id == namespace.id


@pytest.mark.parametrize("status", [NamespaceStatus.FAILED, NamespaceStatus.DELETING])
def test_create_refused_in_failed_or_deleting_namespace(admin, status):
    namespace = NamespaceFactory(status=status)
    before = state()
    with pytest.raises(Conflict) as exc:
        create(admin, namespace)
    assert exc.value.code == "RESOURCE_CONFLICT"
    assert state() == before


def test_adopted_external_namespace_must_be_ready_first(admin):
    namespace = NamespaceFactory(status=NamespaceStatus.PROVISIONING, existing_namespace="team-a")
    before = state()
    with pytest.raises(Conflict) as exc:
        create(admin, namespace)
    assert exc.value.code == "NAMESPACE_NOT_READY"
    assert state() == before
    namespace.status = NamespaceStatus.READY
    namespace.save()
    assert create(admin, namespace).namespace_id == namespace.id


def test_create_in_tombstoned_namespace_is_not_found(admin, ns):
    ns.deleted_at = timezone.now()
    ns.save()
    with pytest.raises(NotFound):
        create(admin, ns)


def _create_raw(admin, ns, args) -> None:
    command = parse(ConfigurationCreate, {to_camel(key): value for key, value in args.items()})
    configuration_create(actor=admin, namespace_id=ns.id, command=command)


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        pytest.param({"kind": None}, "/kind", id="kind-null"),
        pytest.param({"values": None}, "/values", id="values-null"),
        pytest.param({"secret_bindings": None}, "/secretBindings", id="bindings-null"),
        pytest.param({"values": {"gateway": {"trustedProxies": []}}}, "/values/gateway/trustedProxies",
                     id="gateway-owned"),
    ],
)
def test_create_validates_raw_input_from_any_entry_point(admin, ns, kwargs, path):
    args = {"kind": "agent", "values": {}, **kwargs}
    before = state()
    with pytest.raises(InvalidRequest) as exc:
        _create_raw(admin, ns, args)
    assert exc.value.details[0].path == path
    assert state() == before


def test_binding_a_runtime_credential_is_not_found(admin, ns):
    agent = AgentFactory(namespace=ns)
    password = SecretFactory(namespace=ns, owner_agent=agent, purpose="gateway_password")
    before = state()
    with pytest.raises(NotFound) as exc:
        create(admin, ns, secret_bindings={"GATEWAY_PW": ref(password)})
    assert [d.as_wire() for d in exc.value.details] == [
        {"code": "INVALID_VALUE", "path": "/secretBindings/GATEWAY_PW/source/id"}]
    assert state() == before


def test_binding_another_namespaces_secret_under_our_id_is_not_found(admin, ns):
    foreign = SecretFactory(namespace=NamespaceFactory())
    binding = {"source": {"kind": "secret", "namespaceId": ns.id, "id": foreign.id}}
    with pytest.raises(NotFound):
        create(admin, ns, secret_bindings={"TOKEN": binding})
    assert not Configuration.objects.exists()


def test_create_needs_secret_operate_on_every_bound_secret(ns):
    allowed_secret, other_secret = SecretFactory(namespace=ns), SecretFactory(namespace=ns)
    person = service_principal("partial")
    grant(person, "create:configuration", namespace=ns)
    grant(person, "operate:secret", namespace=ns, resource_kind="secret", resource_id=allowed_secret.id)
    caller = actor(person)
    assert create(caller, ns, secret_bindings={"A": ref(allowed_secret)})
    before = state()
    with pytest.raises(Forbidden) as exc:
        create(caller, ns, secret_bindings={"A": ref(allowed_secret), "B": ref(other_secret)})
    assert (exc.value.denial.action, exc.value.denial.resource_id) == ("operate", other_secret.id)
    assert state() == before


def test_audit_failure_rolls_everything_back(admin, ns):
    secret = SecretFactory(namespace=ns)
    before = state()
    with mock.patch.object(AuditEvent.objects, "create", side_effect=DatabaseError("audit down")), \
            pytest.raises(DependencyUnavailable):
        create(admin, ns, secret_bindings={"TOKEN": ref(secret)})
    assert state() == before


# --- update -------------------------------------------------------------------------------------

def bound(cfg: Configuration) -> dict[str, str]:
    return dict(cfg.secret_bindings.values_list("env_name", "secret_id"))


def test_update_replaces_values_and_increments_generation(admin, ns):
    cfg = create(admin, ns)
    for expected in (2, 3, 4):
        cfg = configuration_update(actor=admin, namespace_id=ns.id, configuration_id=cfg.id,
                                   command=ConfigurationUpdate(values=marked_document({"n": expected})))
        assert cfg.generation == expected
    cfg.refresh_from_db()
    assert (cfg.generation, cfg.values) == (4, marked_document({"n": 4}))
    events = AuditEvent.objects.filter(action="openclaw.configurations.update", resource_id=cfg.id)
    assert sorted(e.details["generation"] for e in events) == [2, 3, 4]


def test_update_bindings_omitted_kept_empty_cleared_map_replaced(admin, ns):
    first, second = SecretFactory(namespace=ns), SecretFactory(namespace=ns)
    cfg = create(admin, ns, secret_bindings={"FIRST": ref(first)})
    cfg = configuration_update(actor=admin, namespace_id=ns.id, configuration_id=cfg.id,
                               command=ConfigurationUpdate(values={}))
    assert bound(cfg) == {"FIRST": first.id}
    cfg = configuration_update(actor=admin, namespace_id=ns.id, configuration_id=cfg.id,
                               command=ConfigurationUpdate(values={}, secret_bindings={"SECOND": ref(second)}))
    assert bound(cfg) == {"SECOND": second.id}
    cfg = configuration_update(actor=admin, namespace_id=ns.id, configuration_id=cfg.id,
                               command=ConfigurationUpdate(values={}, secret_bindings={}))
    assert bound(cfg) == {}
    assert cfg.generation == 4


def test_update_with_stale_generation_conflicts_and_changes_nothing(admin, ns):
    cfg = create(admin, ns, values=marked_document({"v": 1}))
    configuration_update(actor=admin, namespace_id=ns.id, configuration_id=cfg.id,
                         command=ConfigurationUpdate(values=marked_document({"v": 2})),
                         expected_generation=1)
    before = state()
    with pytest.raises(Conflict):
        configuration_update(actor=admin, namespace_id=ns.id, configuration_id=cfg.id,
                             command=ConfigurationUpdate(values=marked_document({"v": 3})),
                             expected_generation=1)
    cfg.refresh_from_db()
    assert (cfg.generation, cfg.values) == (2, marked_document({"v": 2}))
    assert state() == before


def test_update_rechecks_retained_bindings(ns, admin):
    secret = SecretFactory(namespace=ns)
    cfg = create(admin, ns, secret_bindings={"TOKEN": ref(secret)})
    editor = service_principal("editor")
    grant(editor, "update:configuration", namespace=ns)
    caller = actor(editor)
    before = state()
    with pytest.raises(Forbidden) as exc:
        configuration_update(actor=caller, namespace_id=ns.id, configuration_id=cfg.id,
                             command=ConfigurationUpdate(values=marked_document({"edited": True})))
    assert exc.value.denial.resource_id == secret.id
    assert state() == before
    # Clearing the bindings leaves no Secret in the resulting document: no Secret permission needed.
    cfg = configuration_update(actor=caller, namespace_id=ns.id, configuration_id=cfg.id,
                               command=ConfigurationUpdate(values={}, secret_bindings={}))
    assert bound(cfg) == {}


def test_update_in_other_namespace_is_not_found(admin, ns):
    cfg = create(admin, ns)
    other = NamespaceFactory()
    with pytest.raises(NotFound):
        configuration_update(actor=admin, namespace_id=other.id, configuration_id=cfg.id,
                             command=ConfigurationUpdate(values={}))


def test_editing_never_touches_agents_or_revisions(admin, ns):
    cfg = create(admin, ns, values=marked_document({"v": 1}))
    agent = AgentFactory(namespace=ns, configuration=cfg)
    revision = AgentRevision.objects.create(namespace=ns, agent=agent, number=1, configuration_id=cfg.id,
                                            configuration_generation=1, snapshot={"values": {"v": 1}},
                                            created_by=admin.id)
    agent_before = (agent.updated_at, agent.active_revision_id, agent.desired_runtime_state)
    work_before = ControllerWork.objects.count()
    configuration_update(actor=admin, namespace_id=ns.id, configuration_id=cfg.id,
                         command=ConfigurationUpdate(values=marked_document({"v": 2})))
    agent.refresh_from_db()
    revision.refresh_from_db()
    assert (agent.updated_at, agent.active_revision_id, agent.desired_runtime_state) == agent_before
    assert (revision.configuration_generation, revision.snapshot) == (1, {"values": {"v": 1}})
    assert ControllerWork.objects.count() == work_before


# --- delete -------------------------------------------------------------------------------------

def test_delete_removes_row_bindings_and_access_bindings_on_it(admin, ns):
    secret = SecretFactory(namespace=ns)
    cfg = create(admin, ns, secret_bindings={"TOKEN": ref(secret)})
    reader = service_principal("reader")
    targeted = grant(reader, "read:configuration", namespace=ns, resource_kind="configuration", resource_id=cfg.id)
    unrelated = grant(reader, "read:secret", namespace=ns, resource_kind="secret", resource_id=secret.id)
    configuration_delete(actor=admin, namespace_id=ns.id, configuration_id=cfg.id)
    assert not Configuration.objects.filter(id=cfg.id).exists()
    assert not SecretBinding.objects.filter(secret=secret).exists()
    assert not AccessBinding.objects.filter(id=targeted.id).exists()
    assert AccessBinding.objects.filter(id=unrelated.id).exists()
    event = AuditEvent.objects.get(action="openclaw.configurations.delete", resource_id=cfg.id)
    assert event.details["removedAccessBindings"] == [targeted.id]


def test_delete_refused_while_an_agent_uses_it(admin, ns):
    cfg = create(admin, ns)
    agent = AgentFactory(namespace=ns, configuration=cfg)
    before = state()
    with pytest.raises(Conflict) as exc:
        configuration_delete(actor=admin, namespace_id=ns.id, configuration_id=cfg.id)
    assert agent.id in exc.value.message
    assert state() == before


def test_delete_refused_while_provisioning_owns_it(admin, ns):
    cfg = create(admin, ns)
    now = timezone.now()
    work = ControllerWork.objects.create(
        idempotency_key="agent:agt_x:provisioning:1", job="provision", namespace=ns,
        agent_id="agt_x", agent_target="provisioned", actor_id=admin.id, available_at=now,
        created_at=now, updated_at=now)
    AgentProvisioningWork.objects.create(
        work=work, namespace=ns, actor_id=admin.id, request_id="req_1", request_fingerprint="0" * 64,
        agent_id="agt_x", configuration_id=cfg.id, plan={})
    with pytest.raises(Conflict):
        configuration_delete(actor=admin, namespace_id=ns.id, configuration_id=cfg.id)
    ControllerWork.objects.filter(pk=work.pk).update(state="failed_permanent", completed_at=timezone.now())
    configuration_delete(actor=admin, namespace_id=ns.id, configuration_id=cfg.id)
    assert not Configuration.objects.filter(id=cfg.id).exists()


def test_delete_needs_delete_permission(admin, ns):
    cfg = create(admin, ns)
    person = service_principal("no-delete")
    grant(person, "read:configuration", "update:configuration", namespace=ns)
    before = state()
    with pytest.raises(Forbidden):
        configuration_delete(actor=actor(person), namespace_id=ns.id, configuration_id=cfg.id)
    assert state() == before
