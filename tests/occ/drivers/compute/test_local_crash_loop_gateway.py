"""Issue 28 on a real gateway: a configuration that makes the runtime exit is a crash loop by
its second exit (``RUNTIME_CRASH_LOOP``, not retried), with the last exit status recorded and
the runtime's own words in the redacted log; ``observe_runtime`` reports it.

Heavy: real gateway starts (~1.2 GB each); run under flock /tmp/occ-heavy.lock.
"""

from __future__ import annotations

import time

import pytest

from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.configurations import ConfigurationCreate
from occ.commands.secrets import SecretCreate
from occ.drivers.compute import ComputeError, forget_compute_drivers
from occ.drivers.compute.local import LocalComputeDriver
from occ.models import Secret
from occ.selectors.runtime import agent_ref
from occ.services.agent_logs import delivered_secrets
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.configurations import configuration_create
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from provisioning.jobs.context import revision_context, revision_ref
from provisioning.jobs.credentials import ensure_credentials
from tests.fakes.fake_openai import FakeOpenAI
from tests.occ.drivers.compute.local_support import port_range, stop_every_gateway
from tests.occ.drivers.compute.test_local_candidate_gateway import with_configuration
from tests.occ.drivers.compute.test_local_gateway import (
    READY_WITHIN_SECONDS,
    fake_document,
    record_of,
    runtime,  # noqa: F401 - the fixture
)

pytestmark = [pytest.mark.gateway, pytest.mark.slow]

MODEL_KEY = "sk-crash-loop-real-key-77ab"


def test_a_gateway_whose_config_makes_it_exit_is_a_crash_loop_by_its_second_exit(
        runtime, tmp_path, settings, admin_actor, ready_namespace, capsys):  # noqa: F811
    settings.OCC_COMPUTE_DRIVER = "local"
    forget_compute_drivers()
    driver = LocalComputeDriver(data_dir=tmp_path / "data", runtime=runtime, port_range=port_range(),
                                ready_timeout=READY_WITHIN_SECONDS, stop_grace=15)
    model = FakeOpenAI().start()
    ns = ready_namespace.id
    try:
        key = secret_create(actor=admin_actor, namespace_id=ns, command=SecretCreate(name="key", value=MODEL_KEY))
        configuration = configuration_create(actor=admin_actor, namespace_id=ns, command=ConfigurationCreate(
            kind="agent", values=fake_document(model.base_url)))
        agent = agent_create(actor=admin_actor, namespace_id=ns, command=AgentCreate(
            name="crash-loop", configuration_id=configuration.id,
            harness_auth={"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": key.id}}))
        agent_secret_access_grant(actor=admin_actor, namespace_id=ns, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[key.id]))
        revision = agent_deploy(actor=admin_actor, namespace_id=ns, agent_id=agent.id)
        driver.provision_runtime_credentials(ensure_credentials(agent, driver))
        ref, context = revision_ref(revision, agent), revision_context(revision)
        document = ref.spec.configuration_document()
        crashing = with_configuration(ref, {**document, "gateway": {"notARealKey": True}})

        codes, exits_at = [], []
        started = time.monotonic()
        for _attempt in range(2):
            with pytest.raises(ComputeError) as failed:
                driver.activate_revision(crashing, context)
            codes.append((failed.value.code, failed.value.retryable))
            exits_at.append(record_of(driver, agent.id).exited_at)
        reported = time.monotonic() - started

        assert codes == [("GATEWAY_EXITED", True), ("RUNTIME_CRASH_LOOP", False)]
        record = record_of(driver, agent.id)
        assert record.exits == 2
        assert isinstance(record.exit_status, int), "the status of the last exit is recorded"
        assert record.exit_status != 0
        seen = driver.observe_runtime(agent_ref(agent))
        assert (seen.state, seen.crash_loop, seen.exit_status) == ("crashed", True, record.exit_status)
        lines = driver.read_logs(agent_ref(agent), secrets=delivered_secrets(agent)).lines
        assert any("Gateway failed" in line for line in lines), lines[-10:]  # the runtime's own words
        assert not any(MODEL_KEY in line for line in lines)
        assert Secret.objects.filter(owner_agent=agent).exists()
        with capsys.disabled():
            print(f"\n[crash loop] RUNTIME_CRASH_LOOP {reported:.1f} s after the first start; exits at "
                  f"{exits_at[1] - exits_at[0]:.1f} s apart; last exit status {record.exit_status}")
    finally:
        stop_every_gateway(driver)
        model.stop()
        forget_compute_drivers()
