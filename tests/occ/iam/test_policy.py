from __future__ import annotations

import pytest

from occ.errors import Forbidden
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.models import Restriction
from tests.factories import AgentFactory, NamespaceFactory, actor, grant, human


@pytest.fixture
def two_namespaces(db):
    return NamespaceFactory(), NamespaceFactory()


def test_no_grant_denies(two_namespaces):
    ns, _ = two_namespaces
    person = human("nobody")
    assert not allowed(actor(person), Action.READ, Kind.NAMESPACE, namespace_id=ns.id)


def test_namespace_binding_covers_only_its_namespace(two_namespaces):
    ns, other = two_namespaces
    person = human("reader")
    grant(person, "read:agent", namespace=ns)
    a = actor(person)
    assert allowed(a, Action.READ, Kind.AGENT, namespace_id=ns.id, resource_id="agt_x")
    assert not allowed(a, Action.READ, Kind.AGENT, namespace_id=other.id, resource_id="agt_x")


def test_no_action_implies_another(two_namespaces):
    ns, _ = two_namespaces
    person = human("admin-ish")
    grant(person, "administer:agent", "deploy:agent", namespace=ns)
    assert not allowed(actor(person), Action.READ, Kind.AGENT, namespace_id=ns.id, resource_id="agt_x")


def test_exact_binding_applies_only_its_kind_and_resource(two_namespaces):
    ns, _ = two_namespaces
    agent = AgentFactory(namespace=ns)
    person = human("exact")
    grant(person, "read:agent", "read:agent_revision", namespace=ns, resource_kind="agent", resource_id=agent.id)
    a = actor(person)
    assert allowed(a, Action.READ, Kind.AGENT, namespace_id=ns.id, resource_id=agent.id)
    assert not allowed(a, Action.READ, Kind.AGENT, namespace_id=ns.id, resource_id="agt_other")
    # A revision permission bound on an Agent target grants nothing.
    assert not allowed(a, Action.READ, Kind.AGENT_REVISION, namespace_id=ns.id, resource_id=agent.id)
    assert not allowed(a, Action.CREATE, Kind.AGENT, namespace_id=ns.id)


def test_restriction_wins_over_grant(two_namespaces):
    ns, _ = two_namespaces
    person = human("restricted")
    grant(person, "read:secret")
    Restriction.objects.create(principal=person, action="read", resource_kind="secret", namespace=ns)
    a = actor(person)
    assert not allowed(a, Action.READ, Kind.SECRET, namespace_id=ns.id, resource_id="sec_1")
    other = NamespaceFactory()
    assert allowed(a, Action.READ, Kind.SECRET, namespace_id=other.id, resource_id="sec_1")


def test_namespace_scoped_key_reaches_nothing_outside(two_namespaces):
    ns, other = two_namespaces
    person = human("scoped")
    grant(person, "read:namespace", "read:installation")
    a = actor(person, key_namespace_id=ns.id)
    assert allowed(a, Action.READ, Kind.NAMESPACE, namespace_id=ns.id)
    assert not allowed(a, Action.READ, Kind.NAMESPACE, namespace_id=other.id)
    assert not allowed(a, Action.READ, Kind.INSTALLATION)


def test_authorize_raises_forbidden_with_denial(two_namespaces):
    ns, _ = two_namespaces
    person = human("denied")
    with pytest.raises(Forbidden) as exc:
        authorize(actor(person), Action.DELETE, Kind.NAMESPACE, namespace_id=ns.id)
    assert exc.value.denial.action == "delete"
    assert exc.value.denial.resource_id == ns.id
