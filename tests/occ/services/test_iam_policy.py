from __future__ import annotations

import pytest
from django.db import DatabaseError

from occ.errors import Conflict, DependencyUnavailable, Forbidden, InvalidRequest
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import AccessBinding, AuditEvent, Principal, Role
from occ.services.iam_policy import (
    access_binding_create,
    access_binding_delete,
    check_role_permissions,
    role_create,
    role_delete,
    service_principal_create,
)
from tests.factories import AgentFactory, NamespaceFactory, actor, grant, human


@pytest.fixture
def audit_down(monkeypatch):
    def broken(**kwargs):
        raise DatabaseError("audit down")

    monkeypatch.setattr(AuditEvent.objects, "create", broken)


@pytest.mark.parametrize(("pairs", "stored"), [
    ([("read", "agent")], ["read:agent"]),
    ([("operate", "secret"), ("read", "namespace"), ("read", "agent_revision")],
     ["operate:secret", "read:namespace", "read:agent_revision"]),
    ([("use", "agent"), ("read_logs", "agent"), ("create", "configuration")],
     ["use:agent", "read_logs:agent", "create:configuration"]),
])
def test_check_role_permissions_keeps_order(pairs, stored):
    assert check_role_permissions(pairs) == stored


@pytest.mark.parametrize(("pairs", "path"), [
    ([], "/permissions"),
    ([("read", "agent"), ("read", "agent")], "/permissions/1"),
    ([("read", "Agent")], "/permissions/0/resourceKind"),
    ([("READ", "agent")], "/permissions/0/action"),
    ([("administer", "installation")], "/permissions/0/resourceKind"),
    ([("create", "namespace")], "/permissions/0/action"),
    ([("read", "agent"), ("operate", "configuration")], "/permissions/1/action"),
    ([("read", "")], "/permissions/0/resourceKind"),
])
def test_check_role_permissions_points_at_the_bad_pair(pairs, path):
    with pytest.raises(InvalidRequest) as caught:
        check_role_permissions(pairs)
    assert [d.path for d in caught.value.details] == [path]


def test_role_create_audit_failure_changes_nothing(admin_actor, ready_namespace, audit_down):
    with pytest.raises(DependencyUnavailable):
        role_create(actor=admin_actor, namespace_id=ready_namespace.id, name="r", permissions=[("read", "agent")])
    assert not Role.objects.filter(namespace=ready_namespace).exists()


def test_binding_create_audit_failure_changes_nothing(admin_actor, ready_namespace, monkeypatch):
    agent = AgentFactory(namespace=ready_namespace)
    role = role_create(actor=admin_actor, namespace_id=ready_namespace.id, name="r", permissions=[("read", "agent")])
    person = human("member")
    monkeypatch.setattr(AuditEvent.objects, "create", lambda **kw: (_ for _ in ()).throw(DatabaseError("down")))
    with pytest.raises(DependencyUnavailable):
        access_binding_create(actor=admin_actor, namespace_id=ready_namespace.id, subject_kind="identity",
                              subject_id=person.id, role_id=role.id, resource_kind="agent", resource_id=agent.id)
    assert not AccessBinding.objects.filter(principal=person).exists()


def test_service_principal_create_audit_failure_changes_nothing(admin_actor, ready_namespace, audit_down):
    with pytest.raises(DependencyUnavailable):
        service_principal_create(actor=admin_actor, namespace_id=ready_namespace.id, name="bot")
    assert not Principal.objects.filter(namespace=ready_namespace, name="bot").exists()


def test_binding_lifecycle_grants_and_revokes(admin_actor, ready_namespace):
    ns = ready_namespace
    agent = AgentFactory(namespace=ns)
    bot = service_principal_create(actor=admin_actor, namespace_id=ns.id, name="bot")
    role = role_create(actor=admin_actor, namespace_id=ns.id, name="deployer",
                       permissions=[("read", "agent"), ("deploy", "agent"), ("read", "secret")])
    binding = access_binding_create(actor=admin_actor, namespace_id=ns.id, subject_kind="identity",
                                    subject_id=bot.id, role_id=role.id, resource_kind="agent", resource_id=agent.id)
    bot_actor = actor(bot)
    assert allowed(bot_actor, Action.DEPLOY, Kind.AGENT, namespace_id=ns.id, resource_id=agent.id)
    # Only the Role's permissions of the target's kind apply.
    assert not allowed(bot_actor, Action.READ, Kind.SECRET, namespace_id=ns.id, resource_id="sec_any")
    with pytest.raises(Conflict):
        role_delete(actor=admin_actor, namespace_id=ns.id, role_id=role.id)
    access_binding_delete(actor=admin_actor, namespace_id=ns.id, binding_id=binding.id)
    assert not allowed(actor(bot), Action.DEPLOY, Kind.AGENT, namespace_id=ns.id, resource_id=agent.id)
    role_delete(actor=admin_actor, namespace_id=ns.id, role_id=role.id)
    actions = list(AuditEvent.objects.filter(namespace_id=ns.id, action__startswith="openclaw.iam.")
                   .order_by("occurred_at").values_list("action", flat=True))
    assert actions == ["openclaw.iam.service_principals.create", "openclaw.iam.roles.create",
                       "openclaw.iam.access_bindings.create", "openclaw.iam.access_bindings.delete",
                       "openclaw.iam.roles.delete"]


def test_policy_of_another_namespace_is_forbidden_to_a_namespace_scoped_actor(bootstrap):
    ns, other = NamespaceFactory(), NamespaceFactory()
    person = human("scoped")
    grant(person, "administer:installation", "read:namespace")
    scoped = actor(person, key_namespace_id=ns.id)
    with pytest.raises(Forbidden) as caught:
        role_create(actor=scoped, namespace_id=other.id, name="r", permissions=[("read", "agent")])
    assert caught.value.denial.reason == "out_of_scope"
    assert not Role.objects.filter(namespace=other).exists()


def test_the_agent_secret_access_role_name_is_reserved(admin_actor, ready_namespace):
    from occ.errors import InvalidRequest
    from occ.models import Role
    from occ.services.iam_policy import role_create

    with pytest.raises(InvalidRequest) as exc:
        role_create(actor=admin_actor, namespace_id=ready_namespace.id, name="agent-secret-access",
                    permissions=[("read", "agent")])
    assert exc.value.details[0].path == "/name"
    assert not Role.objects.filter(name="agent-secret-access").exists()
