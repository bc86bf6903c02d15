from __future__ import annotations

import pytest
from django.db import DatabaseError

from occ.commands.base import build
from occ.commands.iam import AccessBindingCreate, Permission, RoleCreate, ServicePrincipalCreate
from occ.errors import Conflict, DependencyUnavailable, Forbidden, InvalidRequest
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import AccessBinding, AuditEvent, Principal, Role
from occ.services.iam_policy import (
    access_binding_create,
    access_binding_delete,
    role_create,
    role_delete,
    service_principal_create,
)
from tests.factories import AgentFactory, NamespaceFactory, actor, grant, human


def new_role(by, namespace_id, name, pairs):
    permissions = [build(Permission, action=action, resource_kind=kind) for action, kind in pairs]
    command = build(RoleCreate, name=name, permissions=permissions)
    return role_create(actor=by, namespace_id=namespace_id, command=command)


def new_binding(by, namespace_id, **fields):
    return access_binding_create(actor=by, namespace_id=namespace_id,
                                 command=build(AccessBindingCreate, subject_kind="identity", **fields))


def new_service_principal(by, namespace_id, name):
    return service_principal_create(actor=by, namespace_id=namespace_id,
                                    command=build(ServicePrincipalCreate, name=name))


@pytest.fixture
def audit_down(monkeypatch):
    def broken(**kwargs):
        raise DatabaseError("audit down")

    monkeypatch.setattr(AuditEvent.objects, "create", broken)


def test_role_create_audit_failure_changes_nothing(admin_actor, ready_namespace, audit_down):
    with pytest.raises(DependencyUnavailable):
        new_role(admin_actor, ready_namespace.id, "r", [("read", "agent")])
    assert not Role.objects.filter(namespace=ready_namespace).exists()


def test_binding_create_audit_failure_changes_nothing(admin_actor, ready_namespace, monkeypatch):
    agent = AgentFactory(namespace=ready_namespace)
    role = new_role(admin_actor, ready_namespace.id, "r", [("read", "agent")])
    person = human("member")
    monkeypatch.setattr(AuditEvent.objects, "create", lambda **kw: (_ for _ in ()).throw(DatabaseError("down")))
    with pytest.raises(DependencyUnavailable):
        new_binding(admin_actor, ready_namespace.id, subject_id=person.id, role_id=role.id, resource_kind="agent",
                    resource_id=agent.id)
    assert not AccessBinding.objects.filter(principal=person).exists()


def test_service_principal_create_audit_failure_changes_nothing(admin_actor, ready_namespace, audit_down):
    with pytest.raises(DependencyUnavailable):
        new_service_principal(admin_actor, ready_namespace.id, "bot")
    assert not Principal.objects.filter(namespace=ready_namespace, name="bot").exists()


def test_binding_lifecycle_grants_and_revokes(admin_actor, ready_namespace):
    ns = ready_namespace
    agent = AgentFactory(namespace=ns)
    bot = new_service_principal(admin_actor, ns.id, "bot")
    role = new_role(admin_actor, ns.id, "deployer", [("read", "agent"), ("deploy", "agent"), ("read", "secret")])
    binding = new_binding(admin_actor, ns.id, subject_id=bot.id, role_id=role.id, resource_kind="agent",
                          resource_id=agent.id)
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
        new_role(scoped, other.id, "r", [("read", "agent")])
    assert caught.value.denial.reason == "out_of_scope"
    assert not Role.objects.filter(namespace=other).exists()


def test_the_agent_secret_access_role_name_is_reserved(admin_actor, ready_namespace):
    with pytest.raises(InvalidRequest) as exc:
        new_role(admin_actor, ready_namespace.id, "agent-secret-access", [("read", "agent")])
    assert exc.value.details[0].path == "/name"
    assert not Role.objects.filter(name="agent-secret-access").exists()
