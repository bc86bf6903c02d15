from __future__ import annotations

import json

import pytest
from django.db import DatabaseError

from occ.commands.base import build
from occ.commands.iam import AccessBindingCreate, Permission, RoleCreate, ServicePrincipalCreate
from occ.commands.service_keys import ServiceKeyCreate
from occ.errors import Conflict, DependencyUnavailable, Forbidden, InvalidRequest, NotFound
from occ.iam.keys import actor_for_token, digest
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import AccessBinding, AuditEvent, Principal, Role, ServiceKey
from occ.selectors.access import service_key_list
from occ.services.iam_policy import (
    access_binding_create,
    access_binding_delete,
    role_create,
    role_delete,
    service_principal_create,
    service_principal_delete,
)
from occ.services.service_keys import service_key_create
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


# --- Installation service principals (no Namespace) -------------------------------------------

def issue_key(by, principal):
    return service_key_create(actor=by, command=build(ServiceKeyCreate, service_principal_id=principal.id,
                                                      name="ci", expires_in=86_400))


def test_an_installation_service_principal_is_made_and_audited_in_one_transaction(admin_actor):
    made = new_service_principal(admin_actor, None, "fleet automation")
    assert (made.namespace_id, made.agent_id, made.kind) == (None, None, "service")
    event = AuditEvent.objects.get(action="openclaw.iam.service_principals.create", resource_id=made.id)
    assert (event.namespace_id, event.actor_id, event.resource_kind) == (None, admin_actor.id, "service_principal")


def test_an_installation_service_principal_is_not_made_when_the_audit_fails(admin_actor, audit_down):
    with pytest.raises(DependencyUnavailable):
        new_service_principal(admin_actor, None, "fleet automation")
    assert not Principal.objects.filter(name="fleet automation").exists()


@pytest.fixture
def namespace_admin(bootstrap, ready_namespace):
    """Administers one Namespace fully, but not the Installation."""
    person = human("ns-admin")
    grant(person, "read:namespace", "update:namespace", "delete:namespace", namespace=ready_namespace)
    return actor(person)


def test_only_an_installation_administrator_makes_installation_service_principals(admin_actor, namespace_admin,
                                                                                   ready_namespace):
    person = human("scoped")
    grant(person, "administer:installation")
    namespace_key = actor(person, key_namespace_id=ready_namespace.id)
    for refused, reason in ((namespace_admin, "no_matching_grant"), (namespace_key, "out_of_scope")):
        with pytest.raises(Forbidden) as caught:
            new_service_principal(refused, None, "sneaky")
        assert (caught.value.denial.action, caught.value.denial.reason) == ("administer", reason)
    assert not Principal.objects.filter(name="sneaky").exists()
    assert not AuditEvent.objects.filter(action="openclaw.iam.service_principals.create").exists()


def test_an_installation_key_is_shown_once_and_deleting_the_principal_ends_it(admin_actor):
    made = new_service_principal(admin_actor, None, "fleet automation")
    issued = issue_key(admin_actor, made)
    record = ServiceKey.objects.get(principal=made)
    assert record.digest == digest(issued.token) != issued.token  # only the digest is kept
    assert actor_for_token(issued.token).scope_namespace_id is None
    listed = service_key_list(actor=admin_actor, namespace_id=None, principal_id=made.id)[1]
    assert [k.id for k in listed] == [record.id]
    assert issued.token not in repr(listed)
    role = Role.objects.get(name="administrator", system=True)
    binding = AccessBinding.objects.create(principal=made, role=role)

    service_principal_delete(actor=admin_actor, namespace_id=None, principal_id=made.id)
    assert actor_for_token(issued.token) is None
    assert not Principal.objects.filter(id=made.id).exists()
    assert not AccessBinding.objects.filter(id=binding.id).exists()
    event = AuditEvent.objects.get(action="openclaw.iam.service_principals.delete", resource_id=made.id)
    assert event.namespace_id is None
    assert {k: event.details[k] for k in ("name", "revokedServiceKeys", "removedAccessBindings")} == {
        "name": "fleet automation", "revokedServiceKeys": [record.id], "removedAccessBindings": [binding.id]}
    assert issued.token not in json.dumps([e.details for e in AuditEvent.objects.all()])


def test_deleting_is_refused_to_a_non_administrator_and_changes_nothing(admin_actor, namespace_admin):
    made = new_service_principal(admin_actor, None, "fleet automation")
    issued = issue_key(admin_actor, made)
    with pytest.raises(Forbidden):
        service_principal_delete(actor=namespace_admin, namespace_id=None, principal_id=made.id)
    assert actor_for_token(issued.token) is not None
    assert not AuditEvent.objects.filter(action="openclaw.iam.service_principals.delete").exists()


def test_deleting_names_the_exact_scope(admin_actor, ready_namespace):
    """A Namespace's principal is not the Installation's, nor an Agent's or a person's."""
    in_namespace = new_service_principal(admin_actor, ready_namespace.id, "ns bot")
    agent_principal = Principal.objects.get(agent=AgentFactory(namespace=ready_namespace))
    for principal_id in (in_namespace.id, agent_principal.id, human("someone").id):
        with pytest.raises(NotFound):
            service_principal_delete(actor=admin_actor, namespace_id=None, principal_id=principal_id)
    installation_one = new_service_principal(admin_actor, None, "fleet")
    with pytest.raises(NotFound):
        service_principal_delete(actor=admin_actor, namespace_id=ready_namespace.id, principal_id=installation_one.id)
    service_principal_delete(actor=admin_actor, namespace_id=ready_namespace.id, principal_id=in_namespace.id)
    assert AuditEvent.objects.get(action="openclaw.iam.service_principals.delete",
                                  resource_id=in_namespace.id).namespace_id == ready_namespace.id
    assert Principal.objects.filter(id__in=[agent_principal.id, installation_one.id]).count() == 2


def test_nobody_deletes_the_principal_they_act_as(admin_actor):
    with pytest.raises(Conflict):
        service_principal_delete(actor=admin_actor, namespace_id=None, principal_id=admin_actor.id)
    assert Principal.objects.filter(id=admin_actor.id).exists()


def test_a_delete_whose_audit_fails_keeps_the_principal_and_its_keys(admin_actor, monkeypatch):
    made = new_service_principal(admin_actor, None, "fleet automation")
    issued = issue_key(admin_actor, made)
    monkeypatch.setattr(AuditEvent.objects, "create", lambda **kw: (_ for _ in ()).throw(DatabaseError("down")))
    with pytest.raises(DependencyUnavailable):
        service_principal_delete(actor=admin_actor, namespace_id=None, principal_id=made.id)
    assert actor_for_token(issued.token) is not None
