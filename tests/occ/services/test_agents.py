from __future__ import annotations

import pytest
from django.db import DatabaseError
from pydantic.alias_generators import to_camel

from occ.commands.agents import AgentCreate, AgentUpdate, HarnessAuth
from occ.commands.base import parse
from occ.errors import Conflict, DependencyUnavailable, Forbidden, InvalidRequest, NotFound
from occ.models import Agent, AuditEvent, NamespaceStatus, Principal, PrincipalKind
from occ.services.agents import agent_create, agent_update
from tests.agents_support import state
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, SecretFactory, actor, grant, human


@pytest.fixture
def ns(db):
    return NamespaceFactory()


@pytest.fixture
def cfg(ns):
    return ConfigurationFactory(namespace=ns)


@pytest.fixture
def secret(ns):
    return SecretFactory(namespace=ns)


@pytest.fixture
def author(ns):
    """A person allowed everything an Agent create or update references in ``ns``."""
    principal = human("author")
    grant(principal, "create:agent", "update:agent", "read:configuration", "operate:secret", namespace=ns)
    return actor(principal)


def harness(secret) -> dict:
    return {"method": "api_key", "source": {"kind": "secret", "namespaceId": secret.namespace_id, "id": secret.id}}


def broken_audit(monkeypatch) -> None:
    def fail(*args, **kwargs):
        raise DatabaseError("audit table unavailable")

    monkeypatch.setattr(AuditEvent.objects, "create", fail)


def test_create_makes_agent_and_exactly_one_service_principal(ns, cfg, secret, author):
    agent = agent_create(actor=author, namespace_id=ns.id,
                         command=AgentCreate(name="helper", configuration_id=cfg.id, harness_auth=harness(secret),
                                             initial_workspace_files={"USER.md": "hi"}))
    agent.refresh_from_db()
    principals = Principal.objects.filter(agent=agent)
    assert [(p.kind, p.namespace_id) for p in principals] == [(PrincipalKind.SERVICE, ns.id)]
    assert (agent.status, agent.desired_runtime_state, agent.active_revision_id) == ("active", "stopped", None)
    assert (agent.harness_auth_method, agent.harness_secret_id) == ("api_key", secret.id)
    assert agent.initial_workspace_files == {"USER.md": "hi"}
    event = AuditEvent.objects.get(action="openclaw.agents.create")
    assert event.actor_id == author.id
    assert event.details["initialWorkspaceFiles"] == ["USER.md"]
    assert "hi" not in str(event.details)


def test_create_audit_failure_leaves_nothing(ns, cfg, author, monkeypatch):
    before = state()
    broken_audit(monkeypatch)
    with pytest.raises(DependencyUnavailable):
        agent_create(actor=author, namespace_id=ns.id, command=AgentCreate(name="helper", configuration_id=cfg.id))
    assert state() == before


def test_update_audit_failure_changes_nothing(ns, cfg, secret, author, monkeypatch):
    agent = agent_create(actor=author, namespace_id=ns.id,
                         command=AgentCreate(name="helper", configuration_id=cfg.id, harness_auth=harness(secret)))
    other_cfg = ConfigurationFactory(namespace=ns)
    stored = Agent.objects.filter(id=agent.id).values().get()
    broken_audit(monkeypatch)
    with pytest.raises(DependencyUnavailable):
        agent_update(actor=author, namespace_id=ns.id, agent_id=agent.id,
                     command=AgentUpdate(configuration_id=other_cfg.id, harness_auth=None))
    assert Agent.objects.filter(id=agent.id).values().get() == stored


def test_update_distinguishes_omitted_from_null(ns, cfg, secret, author):
    agent = agent_create(actor=author, namespace_id=ns.id,
                         command=AgentCreate(name="helper", configuration_id=cfg.id, harness_auth=harness(secret),
                                             plugin_approvers=[{"channel": "slack", "id": "U1"}]))
    kept = agent_update(actor=author, namespace_id=ns.id, agent_id=agent.id,
                        command=AgentUpdate(configuration_id=cfg.id))
    assert kept.harness_secret_id == secret.id
    assert kept.plugin_approvers == [{"channel": "slack", "id": "U1"}]
    cleared = agent_update(actor=author, namespace_id=ns.id, agent_id=agent.id,
                           command=AgentUpdate(configuration_id=cfg.id, harness_auth=None, plugin_approvers=None,
                                               backend_id=None))
    cleared.refresh_from_db()
    assert (cleared.harness_auth_method, cleared.harness_secret_id) == (None, None)
    assert cleared.plugin_approvers == []
    events = AuditEvent.objects.filter(action="openclaw.agents.update").order_by("occurred_at")
    assert [e.details["fields"] for e in events] == [
        ["configurationId"],
        ["configurationId", "backendId", "harnessAuth", "pluginApprovers"],
    ]


def test_update_never_touches_staged_files_or_runtime_state(ns, cfg, author):
    agent = agent_create(actor=author, namespace_id=ns.id,
                         command=AgentCreate(name="helper", configuration_id=cfg.id,
                                             initial_workspace_files={"SOUL.md": "s"}))
    Agent.objects.filter(id=agent.id).update(desired_runtime_state="running")
    updated = agent_update(actor=author, namespace_id=ns.id, agent_id=agent.id,
                           command=AgentUpdate(configuration_id=cfg.id))
    updated.refresh_from_db()
    assert updated.initial_workspace_files == {"SOUL.md": "s"}
    assert updated.desired_runtime_state == "running"


# Values the JSON schema cannot produce but another entry point (console, CLI) could pass.
@pytest.mark.parametrize(("kwargs", "path"), [
    pytest.param({"name": 3}, "/name", id="name-int"),
    pytest.param({"name": "a\ud800"}, "/name", id="name-surrogate"),
    pytest.param({"configuration_id": None}, "/configurationId", id="configuration-none"),
    pytest.param({"execution_mode": None}, "/executionMode", id="mode-none"),
    pytest.param({"harness_auth": ["api_key"]}, "/harnessAuth", id="harness-list"),
    pytest.param({"plugin_approvers": {"channel": "slack"}}, "/pluginApprovers", id="approvers-dict"),
    pytest.param({"plugin_approvers": ["slack"]}, "/pluginApprovers/0", id="approver-string"),
    pytest.param({"plugin_approvers": [{"channel": "slack", "id": "x" * 257}]}, "/pluginApprovers/0/id",
                 id="approver-too-long"),
    pytest.param({"plugin_approvers": [{"channel": "slack", "id": "a\x07"}]}, "/pluginApprovers/0/id",
                 id="approver-control"),
    pytest.param({"initial_workspace_files": {"AGENTS.md": b"bytes"}}, "/initialWorkspaceFiles/AGENTS.md",
                 id="file-bytes"),
    pytest.param({"initial_workspace_files": "AGENTS.md"}, "/initialWorkspaceFiles", id="files-string"),
    pytest.param({"plugins": {"": {}}}, "/plugins/", id="plugin-empty-key"),
])
def test_the_command_refuses_inputs_from_any_entry_point(ns, cfg, author, kwargs, path):
    arguments = {"name": "helper", "configuration_id": cfg.id, **kwargs}
    with pytest.raises(InvalidRequest) as exc:
        parse(AgentCreate, {to_camel(key): value for key, value in arguments.items()})
    assert exc.value.details[0].path == path


def files(content: str) -> AgentCreate:
    return parse(AgentCreate, {"name": "a", "configurationId": "cfg_00000000-0000-4000-8000-000000000000",
                               "initialWorkspaceFiles": {"AGENTS.md": content}})


def test_workspace_file_size_is_counted_in_bytes():
    assert files("x" * 16384).initial_workspace_files == {"AGENTS.md": "x" * 16384}
    assert files("€" * 5461).initial_workspace_files  # 16383 bytes
    with pytest.raises(InvalidRequest):
        files("€" * 5462)  # 16386 bytes


def test_harness_auth_parses_to_method_and_secret(ns, secret):
    parsed = parse(HarnessAuth, harness(secret))
    assert (parsed.method, parsed.secret_id, parsed.source.namespace_id) == ("api_key", secret.id, ns.id)


def test_at_most_64_plugin_approvers_are_stored_as_given(ns, cfg, author):
    given = [{"channel": "c", "id": str(i)} for i in range(64)]
    agent = agent_create(actor=author, namespace_id=ns.id,
                         command=AgentCreate(name="helper", configuration_id=cfg.id, plugin_approvers=given))
    assert agent.plugin_approvers == given
    with pytest.raises(InvalidRequest):
        parse(AgentCreate, {"name": "h", "configurationId": cfg.id, "pluginApprovers": [*given, {"channel": "c",
                                                                                              "id": "64"}]})


def test_repository_bindings_without_a_driver_are_refused_and_none_need_none(ns, cfg, author, settings):
    settings.OCC_REPOSITORY_DRIVER = ""
    with pytest.raises(DependencyUnavailable):
        agent_create(actor=author, namespace_id=ns.id,
                     command=AgentCreate(name="helper", configuration_id=cfg.id,
                                         repository_bindings=[{"repositoryRef": "acme/r", "profile": "git-read"}]))
    agent = agent_create(actor=author, namespace_id=ns.id,
                         command=AgentCreate(name="helper", configuration_id=cfg.id, plugins={},
                                             repository_bindings=[]))
    assert (agent.plugins, agent.repository_bindings) == ({}, [])


def test_denial_names_the_referenced_resource(ns, cfg, secret):
    principal = human("partial")
    grant(principal, "create:agent", "read:configuration", namespace=ns)
    with pytest.raises(Forbidden) as exc:
        agent_create(actor=actor(principal), namespace_id=ns.id,
                     command=AgentCreate(name="helper", configuration_id=cfg.id, harness_auth=harness(secret)))
    denial = exc.value.denial
    assert (denial.action, denial.resource_kind, denial.namespace_id, denial.resource_id) == (
        "operate", "secret", ns.id, secret.id)


def test_authorization_comes_before_namespace_state(ns, cfg):
    ns.status = NamespaceStatus.FAILED
    ns.save()
    with pytest.raises(Forbidden):
        agent_create(actor=actor(human("nobody")), namespace_id=ns.id,
                     command=AgentCreate(name="helper", configuration_id=cfg.id))


def test_update_of_deleting_agent(ns, cfg, author):
    agent = AgentFactory(namespace=ns, configuration=cfg)
    Agent.objects.filter(id=agent.id).update(status="deleting")
    with pytest.raises(Conflict) as exc:
        agent_update(actor=author, namespace_id=ns.id, agent_id=agent.id, command=AgentUpdate(configuration_id=cfg.id))
    assert exc.value.code == "AGENT_DELETING"


def test_backend_ids_are_all_unknown_for_now(ns, cfg, author):
    with pytest.raises(NotFound):
        agent_create(actor=author, namespace_id=ns.id,
                     command=AgentCreate(name="helper", configuration_id=cfg.id, backend_id="chatgpt"))
    agent = AgentFactory(namespace=ns, configuration=cfg)
    with pytest.raises(NotFound):
        agent_update(actor=author, namespace_id=ns.id, agent_id=agent.id,
                     command=AgentUpdate(configuration_id=cfg.id, backend_id="chatgpt"))


def test_rows_a_caller_holds_are_taken_as_given_and_only_for_their_namespace(db, django_assert_num_queries):
    """A caller whose transaction holds the Namespace and the Agent locked passes them; the
    services read neither again, refuse rows of another Namespace,
    and ``get_live_namespace(for_update=True)`` always locks the row itself."""
    from django.db import transaction

    from occ.selectors.namespaces import get_live_namespace
    from occ.services.agents import held_or_locked_agent
    from occ.services.checks import held_or_locked_namespace

    agent = AgentFactory()
    other = NamespaceFactory()
    namespace = agent.namespace
    with transaction.atomic():
        with django_assert_num_queries(0):
            assert held_or_locked_namespace(namespace.id, namespace) is namespace
            assert held_or_locked_agent(namespace, agent.id, agent) is agent
        with pytest.raises(ValueError, match="this Namespace"):
            held_or_locked_namespace(other.id, namespace)
        with pytest.raises(ValueError, match="this Namespace"):
            held_or_locked_agent(other, agent.id, agent)
        with django_assert_num_queries(1):
            assert get_live_namespace(namespace.id, for_update=True) is not namespace
