"""The local driver's observation contract against the stub gateway: ``observe_runtime`` (state,
since-when, serving revision, restarts, memory and CPU of the process tree, read with psutil) and
``read_logs`` (bounded, follow with a cursor, redacted of every value the gateway was given,
withheld where a value is no longer readable). No database; Secret values live in memory."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE, LOG_REDACTED, RUNTIME_STATES
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.secrets.base import SECRET_DRIVERS
from tests.occ.drivers.compute.local_support import (
    MODEL_KEY,
    TOOL_TOKEN,
    MemorySecretDriver,
    StubRuntime,
    context,
    new_agent,
    port_range,
    revision_ref,
    stop_every_gateway,
    stored_secret,
    value_of,
)
from tests.occ.drivers.compute.test_local import OPENAI_DOCUMENT, READY_SECONDS, kill, record_of, wait_ready

PRINTING = {**OPENAI_DOCUMENT, "stubPrintEnvironment": True}


@pytest.fixture
def driver(tmp_path):
    local = LocalComputeDriver(data_dir=tmp_path / "data", runtime=StubRuntime(tmp_path), port_range=port_range(),
                               ready_timeout=READY_SECONDS, stop_grace=5)
    try:
        yield local
    finally:
        stop_every_gateway(local)


@pytest.fixture(autouse=True)
def memory_secrets(monkeypatch):
    monkeypatch.setitem(SECRET_DRIVERS.classes, "memory",
                        f"{MemorySecretDriver.__module__}.{MemorySecretDriver.__name__}")
    MemorySecretDriver.values.clear()
    yield MemorySecretDriver.values
    MemorySecretDriver.values.clear()


@pytest.fixture
def world():
    return new_agent(), stored_secret(MODEL_KEY), stored_secret(TOOL_TOKEN)


def every_secret(agent, *references):
    return [*references, agent.runtime_credentials[GATEWAY_PASSWORD_PURPOSE]]


def logs_until(driver, agent, secrets, needle, *, seconds=30.0):
    """The log page once a line holds ``needle`` (the stub prints as it starts)."""
    deadline = time.monotonic() + seconds
    while True:
        page = driver.read_logs(agent, secrets=secrets)
        if any(needle in line for line in page.lines) or time.monotonic() > deadline:
            return page
        time.sleep(0.1)


def test_an_agent_that_never_ran_is_stopped_with_nothing_known(driver, world):
    agent, _harness, _tool = world

    seen = driver.observe_runtime(agent)

    assert (seen.state, seen.since, seen.revision_id, seen.restarts) == ("stopped", None, None, 0)
    assert (seen.memory_bytes, seen.cpu_percent) == (None, None)
    assert driver.read_logs(agent, secrets=[]).lines == ()


def test_running_gateway_reports_its_revision_since_and_process_tree_usage(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    before = datetime.now(UTC) - timedelta(seconds=1)
    wait_ready(driver, revision, context(agent, harness))

    seen = driver.observe_runtime(agent)

    assert seen.state == "running"
    assert seen.revision_id == revision.id
    assert seen.since is not None
    assert before <= seen.since <= seen.observed_at
    assert seen.restarts == 0
    # The stub is a Python HTTP server: several MB resident, and it exists.
    assert seen.memory_bytes is not None
    assert seen.memory_bytes > 1_000_000
    assert seen.cpu_percent is not None
    assert seen.cpu_percent >= 0.0
    assert seen.state in RUNTIME_STATES


def test_stopped_and_crashed_gateways_say_so_and_since_when(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    ctx = context(agent, harness)
    wait_ready(driver, revision, ctx)
    kill(record_of(driver, agent).process)

    found_dead = driver.observe_runtime(agent)
    assert (found_dead.state, found_dead.revision_id, found_dead.memory_bytes) == ("crashed", revision.id, None)
    assert found_dead.since is None, "nobody noticed the death yet: the driver does not make up a time"
    driver.maintain()
    noticed = driver.observe_runtime(agent)
    assert noticed.state == "crashed"
    assert noticed.since is not None

    driver.restart_revision(revision, ctx)
    restarted = driver.observe_runtime(agent)
    assert restarted.state in ("starting", "running")
    assert restarted.restarts == 1

    driver.stop_revision(revision)
    stopped = driver.observe_runtime(agent)
    assert (stopped.state, stopped.revision_id, stopped.restarts) == ("stopped", revision.id, 1)
    assert stopped.since is not None
    assert stopped.since >= noticed.since


def test_observing_writes_nothing_and_signals_nothing(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    driver.prepare_revision(revision, context(agent, harness))
    record_path = driver.agent_paths(agent.id).record
    before = record_path.read_bytes()

    driver.observe_runtime(agent)
    driver.read_logs(agent, secrets=[])

    assert record_path.read_bytes() == before
    assert record_of(driver, agent).alive()


def test_logs_redact_every_value_the_gateway_was_given(driver, world):
    agent, harness, tool = world
    revision = revision_ref(agent, 1, PRINTING)
    wait_ready(driver, revision, context(agent, harness, {"TOOL_TOKEN": tool}))
    password = value_of(agent.runtime_credentials[GATEWAY_PASSWORD_PURPOSE])

    page = logs_until(driver, agent, every_secret(agent, harness, tool), "config ")

    text = "\n".join(page.lines)
    assert f"env OPENAI_API_KEY={LOG_REDACTED}" in text
    assert f"env TOOL_TOKEN={LOG_REDACTED}" in text
    assert f"env OPENCLAW_GATEWAY_PASSWORD={LOG_REDACTED}" in text
    for value in (MODEL_KEY, TOOL_TOKEN, password):
        assert value not in text
    assert "stub gateway listening" in text
    # The raw file does hold them: the redaction is the reader's, not luck.
    raw = driver.agent_paths(agent.id).gateway_log.read_text()
    assert MODEL_KEY in raw
    assert TOOL_TOKEN in raw


def test_a_stretch_printed_with_a_value_now_gone_is_withheld(driver, world, memory_secrets):
    agent, harness, tool = world
    revision = revision_ref(agent, 1, PRINTING)
    wait_ready(driver, revision, context(agent, harness, {"TOOL_TOKEN": tool}))
    everything = every_secret(agent, harness, tool)
    assert logs_until(driver, agent, everything, "config ").withheld == 0

    memory_secrets.pop(tool.backend_name)  # the bound Secret was deleted: its value cannot be redacted
    page = driver.read_logs(agent, secrets=everything)

    assert page.lines == ()
    assert page.withheld > 0
    assert TOOL_TOKEN not in "\n".join(page.lines)

    # Its value replaced: the fingerprint no longer matches, so the old stretch stays withheld.
    memory_secrets[tool.backend_name] = "a-new-tool-token-value"
    assert driver.read_logs(agent, secrets=everything).lines == ()


def test_a_new_spawn_with_every_value_readable_is_returned_after_a_withheld_one(driver, world, memory_secrets):
    agent, harness, tool = world
    first = revision_ref(agent, 1, PRINTING)
    wait_ready(driver, first, context(agent, harness, {"TOOL_TOKEN": tool}))
    logs_until(driver, agent, every_secret(agent, harness, tool), "config ")
    memory_secrets.pop(tool.backend_name)
    second = revision_ref(agent, 2, PRINTING)  # deployed without the deleted Secret
    ctx = context(agent, harness)
    driver.prepare_revision(second, ctx)
    driver.activate_revision(second, ctx)

    page = logs_until(driver, agent, every_secret(agent, harness, tool), "config ")

    assert page.withheld > 0, "the first spawn's lines are withheld"
    assert any("stub gateway listening" in line for line in page.lines), "the second spawn's lines are returned"
    assert all(TOOL_TOKEN not in line and MODEL_KEY not in line for line in page.lines)


def test_follow_returns_only_what_was_written_after_the_cursor(driver, world):
    agent, harness, _tool = world
    revision = revision_ref(agent, 1, OPENAI_DOCUMENT)
    ctx = context(agent, harness)
    wait_ready(driver, revision, ctx)
    secrets = every_secret(agent, harness)
    first = logs_until(driver, agent, secrets, "listening")
    assert driver.read_logs(agent, secrets=secrets, cursor=first.cursor).lines == ()

    driver.stop_revision(revision)
    driver.activate_revision(revision, ctx)
    deadline = time.monotonic() + 30
    later = driver.read_logs(agent, secrets=secrets, cursor=first.cursor)
    while not later.lines and time.monotonic() < deadline:
        time.sleep(0.1)
        later = driver.read_logs(agent, secrets=secrets, cursor=first.cursor)

    assert later.lines
    assert all("listening" in line for line in later.lines)
    assert (later.reset, later.skipped) == (False, False)
    assert later.cursor != first.cursor
