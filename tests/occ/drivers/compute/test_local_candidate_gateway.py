"""Issue 28 on real gateways: the local driver verifies a candidate before cutover while v1
keeps answering chat. v1 serves; candidates with a refused key, an unknown model and a config
the runtime refuses each fail with their code and redacted evidence; a good candidate passes.
Throughout, v1's gateway (same process) answers chat and the candidate leaves nothing behind.

Heavy: v1 plus one candidate gateway at a time (~1.2 GB each); run under flock /tmp/occ-heavy.lock.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.configurations import ConfigurationCreate
from occ.commands.secrets import SecretCreate
from occ.drivers.compute import forget_compute_drivers
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE, SmokeConversation
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.secrets import get_secret_driver
from occ.models import Secret
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.configurations import configuration_create
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from provisioning.jobs.context import revision_context, revision_ref
from provisioning.jobs.credentials import ensure_credentials
from tests.fakes.fake_openai import MODEL_ID, REPLY, FakeOpenAI
from tests.occ.drivers.compute.local_support import files_containing, port_range, stop_every_gateway
from tests.occ.drivers.compute.test_local_gateway import (
    READY_WITHIN_SECONDS,
    chat,
    fake_document,
    prepare_until_ready,
    record_of,
    reply_of,
    runtime,  # noqa: F401 - the fixture
)

pytestmark = [pytest.mark.gateway, pytest.mark.slow]

MODEL_KEY = "sk-the-good-key-3f0a"
WRONG_KEY = "sk-the-rotated-typo-9e2b"


def test_candidates_are_verified_while_v1_keeps_serving(runtime, tmp_path, settings, admin_actor,  # noqa: F811
                                                         ready_namespace, capsys):
    settings.OCC_COMPUTE_DRIVER = "local"
    forget_compute_drivers()
    driver = LocalComputeDriver(data_dir=tmp_path / "data", runtime=runtime, port_range=port_range(),
                                ready_timeout=READY_WITHIN_SECONDS, stop_grace=15)
    model = FakeOpenAI(models=frozenset({MODEL_ID}), admit=lambda _client, headers: (
        headers.get("Authorization") or headers.get("authorization")) == f"Bearer {MODEL_KEY}").start()
    ns = ready_namespace.id
    try:
        good = secret_for(admin_actor, ns, "good-key", MODEL_KEY)
        wrong = secret_for(admin_actor, ns, "wrong-key", WRONG_KEY)
        configuration = configuration_create(actor=admin_actor, namespace_id=ns, command=ConfigurationCreate(
            kind="agent", values=fake_document(model.base_url)))
        agent = agent_create(actor=admin_actor, namespace_id=ns, command=AgentCreate(
            name="candidate-e2e", configuration_id=configuration.id,
            harness_auth={"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": good.id}}))
        agent_secret_access_grant(actor=admin_actor, namespace_id=ns, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=[good.id, wrong.id]))
        first = agent_deploy(actor=admin_actor, namespace_id=ns, agent_id=agent.id)
        driver.provision_runtime_credentials(ensure_credentials(agent, driver))
        first_ref, first_ctx = revision_ref(first, agent), revision_context(first)
        prepare_until_ready(driver, first_ref, first_ctx)
        assert driver.activate_revision(first_ref, first_ctx).ready is True
        serving = record_of(driver, agent.id)
        password_secret = Secret.objects.get(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE)
        password = get_secret_driver(password_secret.driver_id).with_value(password_secret.backend_name, str)
        assert reply_of(chat(serving.port, password, "hello")) == REPLY

        second = agent_deploy(actor=admin_actor, namespace_id=ns, agent_id=agent.id)
        base_ref, ctx = revision_ref(second, agent), revision_context(second)
        wrong_ctx = replace(ctx, harness_secret=replace(ctx.harness_secret, secret_id=wrong.id,
                                                        backend_name=wrong.backend_name))
        document = base_ref.spec.configuration_document()
        unknown = with_configuration(base_ref, {**document, "agents": {"defaults": {
            **document["agents"]["defaults"], "model": {"primary": "fake/not-a-served-model", "fallbacks": []}}}})
        refused_config = with_configuration(base_ref, {**document, "gateway": {"notARealKey": True}})

        timings = {}
        verdicts = {}
        for name, ref, context, smoke in [
            ("refused key", base_ref, wrong_ctx, ()),
            ("unknown model", unknown, ctx, ()),
            ("config refused", refused_config, ctx, ()),
            ("smoke mismatch", base_ref, ctx, (SmokeConversation(prompt="say hi", expect="^NEVER$"),)),
            ("good", base_ref, ctx, (SmokeConversation(prompt="say hi", expect=REPLY),)),
        ]:
            started = time.monotonic()
            verdicts[name] = driver.verify_candidate(ref, context, smoke=smoke)
            timings[name] = time.monotonic() - started
            # v1 kept serving, the same process, and still answers.
            assert record_of(driver, agent.id).process == serving.process
            assert reply_of(chat(serving.port, password, f"still there after {name}?")) == REPLY
            assert not (driver.agent_paths(agent.id).root / "candidate").exists(), "the candidate is removed"

        assert (verdicts["refused key"].code, verdicts["refused key"].check) == ("MODEL_CREDENTIAL_REFUSED", "model")
        assert (verdicts["unknown model"].code, verdicts["unknown model"].check) == ("MODEL_UNREACHABLE", "model")
        assert (verdicts["config refused"].code, verdicts["config refused"].check) == (
            "RUNTIME_CONFIG_REFUSED", "config")
        assert any("notARealKey" in line for line in verdicts["config refused"].evidence)
        assert verdicts["smoke mismatch"].code == "SMOKE_TEST_FAILED"
        assert verdicts["good"].passed, verdicts["good"]
        assert verdicts["good"].checks == ("config", "start", "model", "smoke")
        for verdict in verdicts.values():
            assert not any(secret in line for line in verdict.evidence
                           for secret in (MODEL_KEY, WRONG_KEY, password)), verdict
        assert files_containing(driver.data_dir, [MODEL_KEY, WRONG_KEY, password]) == []
        with capsys.disabled():
            print("\n[candidate verification] " + "; ".join(f"{k} {v:.1f} s" for k, v in timings.items())
                  + "\n" + "\n".join(f"  {k}: {v.code} {list(v.evidence)[:3]}" for k, v in verdicts.items()))
    finally:
        stop_every_gateway(driver)
        model.stop()
        forget_compute_drivers()


def secret_for(actor, namespace_id, name, value):
    return secret_create(actor=actor, namespace_id=namespace_id, command=SecretCreate(name=name, value=value))


def with_configuration(ref, document):
    """The same revision with another configuration (one OCC's own admission would refuse too,
    for the config case: here the runtime's own check is what is proven)."""
    return replace(ref, spec=ref.spec.model_copy(update={"configuration": document}))


