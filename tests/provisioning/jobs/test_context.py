"""Job selection by work shape, and the driver context built from OCC metadata only."""

from __future__ import annotations

import json

import pytest

from occ.drivers.compute import SecretReference
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.models import ControllerWork
from occ.services.secrets import runtime_credential_ensure
from provisioning.jobs import agent_delete, agent_stop, job_for, namespace, provision, revision
from provisioning.jobs.context import revision_context
from tests.fakes.compute import delivered_secrets
from tests.provisioning.jobs.conftest import code_of, deploy

CANARY = "sk-canary-never-in-a-context-9c2e"


@pytest.mark.parametrize(("shape", "job"), [
    pytest.param({"namespace_target": "ready"}, namespace.run, id="namespace-ready"),
    pytest.param({"namespace_target": "deleted"}, namespace.run, id="namespace-deleted"),
    pytest.param({"agent_id": "agt_x", "revision_id": "rev_x"}, revision.run, id="revision"),
    pytest.param({"agent_id": "agt_x", "agent_target": "stopped"}, agent_stop.run, id="agent-stopped"),
    pytest.param({"agent_id": "agt_x", "agent_target": "deleted"}, agent_delete.run, id="agent-deleted"),
])
def test_job_for_chooses_by_shape(shape, job):
    assert job_for(ControllerWork(work_kind="lifecycle", **shape)) is job


def test_provisioning_work_runs_the_provisioning_job():
    work = ControllerWork(work_kind="provisioning", agent_id="agt_x", agent_target="provisioned")
    assert job_for(work) is provision.run


@pytest.mark.parametrize("shape", [
    pytest.param({"work_kind": "lifecycle", "agent_id": "agt_x", "agent_target": "credentials_withdrawn"},
                 id="credentials-withdrawn"),
])
def test_shapes_without_a_job_fail_permanently(shape):
    assert code_of(job_for(ControllerWork(**shape))(None)) == ("Fail", "UNSUPPORTED_WORK")


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
