"""The session index pass: one task per Agent that should be serving (a stopped, undeployed or
deleting Agent is not asked), and a task for an Agent gone meanwhile returns quietly."""

from __future__ import annotations

from occ.models import AgentSession, DesiredRuntimeState
from provisioning import tasks
from provisioning.jobs.sessions import running_agent_ids
from tests.factories import AgentFactory, NamespaceFactory
from tests.fakes.fake_gateway_rpc import FakeGateway, fake_gateways, running_agent  # noqa: F401


def test_the_pass_sends_one_task_per_running_agent(db, fake_compute, fake_gateways, monkeypatch):  # noqa: F811
    namespace = NamespaceFactory()
    gateway = FakeGateway("pw-index", sessions=[{"key": "agent:main:main", "updatedAt": 1_700_000_000_000}]).start()
    fake_gateways.append(gateway)
    serving = running_agent(namespace, gateway, fake_compute)
    AgentFactory(namespace=namespace, desired_runtime_state=DesiredRuntimeState.RUNNING)  # never deployed
    stopped = running_agent(namespace, gateway, fake_compute)
    stopped.desired_runtime_state = DesiredRuntimeState.STOPPED
    stopped.save(update_fields=["desired_runtime_state"])
    assert running_agent_ids() == [serving.id]

    sent: list[str] = []
    monkeypatch.setattr(tasks.refresh_agent_sessions, "delay", sent.append)
    tasks.refresh_session_index()
    assert sent == [serving.id]
    for agent_id in sent:
        tasks.refresh_agent_sessions(agent_id)
    assert list(AgentSession.objects.values_list("agent_id", "key")) == [(serving.id, "agent:main:main")]
    tasks.refresh_agent_sessions("agt_00000000-0000-4000-8000-000000000000")  # gone: nothing happens
