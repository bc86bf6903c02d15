"""Job selection by the work row's job column, and the driver context built from OCC metadata only."""

from __future__ import annotations

import json

import pytest

from occ.drivers.compute import SecretReference
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.models import ControllerWork, WorkJob
from occ.services.secrets import runtime_credential_ensure
from provisioning.jobs import JOBS, agent_delete, agent_stop, job_for, namespace, provision, revision
from provisioning.jobs.context import revision_context
from tests.fakes.compute import delivered_secrets
from tests.provisioning.jobs.conftest import code_of, deploy

CANARY = "sk-canary-never-in-a-context-9c2e"


@pytest.mark.parametrize(("name", "job"), [
    pytest.param("namespace", namespace.run, id="namespace"),
    pytest.param("revision", revision.run, id="revision"),
    pytest.param("agent_stop", agent_stop.run, id="agent-stop"),
    pytest.param("agent_delete", agent_delete.run, id="agent-delete"),
    pytest.param("provision", provision.run, id="provision"),
])
def test_the_row_names_its_job(name, job):
    assert job_for(ControllerWork(job=name)) is job


def test_every_job_the_model_names_has_a_function():
    assert set(JOBS) == set(WorkJob.values)


def test_a_job_this_version_does_not_know_fails_permanently():
    assert code_of(job_for(ControllerWork(job="from_a_newer_version"))(None)) == ("Fail", "UNSUPPORTED_WORK")


def test_the_job_is_the_column_not_the_shape():
    """A row shaped like a Namespace's work still runs the job it names."""
    work = ControllerWork(job="agent_stop", namespace_target="ready")
    assert job_for(work) is agent_stop.run


def test_revision_context_holds_references_only(admin_actor, agent, fake_compute):
    password = runtime_credential_ensure(agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE, value_factory=lambda: CANARY)
    revision = deploy(admin_actor, agent)

    context = revision_context(revision)

    harness, bound = agent.harness_secret, [s for s in delivered_secrets(agent) if s.id != agent.harness_secret_id]
    assert context.harness_auth_method == "api_key"
    assert context.harness_secret == SecretReference(harness.id, harness.driver_id, harness.backend_name)
    assert context.secret_environment == {
        "TOOL_TOKEN_0": SecretReference(bound[0].id, bound[0].driver_id, bound[0].backend_name)}
    assert context.gateway_password == SecretReference(password.id, password.driver_id, password.backend_name)
    assert CANARY not in json.dumps(repr(context))
    assert CANARY not in json.dumps(revision.snapshot)


def test_revision_context_without_a_gateway_password(admin_actor, agent, fake_compute):
    assert revision_context(deploy(admin_actor, agent)).gateway_password is None


def test_revision_context_reads_the_bound_secrets_and_the_password_in_one_query(
        admin_actor, agent, fake_compute, django_assert_num_queries):
    password = runtime_credential_ensure(agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE, value_factory=lambda: CANARY)
    revision = deploy(admin_actor, agent)

    with django_assert_num_queries(1):
        context = revision_context(revision)

    assert context.gateway_password is not None
    assert context.gateway_password.secret_id == password.id
    assert context.harness_secret is not None
    assert context.harness_secret.secret_id == agent.harness_secret_id
