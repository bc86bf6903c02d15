"""Sessions on real OpenClaw gateways (the ``local`` driver, the loopback fake model): two Agents
chat, the worker's refresh indexes their sessions from each gateway's ``sessions.list``, a person
with ``read_conversations:agent`` sees both Agents' sessions and reads a transcript, a person who
may only chat sees none; the approvals inbox asks both gateways and finds nothing pending.

Two gateways (~1.2 GB and ~20 s of two cores each): run alone. Every process a test starts is
stopped by PID in ``finally``."""

from __future__ import annotations

import pytest

from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.configurations import ConfigurationCreate
from occ.commands.secrets import SecretCreate
from occ.drivers.compute import COMPUTE_DRIVERS, forget_compute_drivers
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.secrets import get_secret_driver
from occ.iam.actor import Actor, Source
from occ.models import Agent, AgentSession, DesiredRuntimeState, Secret
from occ.selectors.agent_sessions import SessionQuery, session_page
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agent_sessions import agent_sessions_refresh, agent_transcript_read
from occ.services.agents import agent_create
from occ.services.approvals import approvals_pending
from occ.services.configurations import configuration_create
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from provisioning.jobs.context import revision_context, revision_ref
from provisioning.jobs.credentials import ensure_credentials
from tests.factories import grant, human
from tests.fakes.fake_openai import REPLY, FakeOpenAI
from tests.occ.drivers.compute.local_support import port_range, stop_every_gateway
from tests.occ.drivers.compute.test_local_gateway import (
    MODEL_KEY,
    READY_WITHIN_SECONDS,
    chat,
    fake_document,
    prepare_until_ready,
    record_of,
    reply_of,
    runtime,  # noqa: F401 (fixture)
)

pytestmark = [pytest.mark.gateway, pytest.mark.slow]


def _running_agent(driver: LocalComputeDriver, admin, ns: str, name: str, model: FakeOpenAI) -> Agent:
    harness = secret_create(actor=admin, namespace_id=ns, command=SecretCreate(name=f"{name}-key", value=MODEL_KEY))
    configuration = configuration_create(actor=admin, namespace_id=ns, command=ConfigurationCreate(
        kind="agent", values=fake_document(model.base_url)))
    agent = agent_create(actor=admin, namespace_id=ns, command=AgentCreate(
        name=name, configuration_id=configuration.id,
        harness_auth={"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": harness.id}}))
    agent_secret_access_grant(actor=admin, namespace_id=ns, agent_id=agent.id,
                              command=AgentSecretAccess(secret_ids=[harness.id]))
    revision = agent_deploy(actor=admin, namespace_id=ns, agent_id=agent.id)
    driver.provision_runtime_credentials(ensure_credentials(agent, driver))
    ref, ctx = revision_ref(revision, agent), revision_context(revision)
    prepare_until_ready(driver, ref, ctx)
    assert driver.activate_revision(ref, ctx).ready is True
    # What the worker records once the revision serves.
    Agent.objects.filter(id=agent.id).update(active_revision=revision,
                                             desired_runtime_state=DesiredRuntimeState.RUNNING)
    return Agent.objects.get(id=agent.id)


def test_two_agents_chat_and_their_sessions_appear_for_who_may_read_them(runtime, tmp_path, settings,  # noqa: F811
                                                                         admin_actor, ready_namespace):
    settings.OCC_COMPUTE_DRIVER = "local"
    settings.OCC_GATEWAY_RPC_TIMEOUT_SECONDS = 30.0  # a first RPC on a busy two-core machine
    forget_compute_drivers()
    driver = LocalComputeDriver(data_dir=tmp_path / "data", runtime=runtime, port_range=port_range(),
                                ready_timeout=READY_WITHIN_SECONDS, stop_grace=15)
    COMPUTE_DRIVERS._objects[("local", ())] = driver  # the services' get_compute_driver() is this one
    model = FakeOpenAI().start()
    ns = ready_namespace.id
    try:
        agents = [_running_agent(driver, admin_actor, ns, name, model) for name in ("e2e-alpha", "e2e-beta")]
        for agent, text in zip(agents, ("hello from alpha", "hello from beta"), strict=True):
            secret = Secret.objects.get(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE)
            value = get_secret_driver(secret.driver_id).with_value(secret.backend_name, str)
            assert reply_of(chat(record_of(driver, agent.id).port, value, text)) == REPLY

        for agent in agents:
            assert agent_sessions_refresh(agent_id=agent.id), "the gateway lists the conversation as a session"
        reader, chatter = human("e2e-reader"), human("e2e-chatter")
        grant(reader, "read_conversations:agent", namespace=ready_namespace)
        grant(chatter, "read:agent", "invoke:agent", namespace=ready_namespace)
        reader_actor = Actor(principal=reader, source=Source.API)

        rows, _ = session_page(actor=reader_actor, query=SessionQuery())
        assert {row.agent_id for row in rows} == {agent.id for agent in agents}
        assert session_page(actor=Actor(principal=chatter, source=Source.API), query=SessionQuery())[0] == []
        session = AgentSession.objects.filter(agent=agents[0]).order_by("-last_activity_at").first()
        assert session is not None
        transcript = agent_transcript_read(actor=reader_actor, namespace_id=ns, agent_id=agents[0].id,
                                           session_id=session.id)
        texts = [(entry.role, entry.text) for entry in transcript.entries]
        assert ("user", "hello from alpha") in texts, texts
        assert ("assistant", REPLY) in texts, texts
        assert session.message_count is not None
        assert session.message_count >= 2

        inbox = approvals_pending(actor=Actor(principal=admin_actor.principal, source=Source.API))
        assert inbox.approvals == []
        assert inbox.unreachable == [], "both gateways answered the approvals scope"
    finally:
        stop_every_gateway(driver)
        model.stop()
        forget_compute_drivers()
