from __future__ import annotations

import pytest
from django.db import DatabaseError

from occ.commands.agents import AgentSecretAccess
from occ.commands.base import build
from occ.errors import Conflict, DependencyUnavailable, Forbidden, InvalidRequest, NotFound
from occ.iam.actor import Actor, Source
from occ.iam.permissions import VALID_ACTIONS, Action, Kind
from occ.iam.policy import allowed
from occ.models import AccessBinding, Agent, AuditEvent, Role, Secret
from occ.services.agent_secret_access import AGENT_SECRET_ACCESS_ROLE, agent_secret_access_grant
from tests.agents_support import state
from tests.factories import AgentFactory, NamespaceFactory, SecretFactory, actor, grant, service_principal

UNKNOWN_SEC = "sec_00000000-0000-4000-8000-000000000000"


@pytest.fixture
def ns(db):
    return NamespaceFactory()


@pytest.fixture
def agent(ns):
    return AgentFactory(namespace=ns)


@pytest.fixture
def secrets(ns):
    return [SecretFactory(namespace=ns) for _ in range(3)]


@pytest.fixture
def granter(ns):
    """A caller with exactly what the grant needs on everything in the Namespace."""
    principal = service_principal("granter")
    grant(principal, "update:agent", "operate:secret", namespace=ns)
    return actor(principal)


def agent_actor(agent: Agent) -> Actor:
    return Actor(principal=agent.service_principal, source=Source.WORKER)


def test_grant_gives_exactly_secret_operate_on_exactly_those_secrets(ns, agent, secrets, granter):
    chosen, other = secrets[:2], secrets[2]
    assert not allowed(agent_actor(agent), Action.OPERATE, Kind.SECRET, namespace_id=ns.id, resource_id=chosen[0].id)
    result = agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                       command=AgentSecretAccess(secret_ids=[s.id for s in chosen]))
    assert result.service_principal_id == agent.service_principal.id
    assert result.secret_ids == [s.id for s in chosen]
    assert len(result.created_binding_ids) == 2
    subject = agent_actor(agent)
    for secret in chosen:
        assert allowed(subject, Action.OPERATE, Kind.SECRET, namespace_id=ns.id, resource_id=secret.id)
    assert not allowed(subject, Action.OPERATE, Kind.SECRET, namespace_id=ns.id, resource_id=other.id)
    # Nothing else, anywhere: every other action on every kind stays denied.
    targets = [None, agent.id, chosen[0].id, ns.id]
    for kind, actions in VALID_ACTIONS.items():
        for action in actions:
            for target in targets:
                expected = (kind, action) == (Kind.SECRET, Action.OPERATE) and target == chosen[0].id
                assert allowed(subject, action, kind, namespace_id=ns.id, resource_id=target) is expected, (
                    action, kind, target)
    other_ns = NamespaceFactory()
    assert not allowed(subject, Action.OPERATE, Kind.SECRET, namespace_id=other_ns.id, resource_id=chosen[0].id)


def test_bindings_use_one_system_role_at_exact_scope(ns, agent, secrets, granter):
    agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                              command=AgentSecretAccess(secret_ids=[secrets[0].id]))
    second = AgentFactory(namespace=ns)
    agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=second.id,
                              command=AgentSecretAccess(secret_ids=[secrets[1].id]))
    role = Role.objects.get(namespace=ns, name=AGENT_SECRET_ACCESS_ROLE)
    assert role.system is True
    assert role.permissions == ["operate:secret"]
    bindings = AccessBinding.objects.filter(role=role).order_by("created_at")
    assert [(b.principal_id, b.namespace_id, b.resource_kind, b.resource_id) for b in bindings] == [
        (agent.service_principal.id, ns.id, "secret", secrets[0].id),
        (second.service_principal.id, ns.id, "secret", secrets[1].id),
    ]
    # One Role per Namespace: another Namespace gets its own.
    other_ns = NamespaceFactory()
    other_agent, other_secret = AgentFactory(namespace=other_ns), SecretFactory(namespace=other_ns)
    grant(granter.principal, "update:agent", "operate:secret", namespace=other_ns)
    granter.forget_policy()
    agent_secret_access_grant(actor=granter, namespace_id=other_ns.id, agent_id=other_agent.id,
                              command=AgentSecretAccess(secret_ids=[other_secret.id]))
    assert Role.objects.filter(name=AGENT_SECRET_ACCESS_ROLE).count() == 2


def test_grant_is_idempotent_and_audited_each_time(ns, agent, secrets, granter):
    first = agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                      command=AgentSecretAccess(secret_ids=[secrets[0].id]))
    before = state()
    again = agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                      command=AgentSecretAccess(secret_ids=[secrets[0].id]))
    assert again.created_binding_ids == []
    assert state() == {**before, "audit": before["audit"] + 1}
    wider = agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                      command=AgentSecretAccess(secret_ids=[secrets[1].id, secrets[0].id]))
    assert len(wider.created_binding_ids) == 1
    assert AccessBinding.objects.filter(principal=agent.service_principal).count() == 2
    events = list(AuditEvent.objects.filter(action="openclaw.agents.secret_access.grant").order_by("occurred_at"))
    assert [e.details["accessBindingIds"] for e in events] == [first.created_binding_ids, [],
                                                               wider.created_binding_ids]
    assert events[2].details["secretIds"] == [secrets[1].id, secrets[0].id]
    assert events[0].details["roleCreated"] is True
    assert events[1].details["roleCreated"] is False
    assert {(e.actor_id, e.resource_kind, e.resource_id, e.namespace_id) for e in events} == {
        (granter.id, "agent", agent.id, ns.id)}


def test_audit_failure_rolls_back_role_and_bindings(ns, agent, secrets, granter, monkeypatch):
    before = state()

    def broken(*args, **kwargs):
        raise DatabaseError("audit table unavailable")

    monkeypatch.setattr(AuditEvent.objects, "create", broken)
    with pytest.raises(DependencyUnavailable):
        agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[secrets[0].id]))
    assert state() == before


def test_administer_is_not_enough(ns, agent, secrets):
    principal = service_principal("installation-admin")
    grant(principal, "administer:installation", "administer:agent")
    with pytest.raises(Forbidden) as exc:
        agent_secret_access_grant(actor=actor(principal), namespace_id=ns.id, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[secrets[0].id]))
    assert exc.value.denial.action == "update"


@pytest.mark.parametrize(("permissions", "denied"), [
    pytest.param(["operate:secret"], ("update", "agent"), id="no-agent-update"),
    pytest.param(["update:agent", "read:secret", "update:secret"], ("operate", "secret"), id="no-secret-operate"),
])
def test_caller_needs_its_own_grants(ns, agent, secrets, permissions, denied):
    principal = service_principal("partial")
    grant(principal, *permissions, namespace=ns)
    before = state()
    with pytest.raises(Forbidden) as exc:
        agent_secret_access_grant(actor=actor(principal), namespace_id=ns.id, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[secrets[0].id]))
    assert (exc.value.denial.action, exc.value.denial.resource_kind) == denied
    assert state() == before


def test_caller_needs_operate_on_every_secret(ns, agent, secrets):
    principal = service_principal("one-secret")
    grant(principal, "update:agent", namespace=ns)
    grant(principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id=secrets[0].id)
    before = state()
    with pytest.raises(Forbidden) as exc:
        agent_secret_access_grant(actor=actor(principal), namespace_id=ns.id, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[secrets[0].id, secrets[1].id]))
    assert exc.value.denial.resource_id == secrets[1].id
    assert state() == before


@pytest.mark.parametrize(("secret_ids", "path"), [
    pytest.param([], "/secretIds", id="empty"),
    pytest.param("sec", "/secretIds", id="not-a-list"),
    pytest.param([UNKNOWN_SEC.replace("0000-4000", f"{i:04d}-4000") for i in range(65)], "/secretIds", id="65"),
    pytest.param([UNKNOWN_SEC, UNKNOWN_SEC], "/secretIds/1", id="duplicate"),
    pytest.param([1], "/secretIds/0", id="int"),
    pytest.param(["sec_1"], "/secretIds/0", id="malformed"),
])
def test_bad_secret_ids(ns, agent, granter, secret_ids, path):
    before = state()
    with pytest.raises(InvalidRequest) as exc:
        agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                  command=build(AgentSecretAccess, secret_ids=secret_ids))
    assert exc.value.details[0].path == path
    assert state() == before


def test_64_secrets_are_accepted(ns, agent, granter):
    ids = [SecretFactory(namespace=ns).id for _ in range(64)]
    assert len(agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                         command=AgentSecretAccess(secret_ids=ids)).created_binding_ids) == 64


def test_unknown_foreign_or_driver_owned_secrets_are_404(ns, agent, secrets, granter):
    foreign = SecretFactory(namespace=NamespaceFactory())
    owned = Secret.objects.create(namespace=ns, name="gw", driver_id="database", backend_name="gw-x",
                                  owner_agent=agent, purpose="gateway-password")
    before = state()
    for secret_id in (UNKNOWN_SEC, foreign.id, owned.id):
        with pytest.raises(NotFound):
            agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                      command=AgentSecretAccess(secret_ids=[secrets[0].id, secret_id]))
    assert state() == before


def test_unknown_or_foreign_agent_is_404(ns, secrets, granter):
    foreign = AgentFactory(namespace=NamespaceFactory())
    with pytest.raises(NotFound):
        agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=foreign.id,
                                  command=AgentSecretAccess(secret_ids=[secrets[0].id]))


def test_deleting_agent_conflicts(ns, agent, secrets, granter):
    Agent.objects.filter(id=agent.id).update(status="deleting")
    before = state()
    with pytest.raises(Conflict) as exc:
        agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[secrets[0].id]))
    assert exc.value.code == "AGENT_DELETING"
    assert state() == before


def test_a_look_alike_role_is_never_bound(ns, agent, secrets, granter):
    Role.objects.create(namespace=ns, name=AGENT_SECRET_ACCESS_ROLE, permissions=["operate:secret", "read:agent"])
    before = state()
    with pytest.raises(Conflict):
        agent_secret_access_grant(actor=granter, namespace_id=ns.id, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[secrets[0].id]))
    assert state() == before
