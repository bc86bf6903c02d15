"""The provisioning worker checks repository bindings again when it creates the Agent and
deploys it (GitHub App driver against a loopback fake)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from occ.models import Agent, AgentProvisioningWork, AgentRevision
from tests.factories import SecretFactory
from tests.fakes.compute import run_work
from tests.fakes.fake_github import FakeGitHub, serving
from tests.provisioning.jobs.conftest import code_of
from tests.provisioning.provisioning_support import admit, plan_for

READ = {"repositoryRef": "acme/widgets", "profile": "git-read"}


@pytest.fixture
def github(settings) -> Iterator[FakeGitHub]:
    yield from serving(settings)


def admitted(namespace, who) -> AgentProvisioningWork:
    harness = SecretFactory(namespace=namespace, name="model-key")
    return admit(namespace, who, {**plan_for(namespace, name="coder", harness=harness), "repositoryBindings": [READ]})


def test_the_worker_creates_the_agent_with_its_bindings_and_freezes_them(ready_namespace, admin_actor, fake_compute,
                                                                         github):
    row = admitted(ready_namespace, admin_actor)
    outcome = run_work(row.work_id)
    assert code_of(outcome) == ("Complete", "PROVISIONING_SUCCEEDED")
    row.refresh_from_db()
    agent = Agent.objects.get(id=row.agent_id)
    assert agent.repository_bindings == [READ]
    spec = AgentRevision.objects.get(id=row.revision_id).spec
    assert spec.repository_credentials is not None
    assert spec.repository_credentials.refs() == ["acme/widgets"]


def test_a_repository_that_left_the_installation_fails_the_job_before_the_agent(ready_namespace, admin_actor,
                                                                                fake_compute, github):
    row = admitted(ready_namespace, admin_actor)
    github.repositories = [repo for repo in github.repositories if repo["full_name"] != "Acme/Widgets"]
    run_work(row.work_id)
    row.refresh_from_db()
    assert row.status == "failed"
    assert "repositoryBindings[0]" in row.progress["error"]["message"]
    assert not Agent.objects.filter(id=row.agent_id).exists()
