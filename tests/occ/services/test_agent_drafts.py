"""``agent_draft_create``: Configuration, stopped Agent and secret access in one transaction."""

from __future__ import annotations

import pytest

from occ.commands.agents import AgentDraftCreate
from occ.commands.base import build
from occ.commands.secrets import SecretCreate
from occ.errors import Conflict, InvalidRequest, NotFound
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import AccessBinding, Agent, AuditEvent, Configuration
from occ.services import agent_drafts
from occ.services.agent_drafts import agent_draft_create
from occ.services.secrets import secret_create

MISSING = "sec_00000000-0000-4000-8000-000000000009"


def ref(namespace_id: str, secret_id: str) -> dict[str, str]:
    return {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}


@pytest.fixture
def draft(admin_actor, ready_namespace):
    model = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                          command=build(SecretCreate, name="model", value="model-key-1"))
    team = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                         command=build(SecretCreate, name="team", value="team-token-1"))

    def _draft(**changes):
        fields = {
            "name": "helper",
            "configuration": {"kind": "agent", "values": {
                "agents": {"defaults": {"model": {"primary": "openai/gpt-6-astra"}}}}, "secretBindings": {
                "TEAM_TOKEN": {"source": ref(ready_namespace.id, team.id), "delivery": {"type": "env"}}}},
            "harness_auth": {"method": "api_key", "source": ref(ready_namespace.id, model.id)},
            "initial_workspace_files": {"SOUL.md": "Be kind.\n"},
            **changes,
        }
        return agent_draft_create(actor=admin_actor, namespace_id=ready_namespace.id,
                                  command=build(AgentDraftCreate, **fields))
    _draft.model, _draft.team = model, team
    return _draft


def test_saves_configuration_agent_and_access_each_audited(draft):
    agent = draft()
    assert agent.configuration.secret_bindings.get().secret_id == draft.team.id
    assert agent.configuration.name == f"{agent.name} configuration"
    assert agent.harness_secret_id == draft.model.id
    assert agent.initial_workspace_files == {"SOUL.md": "Be kind.\n"}
    agent_actor = Actor(principal=agent.service_principal, source=Source.API)
    for secret in (draft.model, draft.team):
        assert allowed(agent_actor, Action.OPERATE, Kind.SECRET, namespace_id=agent.namespace_id,
                       resource_id=secret.id)
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"openclaw.configurations.create", "openclaw.agents.create",
            "openclaw.agents.secret_access.grant"} <= actions


def test_a_refused_grant_leaves_nothing_behind(draft, monkeypatch):
    def refuse(**kwargs):
        raise Conflict("A Role named agent-secret-access exists that is not the system Role.")

    monkeypatch.setattr(agent_drafts, "agent_secret_access_grant", refuse)
    bindings = AccessBinding.objects.count()
    audits = AuditEvent.objects.count()
    with pytest.raises(Conflict):
        draft()
    assert (Agent.objects.count(), Configuration.objects.count()) == (0, 0)
    assert AccessBinding.objects.count() == bindings
    assert AuditEvent.objects.count() == audits


def test_a_taken_name_leaves_no_configuration(draft):
    draft()
    with pytest.raises(Conflict):
        draft()
    assert (Agent.objects.count(), Configuration.objects.count()) == (1, 1)


@pytest.mark.parametrize(("part", "error", "path"), [
    pytest.param("secretBindings", NotFound, "/configuration/secretBindings/TEAM_TOKEN/source/id",
                 id="missing-bound-secret"),
    pytest.param("values", InvalidRequest, "/configuration/values/agents/defaults/model/primary", id="invalid-values"),
])
def test_a_refused_configuration_points_into_the_draft(draft, ready_namespace, part, error, path):
    """The Configuration is made by its own service: its refusal is placed where the draft holds it."""
    parts = {"secretBindings": {"TEAM_TOKEN": {"source": ref(ready_namespace.id, MISSING)}},
             "values": {"agents": {"defaults": {"model": {"primary": 7}}}}}
    with pytest.raises(error) as refused:
        draft(configuration={"kind": "agent", "values": {}, part: parts[part]})
    assert path in [detail.path for detail in refused.value.details]
    assert (Agent.objects.count(), Configuration.objects.count()) == (0, 0)
