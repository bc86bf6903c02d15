"""A Namespace administrator manages that Namespace's access, and never grants more than they hold
(docs/access.md, "Managing a Namespace's access"; issue 26)."""

from __future__ import annotations

import pytest

from occ.iam.roles import NAMESPACE_ADMINISTRATOR
from occ.models import AccessBinding, AuditEvent, AuditKind, Principal, Restriction, Role
from tests.conftest import ApiClient
from tests.factories import AgentFactory, NamespaceFactory, human, key_for, service_principal


def _perm(action: str, kind: str) -> dict[str, str]:
    return {"action": action, "resourceKind": kind}


def _snapshot() -> tuple[int, int, int]:
    return Role.objects.count(), AccessBinding.objects.count(), Principal.objects.count()


@pytest.fixture
def team(ready_namespace):
    """A person who is Namespace administrator of ``ns`` (the built-in Role bound on it), signed in."""
    ns = ready_namespace
    lead = human("team-lead")
    AccessBinding.objects.create(principal=lead, role=Role.objects.get(name=NAMESPACE_ADMINISTRATOR,
                                                                       namespace__isnull=True), namespace=ns)
    client = ApiClient(None)
    client.client.force_login(lead.user)
    return {"ns": ns, "lead": lead, "client": client, "agent": AgentFactory(namespace=ns),
            "colleague": human("colleague"), "bot": service_principal("ci-bot", ns)}


def _iam(ns) -> str:
    return f"/namespaces/{ns.id}/iam"


def test_a_namespace_administrator_makes_a_role_and_binds_it_within_their_own_grants(team):
    client, ns = team["client"], team["ns"]
    created = client.post(f"{_iam(ns)}/roles", {"name": "deployers", "permissions": [
        _perm("read", "agent"), _perm("deploy", "agent"), _perm("read_logs", "agent")]})
    assert created.status == 201, created.body
    bound = client.post(f"{_iam(ns)}/access-bindings", {
        "subjectKind": "identity", "subjectId": team["colleague"].id, "roleId": created.data["id"],
        "resourceKind": "agent", "resourceId": team["agent"].id})
    assert bound.status == 201, bound.body
    assert client.get(f"{_iam(ns)}/roles").status == 200
    assert client.post(f"{_iam(ns)}/service-principals", {"name": "deploy-bot"}).status == 201
    assert AccessBinding.objects.filter(principal=team["colleague"], resource_id=team["agent"].id).exists()
    actions = set(AuditEvent.objects.filter(actor_id=team["lead"].id).values_list("action", flat=True))
    assert {"openclaw.iam.roles.create", "openclaw.iam.access_bindings.create"} <= actions
    summary = client.get(f"/namespaces/{ns.id}/permissions")
    assert summary.data["actions"]["manageAccess"] is True


def test_a_role_holding_a_permission_they_lack_is_refused_and_nothing_is_written(team):
    client, ns = team["client"], team["ns"]
    before = _snapshot()
    # The built-in Namespace administrator holds no preset permission.
    refused = client.post(f"{_iam(ns)}/roles", {"name": "preset-readers", "permissions": [
        _perm("read", "agent"), _perm("read", "preset")]})
    assert refused.status == 403
    assert refused.error_code == "FORBIDDEN"
    assert "read:preset" in refused.body["error"]["message"]
    assert _snapshot() == before
    denial = AuditEvent.objects.get(kind=AuditKind.AUTHORIZATION_DENIAL, actor_id=team["lead"].id)
    assert (denial.details["reason"], denial.details["permission"]) == ("grant_beyond_own", "read:preset")


def test_binding_a_role_on_a_resource_where_they_lack_one_of_its_permissions_is_refused(team, api):
    """An operator's Restriction denies the lead ``deploy`` on one Agent: they may bind a deploying
    Role on another Agent, not on that one (the check is on the exact target)."""
    client, ns = team["client"], team["ns"]
    guarded = AgentFactory(namespace=ns)
    Restriction.objects.create(principal=team["lead"], namespace=ns, action="deploy", resource_kind="agent",
                               resource_id=guarded.id)
    role = api.post(f"{_iam(ns)}/roles", {"name": "deployers", "permissions": [
        _perm("read", "agent"), _perm("deploy", "agent")]}).data  # made by the Installation administrator

    def bind(agent_id: str):
        return client.post(f"{_iam(ns)}/access-bindings", {
            "subjectKind": "identity", "subjectId": team["bot"].id, "roleId": role["id"],
            "resourceKind": "agent", "resourceId": agent_id})

    before = _snapshot()
    refused = bind(guarded.id)
    assert refused.status == 403
    assert "deploy:agent" in refused.body["error"]["message"]
    assert _snapshot() == before
    assert bind(team["agent"].id).status == 201
    # The Installation administrator is not limited by what they hold themselves.
    assert api.post(f"{_iam(ns)}/access-bindings", {
        "subjectKind": "identity", "subjectId": team["bot"].id, "roleId": role["id"],
        "resourceKind": "agent", "resourceId": guarded.id}).status == 201


def test_binding_a_role_on_an_agent_needs_its_revisions_permissions_throughout_the_namespace(team, api):
    """A Role bound on an Agent also applies to the Agent's revisions (``PARENT_KINDS``): a
    Namespace administrator whom an operator's Restriction denies ``read:agent_revision`` may not
    hand it out on any Agent, though they hold ``read:agent`` there; without the Restriction they may."""
    client, ns, agent = team["client"], team["ns"], team["agent"]
    restriction = Restriction.objects.create(principal=team["lead"], namespace=ns, action="read",
                                             resource_kind="agent_revision")
    role = api.post(f"{_iam(ns)}/roles", {"name": "revision-readers", "permissions": [
        _perm("read", "agent"), _perm("read", "agent_revision")]}).data  # made by the Installation administrator

    def bind():
        return client.post(f"{_iam(ns)}/access-bindings", {
            "subjectKind": "identity", "subjectId": team["bot"].id, "roleId": role["id"],
            "resourceKind": "agent", "resourceId": agent.id})

    before = _snapshot()
    refused = bind()
    assert refused.status == 403, refused.body
    assert "read:agent_revision" in refused.body["error"]["message"]
    assert _snapshot() == before
    denial = AuditEvent.objects.get(kind=AuditKind.AUTHORIZATION_DENIAL, actor_id=team["lead"].id)
    assert (denial.details["reason"], denial.details["permission"]) == ("grant_beyond_own", "read:agent_revision")
    restriction.delete()
    assert bind().status == 201


def test_access_management_stays_inside_their_namespace(team):
    elsewhere = NamespaceFactory()
    before = _snapshot()
    for method, suffix, body in (("GET", "roles", None), ("POST", "service-principals", {"name": "x"}),
                                 ("POST", "roles", {"name": "r", "permissions": [_perm("read", "agent")]})):
        response = team["client"].request(method, f"{_iam(elsewhere)}/{suffix}", body)
        assert response.status == 403, (method, suffix)
    assert _snapshot() == before


def test_no_namespace_role_can_hand_out_access_management(team):
    refused = team["client"].post(f"{_iam(team['ns'])}/roles", {"name": "sub-admins", "permissions": [
        _perm("administer", "namespace")]})
    assert refused.status == 400
    assert not Role.objects.filter(name="sub-admins").exists()


def test_a_namespace_scoped_key_of_a_namespace_administrator_manages_that_namespace_only(team):
    bot = service_principal("access-bot", team["ns"])
    AccessBinding.objects.create(principal=bot, role=Role.objects.get(name=NAMESPACE_ADMINISTRATOR,
                                                                      namespace__isnull=True), namespace=team["ns"])
    client = ApiClient(key_for(bot, namespace=team["ns"]))
    assert client.get(f"{_iam(team['ns'])}/roles").status == 200
    assert client.get(f"{_iam(NamespaceFactory())}/roles").status == 403
