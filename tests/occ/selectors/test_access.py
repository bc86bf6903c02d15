"""``occ.selectors.access``: the reads behind Members and access ask what the writes ask
(``installation:administer``), show key metadata only, and name what bindings are on."""

from __future__ import annotations

import dataclasses

import pytest

from occ.commands.iam import AccessBindingCreate, RoleCreate, ServicePrincipalCreate
from occ.commands.service_keys import ServiceKeyCreate
from occ.errors import Forbidden, NotFound
from occ.iam.actor import Actor, Source
from occ.selectors.access import (
    account_list,
    installation_role_choices,
    namespace_access,
    service_key_list,
    service_principal_summaries,
)
from occ.services.iam_policy import access_binding_create, role_create, service_principal_create
from occ.services.service_keys import service_key_create
from tests.factories import AgentFactory, NamespaceFactory, grant, human


@pytest.fixture
def robot(admin_actor, ready_namespace):
    return service_principal_create(actor=admin_actor, namespace_id=ready_namespace.id,
                                    command=ServicePrincipalCreate(name="CI deploys"))


def namespace_reader(namespace) -> Actor:
    person = human("reader")
    grant(person, "read:namespace", "read:agent", namespace=namespace)
    return Actor(principal=person, source=Source.CONSOLE)


def test_keys_are_listed_newest_first_without_their_digest(admin_actor, ready_namespace, robot):
    for name in ("first", "second"):
        service_key_create(actor=admin_actor, command=ServiceKeyCreate(
            service_principal_id=robot.id, namespace_id=ready_namespace.id, name=name))
    principal, keys = service_key_list(actor=admin_actor, namespace_id=ready_namespace.id, principal_id=robot.id)
    assert principal.id == robot.id
    assert [k.name for k in keys] == ["second", "first"]
    assert "digest" not in {f.name for f in dataclasses.fields(keys[0])}
    assert keys[0].created_by == admin_actor.id
    assert not keys[0].expired


def test_a_principal_of_another_namespace_is_not_found_here(admin_actor, ready_namespace):
    other = NamespaceFactory(name="other")
    theirs = service_principal_create(actor=admin_actor, namespace_id=other.id,
                                      command=ServicePrincipalCreate(name="theirs"))
    with pytest.raises(NotFound):
        service_key_list(actor=admin_actor, namespace_id=ready_namespace.id, principal_id=theirs.id)


@pytest.mark.parametrize("read", [
    pytest.param(lambda actor, ns, sp: service_key_list(actor=actor, namespace_id=ns.id, principal_id=sp.id),
                 id="keys"),
    pytest.param(lambda actor, ns, sp: service_principal_summaries(actor=actor, namespace_id=ns.id), id="principals"),
    pytest.param(lambda actor, ns, sp: namespace_access(actor=actor, namespace_id=ns.id), id="bindings"),
    pytest.param(lambda actor, ns, sp: account_list(actor=actor), id="accounts"),
    pytest.param(lambda actor, ns, sp: installation_role_choices(actor=actor), id="installation-roles"),
])
def test_a_namespace_reader_may_read_none_of_it(ready_namespace, robot, read):
    with pytest.raises(Forbidden):
        read(namespace_reader(ready_namespace), ready_namespace, robot)


def test_bindings_are_named_by_subject_role_and_target(admin_actor, ready_namespace, robot):
    agent = AgentFactory(namespace=ready_namespace, name="helper")
    role = role_create(actor=admin_actor, namespace_id=ready_namespace.id, command=RoleCreate(
        name="Agent readers", permissions=[{"action": "read", "resource_kind": "agent"}]))
    access_binding_create(actor=admin_actor, namespace_id=ready_namespace.id, command=AccessBindingCreate(
        subject_kind="identity", subject_id=robot.id, role_id=role.id, resource_kind="agent", resource_id=agent.id))
    access = namespace_access(actor=admin_actor, namespace_id=ready_namespace.id)
    view = next(b for b in access.bindings if b.binding.principal_id == robot.id)
    assert (view.subject_name, view.subject_kind, view.role_name, view.target_label) == (
        "CI deploys", "service principal", "Agent readers", "Agent helper")
    assert not view.namespace_wide
    assert f"agent:{agent.id}" in {c.value for c in access.targets}
    assert access.targets[0].value == f"namespace:{ready_namespace.id}"
    labels = {c.value: c.label for c in access.subjects}
    assert labels[robot.id] == "CI deploys (service principal)"
    assert labels[agent.service_principal.id] == "helper (Agent)"


def test_the_search_matches_part_of_a_name_or_the_id(admin_actor, ready_namespace, robot):
    found = service_principal_summaries(actor=admin_actor, namespace_id=ready_namespace.id, search="deploy")
    assert [(p.id, keys) for p, keys in found] == [(robot.id, 0)]
    assert service_principal_summaries(actor=admin_actor, namespace_id=ready_namespace.id, search=robot.id[-8:])
    assert service_principal_summaries(actor=admin_actor, namespace_id=ready_namespace.id, search="nothing") == []


def test_accounts_carry_their_installation_roles(admin_actor):
    accounts = {a.username: a for a in account_list(actor=admin_actor)}
    assert accounts["admin"].roles  # the bootstrap administrator's Role
    assert accounts["admin"].active
    assert [a.username for a in account_list(actor=admin_actor, search="adm")] == ["admin"]
