"""Usage end to end on the ``local`` driver: a real OpenClaw gateway, the loopback fake model
(its replies report token usage), a Configuration with model prices; two chats, then a
collection pass stores what the gateway itself reports, cost included, and a small budget
pauses the Agent."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.budgets import BudgetSet
from occ.commands.configurations import ConfigurationCreate
from occ.commands.secrets import SecretCreate
from occ.drivers.compute import forget_compute_drivers, gateway_rpc
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE, SecretReference
from occ.drivers.compute.gateway_usage import usage_params
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.secrets import get_secret_driver
from occ.models import BUDGET_EXCEEDED, Agent, Secret, UsageDay
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.budgets import budget_set
from occ.services.configurations import configuration_create
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from occ.services.usage_collection import usage_collect
from provisioning.jobs.context import revision_context, revision_ref
from provisioning.jobs.credentials import ensure_credentials
from tests.fakes.fake_openai import REPLY, FakeOpenAI
from tests.occ.drivers.compute.local_support import port_range, stop_every_gateway
from tests.occ.drivers.compute.test_local_gateway import (  # noqa: F401 - the runtime fixture
    READY_WITHIN_SECONDS,
    chat,
    fake_document,
    prepare_until_ready,
    record_of,
    reply_of,
    runtime,
)

# Committed rows: a pass asks gateways from worker threads, whose own database connections read the
# gateway password (the database SecretDriver) and would not see a test's open transaction.
pytestmark = [pytest.mark.gateway, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PRICES = {"input": 2.5, "output": 10.0, "cacheRead": 0.25, "cacheWrite": 0}  # USD per million tokens


def priced_document(base_url: str) -> dict:
    document = fake_document(base_url)
    model = document["models"]["providers"]["fake"]["models"][0]
    model["cost"] = PRICES
    return document


def test_a_real_gateway_s_usage_is_collected_priced_and_enforced(runtime, tmp_path, settings, admin_actor,  # noqa: F811
                                                                  ready_namespace):
    settings.OCC_COMPUTE_DRIVER = "local"
    # The runtime builds its usage cache from the transcripts at the first ask: on a loaded 2-core
    # machine that took longer than the 10 s default.
    settings.OCC_USAGE_GATEWAY_TIMEOUT_SECONDS = 90.0
    forget_compute_drivers()
    driver = LocalComputeDriver(data_dir=tmp_path / "data", runtime=runtime, port_range=port_range(),
                                ready_timeout=READY_WITHIN_SECONDS, stop_grace=15)
    model = FakeOpenAI().start()
    ns = ready_namespace.id
    try:
        harness = secret_create(actor=admin_actor, namespace_id=ns,
                                command=SecretCreate(name="fake-model-key", value="sk-usage-e2e-key-0c3"))
        configuration = configuration_create(actor=admin_actor, namespace_id=ns, command=ConfigurationCreate(
            kind="agent", values=priced_document(model.base_url)))
        agent = agent_create(actor=admin_actor, namespace_id=ns, command=AgentCreate(
            name="usage-e2e", configuration_id=configuration.id,
            harness_auth={"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": harness.id}}))
        agent_secret_access_grant(actor=admin_actor, namespace_id=ns, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[harness.id]))
        revision = agent_deploy(actor=admin_actor, namespace_id=ns, agent_id=agent.id)
        agent_ref = ensure_credentials(agent, driver)
        driver.provision_runtime_credentials(agent_ref)
        ref, ctx = revision_ref(revision, agent), revision_context(revision)
        driver.prepare_revision(ref, ctx)
        prepare_until_ready(driver, ref, ctx)
        assert driver.activate_revision(ref, ctx).ready is True
        Agent.objects.filter(id=agent.id).update(active_revision=revision)  # as the worker's completion does
        serving = record_of(driver, agent.id)
        password_secret = Secret.objects.get(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE)
        password = get_secret_driver(password_secret.driver_id).with_value(password_secret.backend_name, str)
        for text in ("hello", "and again"):
            assert reply_of(chat(serving.port, password, text)) == REPLY

        # The runtime answers from its usage cache and refreshes it in the background when the
        # transcripts changed: the first ask may see nothing yet; a later pass sees the turns.
        now = datetime.now(UTC)
        deadline, passes = time.monotonic() + 120, 0
        while True:
            report = usage_collect(driver=driver, now=now)
            passes += 1
            assert (report.collected, report.missed) == (1, 0)
            if UsageDay.objects.filter(agent_id=agent.id).exists() or time.monotonic() > deadline:
                break
            time.sleep(2)
        print(f"\n[usage e2e] {passes} pass(es) until the gateway's cache had the turns; the last took "
              f"{report.seconds:.1f} s")

        # What the gateway itself says for today, asked directly.
        password_ref = SecretReference(secret_id=password_secret.id, driver_id=password_secret.driver_id,
                                       backend_name=password_secret.backend_name)
        answer = driver.operator_call(ref, gateway_password=password_ref, method="sessions.usage",
                                      params=usage_params(now.date()), scopes=[gateway_rpc.READ], timeout=30)
        by_model = {(m["provider"], m["model"]): m["totals"] for m in answer["aggregates"]["byModel"]}
        totals = by_model[("fake", "echo-model")]
        row = UsageDay.objects.get(agent_id=agent.id, day=now.date(), model="echo-model")
        assert row.provider == "fake"
        assert row.input_tokens == totals["input"] >= 20, "two turns of at least 10 prompt tokens each"
        assert row.output_tokens == totals["output"] >= 10
        assert row.cost == Decimal(str(totals["totalCost"])).quantize(Decimal("1e-8"))
        expected = (Decimal(totals["input"]) * Decimal("2.5") + Decimal(totals["output"]) * 10
                    + Decimal(totals["cacheRead"]) * Decimal("0.25")) / 1_000_000
        assert row.cost > 0
        assert abs(row.cost - expected) < Decimal("1e-8"), "priced by the Configuration's model prices"

        # A budget below what was spent pauses the Agent at the next pass.
        budget_set(actor=admin_actor, namespace_id=ns, command=BudgetSet(
            agent_id=agent.id, period="day", limit=row.cost / 2))
        usage_collect(driver=driver, now=now)
        agent.refresh_from_db()
        assert (agent.desired_runtime_state, agent.stopped_reason) == ("stopped", BUDGET_EXCEEDED)
    finally:
        stop_every_gateway(driver)
        model.stop()
        forget_compute_drivers()
