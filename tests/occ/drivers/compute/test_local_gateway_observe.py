"""The observation contract on a real OpenClaw gateway (``make runtime``): ``observe_runtime``
(starting, then running, with the process tree's memory and CPU from psutil, then stopped) and
``read_logs`` (the gateway's real output, followed with a cursor, redacted).

The redaction canary: a Secret bound to the gateway's environment whose value is a phrase the
real gateway prints as it starts ("agent model: fake/echo-model"). Whatever the gateway prints,
the driver must return it with that value replaced, while the raw log on disk still holds it.
"""

from __future__ import annotations

import time

import pytest

from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.configurations import ConfigurationCreate
from occ.commands.secrets import SecretCreate
from occ.drivers.compute import forget_compute_drivers
from occ.drivers.compute.base import LOG_REDACTED
from occ.drivers.compute.local import LocalComputeDriver
from occ.selectors.runtime import agent_ref as plain_agent_ref
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
from tests.occ.drivers.compute.test_local_gateway import (  # noqa: F401 - the runtime fixture
    MODEL_KEY,
    READY_WITHIN_SECONDS,
    fake_document,
    runtime,
)

pytestmark = [pytest.mark.gateway, pytest.mark.slow]

PRINTED_CANARY = "agent model: fake/echo-model"


def test_observe_and_read_logs_of_a_real_gateway(runtime, tmp_path, settings, admin_actor,  # noqa: F811
                                                  ready_namespace):
    settings.OCC_COMPUTE_DRIVER = "local"
    forget_compute_drivers()
    driver = LocalComputeDriver(data_dir=tmp_path / "data", runtime=runtime, port_range=port_range(),
                                ready_timeout=READY_WITHIN_SECONDS, stop_grace=15)
    model = FakeOpenAI().start()
    ns = ready_namespace.id
    try:
        harness = secret_create(actor=admin_actor, namespace_id=ns,
                                command=SecretCreate(name="fake-model-key", value=MODEL_KEY))
        canary = secret_create(actor=admin_actor, namespace_id=ns,
                               command=SecretCreate(name="printed-canary", value=PRINTED_CANARY))
        configuration = configuration_create(actor=admin_actor, namespace_id=ns, command=ConfigurationCreate(
            kind="agent", values=fake_document(model.base_url),
            secret_bindings={"CANARY_TOKEN": {"source": {"kind": "secret", "namespaceId": ns, "id": canary.id}}}))
        agent = agent_create(actor=admin_actor, namespace_id=ns, command=AgentCreate(
            name="observed", configuration_id=configuration.id,
            harness_auth={"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": harness.id}}))
        agent_secret_access_grant(actor=admin_actor, namespace_id=ns, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[harness.id, canary.id]))
        revision = agent_deploy(actor=admin_actor, namespace_id=ns, agent_id=agent.id)
        driver.provision_runtime_credentials(ensure_credentials(agent, driver))
        ref, ctx = revision_ref(revision, agent), revision_context(revision)
        secrets = delivered_secrets(agent)
        assert {s.secret_id for s in secrets} >= {harness.id, canary.id}
        who = plain_agent_ref(agent)
        assert driver.observe_runtime(who).state == "stopped", "nothing ran yet"

        assert driver.prepare_revision(ref, ctx).ready is False
        starting = driver.observe_runtime(who)
        assert starting.state in ("starting", "running")
        assert starting.revision_id == revision.id
        first_page = driver.read_logs(who, secrets=secrets)

        deadline = time.monotonic() + READY_WITHIN_SECONDS
        while not driver.prepare_revision(ref, ctx).ready:
            assert time.monotonic() < deadline, "the gateway never became ready"
            time.sleep(1.0)
        assert driver.activate_revision(ref, ctx).ready is True

        running = driver.observe_runtime(who)
        assert running.state == "running"
        assert running.revision_id == revision.id
        assert running.since is not None
        assert running.since <= running.observed_at
        assert running.memory_bytes is not None
        assert running.memory_bytes > 100 * 1024 * 1024, "a gateway's process tree holds well over 100 MB"
        assert running.cpu_percent is not None
        assert running.cpu_percent >= 0.0
        assert running.restarts == 0

        # The log: the gateway's real output, followed from the first page's cursor, redacted.
        deadline = time.monotonic() + 60
        followed = list(first_page.lines)
        cursor = first_page.cursor
        while not any("http server listening" in line for line in followed):
            assert time.monotonic() < deadline, followed[-5:]
            page = driver.read_logs(who, secrets=secrets, cursor=cursor)
            followed.extend(page.lines)
            cursor = page.cursor
            time.sleep(0.5)
        whole = "\n".join(followed)
        assert "[gateway] loading configuration" in whole
        assert f"[gateway] {LOG_REDACTED} (thinking=" in whole, "the printed canary is redacted"
        assert PRINTED_CANARY not in whole
        assert MODEL_KEY not in whole
        assert PRINTED_CANARY in driver.agent_paths(agent.id).gateway_log.read_text(), \
            "the raw log holds it: the redaction is the reader's"
        # Followed page by page, the lines are exactly the log's: none twice, none missing.
        tail = driver.read_logs(who, secrets=secrets)
        assert not tail.skipped
        assert tail.lines[:len(followed)] == tuple(followed)

        driver.stop_revision(ref)
        stopped = driver.observe_runtime(who)
        assert (stopped.state, stopped.memory_bytes, stopped.revision_id) == ("stopped", None, revision.id)
        assert stopped.since is not None
    finally:
        stop_every_gateway(driver)
        model.stop()
        forget_compute_drivers()
