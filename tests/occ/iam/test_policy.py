from __future__ import annotations

import pytest

from occ.errors import Forbidden
from occ.iam.permissions import Action, Kind
from occ.iam.policy import Policy, allowed, allowed_in, authorize, load_with_policies, reads_whole_namespace
from occ.models import Principal, Restriction
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


def test_a_binding_on_an_agent_covers_its_revisions_with_the_roles_revision_permissions(two_namespaces):
    ns, other = two_namespaces
    agent, sibling = AgentFactory(namespace=ns), AgentFactory(namespace=ns)
    owner, chatter = human("owner"), human("chatter")
    grant(owner, "read:agent", "read:agent_revision", namespace=ns, resource_kind="agent", resource_id=agent.id)
    grant(chatter, "read:agent", "invoke:agent", namespace=ns, resource_kind="agent", resource_id=agent.id)
    mine, theirs = actor(owner), actor(chatter)
    assert allowed(mine, Action.READ, Kind.AGENT_REVISION, namespace_id=ns.id, resource_id="rev_1", parent_id=agent.id)
    assert not allowed(mine, Action.READ, Kind.AGENT_REVISION, namespace_id=ns.id, resource_id="rev_2",
                       parent_id=sibling.id)
    assert not allowed(mine, Action.READ, Kind.AGENT_REVISION, namespace_id=other.id, resource_id="rev_1",
                       parent_id=agent.id)
    # The Role must hold the revision permission: an Agent permission never reveals one.
    assert not allowed(theirs, Action.READ, Kind.AGENT_REVISION, namespace_id=ns.id, resource_id="rev_1",
                       parent_id=agent.id)
    readable = allowed_in(mine, Action.READ, Kind.AGENT_REVISION, namespace_id=ns.id)
    assert readable("rev_1", agent.id)
    assert not readable("rev_1")
    # A Restriction on the revision wins.
    Restriction.objects.create(principal=owner, action="read", resource_kind="agent_revision", namespace=ns,
                               resource_id="rev_1")
    assert not allowed(actor(owner), Action.READ, Kind.AGENT_REVISION, namespace_id=ns.id, resource_id="rev_1",
                       parent_id=agent.id)


def test_reading_one_resource_reveals_its_namespace_but_not_the_whole_of_it(two_namespaces):
    ns, other = two_namespaces
    agent = AgentFactory(namespace=ns)
    shared, operator_only, reader = human("shared"), human("operator-only"), human("reader")
    grant(shared, "read:agent", namespace=ns, resource_kind="agent", resource_id=agent.id)
    grant(operator_only, "operate:secret", namespace=ns, resource_kind="secret", resource_id="sec_1")
    grant(reader, "read:namespace", namespace=ns)
    assert allowed(actor(shared), Action.READ, Kind.NAMESPACE, namespace_id=ns.id)
    assert not allowed(actor(shared), Action.READ, Kind.NAMESPACE, namespace_id=other.id)
    assert not reads_whole_namespace(actor(shared), ns.id)
    # A binding that reads nothing reveals nothing; a Role's own read:namespace is the whole Namespace.
    assert not allowed(actor(operator_only), Action.READ, Kind.NAMESPACE, namespace_id=ns.id)
    assert reads_whole_namespace(actor(reader), ns.id)
    assert not reads_whole_namespace(actor(reader, key_namespace_id=other.id), ns.id)
    # A Restriction on reading the Namespace wins over the derived read too.
    Restriction.objects.create(principal=shared, action="read", resource_kind="namespace", namespace=ns)
    assert not allowed(actor(shared), Action.READ, Kind.NAMESPACE, namespace_id=ns.id)


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


def test_load_with_policies_matches_separate_loads_in_three_queries(two_namespaces, django_assert_num_queries):
    """The worker's combined load gives each principal exactly the policy Policy.load gives
    it: its own bindings, its own restrictions and everyone's, never the other one's."""
    ns, other = two_namespaces
    person = human("initiator")
    agent = AgentFactory(namespace=ns)
    agent_principal = Principal.objects.get(agent=agent)
    grant(person, "deploy:agent", "read:secret", namespace=ns)
    grant(agent_principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id="sec_a")
    Restriction.objects.create(principal=person, action="read", resource_kind="secret", namespace=other)
    Restriction.objects.create(principal=None, action="operate", resource_kind="secret", namespace=other)

    with django_assert_num_queries(3):  # the principals, their bindings, the restrictions
        loaded_person, loaded_agent = load_with_policies(person.id, agent_id=agent.id)
    assert loaded_person is not None
    assert loaded_agent is not None
    assert (loaded_person[0].id, loaded_person[0].user_id, loaded_person[0].kind) == (
        person.id, person.user_id, "human")
    assert (loaded_agent[0].id, loaded_agent[0].agent_id, loaded_agent[0].namespace_id) == (
        agent_principal.id, agent.id, ns.id)
    assert loaded_person[0].user.username == "initiator"  # a usable model instance

    checks = [(Action.DEPLOY, Kind.AGENT, ns.id, agent.id), (Action.READ, Kind.SECRET, ns.id, "sec_a"),
              (Action.READ, Kind.SECRET, other.id, "sec_a"), (Action.OPERATE, Kind.SECRET, ns.id, "sec_a"),
              (Action.OPERATE, Kind.SECRET, ns.id, "sec_b"), (Action.OPERATE, Kind.SECRET, other.id, "sec_a")]
    for principal, (_, policy) in ((person, loaded_person), (agent_principal, loaded_agent)):
        separate = Policy.load(principal)
        for action, kind, namespace_id, resource_id in checks:
            assert policy.allows(action, kind, namespace_id=namespace_id, resource_id=resource_id) == \
                separate.allows(action, kind, namespace_id=namespace_id, resource_id=resource_id)
    assert loaded_agent[1].allows(Action.OPERATE, Kind.SECRET, namespace_id=ns.id, resource_id="sec_a")
    assert not loaded_person[1].allows(Action.OPERATE, Kind.SECRET, namespace_id=ns.id, resource_id="sec_a")
    assert not loaded_agent[1].allows(Action.DEPLOY, Kind.AGENT, namespace_id=ns.id, resource_id=agent.id)


def test_load_with_policies_answers_none_for_a_missing_principal(two_namespaces):
    ns, _ = two_namespaces
    person = human("alone")
    grant(person, "read:agent", namespace=ns)
    loaded_person, loaded_agent = load_with_policies(person.id, agent_id="agt_missing")
    assert loaded_person is not None
    assert loaded_agent is None
    assert loaded_person[1].allows(Action.READ, Kind.AGENT, namespace_id=ns.id, resource_id="agt_x")
    assert load_with_policies("prn_missing", agent_id=None) == (None, None)


def test_a_policy_is_two_queries_however_many_bindings_and_restrictions(two_namespaces, django_assert_num_queries):
    ns, other = two_namespaces
    person = human("many")
    for namespace in (ns, other):
        grant(person, "read:agent", "read:secret", namespace=namespace)
    Restriction.objects.create(principal=person, action="read", resource_kind="secret", namespace=other)
    Restriction.objects.create(principal=None, action="read", resource_kind="agent", namespace=other)
    Restriction.objects.create(principal=human("someone-else"), action="read", resource_kind="agent", namespace=ns)

    with django_assert_num_queries(2):  # the bindings with their Roles, the restrictions
        policy = Policy.load(person)

    assert policy.allows(Action.READ, Kind.SECRET, namespace_id=ns.id, resource_id="sec_a")
    assert not policy.allows(Action.READ, Kind.SECRET, namespace_id=other.id, resource_id="sec_a")
    assert policy.allows(Action.READ, Kind.AGENT, namespace_id=ns.id, resource_id="agt_a")  # not its restriction
    assert not policy.allows(Action.READ, Kind.AGENT, namespace_id=other.id, resource_id="agt_a")  # everyone's
