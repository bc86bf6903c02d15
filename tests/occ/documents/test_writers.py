"""The typed writers store what the dict builders of ``ed7f21c`` stored, key for key, with the
same fingerprints: an idempotent deploy or provisioning request replayed across the change
still matches the revision or the work it admitted (``fixtures/``, ``cases.py``)."""

from __future__ import annotations

import pytest

from occ.drivers.compute.fake import FakeCompute
from occ.models import (
    Agent,
    AgentRevision,
    Configuration,
    DeployIdempotencyKey,
    Principal,
    PrincipalKind,
    SecretBinding,
)
from occ.services import deploy, provisioning
from occ.services.deploy import agent_deploy
from tests.factories import NamespaceFactory, SecretFactory, grant
from tests.occ.documents import cases
from tests.occ.documents.test_stored_rows import captured


@pytest.fixture(autouse=True)
def _database_secret_driver(settings):
    settings.OCC_SECRET_DRIVER = "database"


@pytest.mark.parametrize("name", sorted(cases.DEPLOYS))
def test_a_deploy_writes_the_captured_snapshot(name):
    stored, fingerprint = captured(name)

    spec = deploy._snapshot(cases.agent(**cases.DEPLOYS[name]), cases.configuration(), cases.bindings(),
                            FakeCompute())

    assert spec.document() == stored
    assert list(spec.document()) == list(stored)
    assert spec.fingerprint() == fingerprint


@pytest.mark.parametrize("name", sorted(cases.REDEPLOY_SOURCES))
def test_a_redeploy_writes_the_captured_snapshot(name):
    stored, fingerprint = captured(name)

    spec = deploy._redeploy_snapshot(cases.agent(), cases.source_revision(cases.REDEPLOY_SOURCES[name]),
                                     FakeCompute())

    assert spec.document() == stored
    assert spec.fingerprint() == fingerprint


@pytest.mark.parametrize("name", sorted(cases.PLANS))
def test_a_provisioning_request_writes_the_captured_plan(name):
    stored, fingerprint = captured(name)

    admission = provisioning.provision_plan(cases.provision_command(**cases.PLANS[name]),
                                            namespace_id=cases.NAMESPACE)

    assert admission.plan.document() == stored
    assert admission.fingerprint == fingerprint


def test_a_redeploy_of_a_redeployed_revision_keeps_its_document():
    """A revision admitted from a typed spec redeploys to the same document (on the same drivers)."""
    first = deploy._snapshot(cases.agent(plugins=cases.SELECTIONS, approvers=cases.APPROVERS),
                             cases.configuration(), cases.bindings(), FakeCompute())
    again = deploy._redeploy_snapshot(cases.agent(), cases.source_revision(first.document()), FakeCompute())

    assert again.document() == {**first.document(), "sourceRevisionId": cases.SOURCE_REVISION}


def test_the_planned_configuration_and_agent_are_the_requested_ones():
    command = cases.provision_command(**cases.PLANS["plan-full"])
    plan = provisioning.provision_plan(command, namespace_id=cases.NAMESPACE).plan

    configuration = provisioning.planned_configuration(plan)
    agent = provisioning.planned_agent(plan, configuration_id=cases.CONFIGURATION)

    assert configuration.model_dump() == command.configuration.model_dump()
    assert agent.configuration_id == cases.CONFIGURATION
    assert (agent.name, agent.harness_auth, agent.plugin_approvers, agent.initial_workspace_files) == (
        command.name, command.harness_auth, command.plugin_approvers, command.initial_workspace_files)
    assert {key: selection.model_dump() for key, selection in agent.plugins.items()} == {
        key: selection.model_dump() for key, selection in command.plugins.items()}


def test_a_plan_stored_without_the_agent_choices_plans_the_agent_defaults():
    stored = {"name": "old", "configuration": {"kind": "agent", "values": {}, "secretBindings": {}}}
    plan = provisioning.ProvisionPlan.from_stored(stored)

    agent = provisioning.planned_agent(plan, configuration_id=cases.CONFIGURATION)

    assert (agent.execution_mode, agent.harness_auth, agent.plugins, agent.plugin_approvers) == (
        "embedded", None, {}, None)


@pytest.mark.django_db
def test_a_deploy_key_recorded_before_the_change_replays_to_its_revision(bootstrap, admin_actor, fake_compute):
    """The revision and key rows as ``ed7f21c`` wrote them; the same deploy with the same key
    returns that revision rather than refusing it as a different deployment."""
    stored, fingerprint = captured("deploy-plugins")
    namespace = NamespaceFactory(id=cases.NAMESPACE)
    secrets = {secret_id: SecretFactory(id=secret_id, namespace=namespace)
               for secret_id in (cases.HARNESS_SECRET, cases.TOOL_SECRET, cases.SLACK_SECRET)}
    configuration = Configuration.objects.create(id=cases.CONFIGURATION, namespace=namespace, values=cases.VALUES,
                                                 generation=3)
    for env, secret in cases.bindings().items():
        SecretBinding.objects.create(configuration=configuration, env_name=env, secret=secrets[secret.id])
    agent = Agent.objects.create(id=cases.AGENT, namespace=namespace, name="captured", configuration=configuration,
                                 harness_auth_method="api_key", harness_secret=secrets[cases.HARNESS_SECRET],
                                 plugins=cases.SELECTIONS, plugin_approvers=cases.APPROVERS)
    principal = Principal.objects.create(id=cases.PRINCIPAL, kind=PrincipalKind.SERVICE, name="agent captured",
                                         namespace=namespace, agent=agent)
    for secret in secrets.values():
        grant(principal, "operate:secret", namespace=namespace, resource_kind="secret", resource_id=secret.id)
    revision = AgentRevision.objects.create(namespace=namespace, agent=agent, number=1,
                                            configuration_id=configuration.id, configuration_generation=3,
                                            snapshot=stored, created_by=admin_actor.id)
    DeployIdempotencyKey.objects.create(agent=agent, key="before-the-change", revision=revision,
                                        configuration_id=configuration.id, configuration_generation=3,
                                        fingerprint=fingerprint)

    replayed = agent_deploy(actor=admin_actor, namespace_id=namespace.id, agent_id=agent.id,
                            idempotency_key="before-the-change")

    assert replayed.id == revision.id
    assert AgentRevision.objects.filter(agent=agent).count() == 1
