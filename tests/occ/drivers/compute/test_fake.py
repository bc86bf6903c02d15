"""The fake ComputeDriver: scripting, call recording, its world, and a world shared through a
file by separate processes. Also how OCC_COMPUTE_DRIVER selects a driver."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from occ.documents import RevisionSpec
from occ.drivers.compute import ComputeUnavailable, forget_compute_drivers, get_compute_driver
from occ.drivers.compute.base import (
    AgentRef,
    ComputeError,
    ComputeUnknownOutcome,
    NamespaceRef,
    RevisionContext,
    RevisionRef,
)
from occ.drivers.compute.fake import LOST, OK, RAISE, Call, FakeCompute, ScriptedCrash, error, pending, sleep

NS = NamespaceRef(id="ns_1", name="team")
AGENT = AgentRef(id="agt_1", namespace_id="ns_1", name="helper")
CONTEXT = RevisionContext(harness_auth_method="api_key", harness_secret=None)


def rev(number: int, *, files: dict[str, str] | None = None) -> RevisionRef:
    return RevisionRef(id=f"rev_{number}", namespace_id="ns_1", agent_id="agt_1", number=number, spec=RevisionSpec(),
                       initial_workspace_files=files or {})


@pytest.fixture
def fake() -> FakeCompute:
    return FakeCompute()


def test_unscripted_calls_succeed_and_are_recorded_in_order(fake):
    assert fake.ensure_namespace(NS).done
    readiness = fake.prepare_revision(rev(1, files={"SOUL.md": "calm"}), CONTEXT)
    assert (readiness.ready, readiness.revision_id, readiness.agent_id) == (True, "rev_1", "agt_1")
    fake.activate_revision(rev(1), CONTEXT)
    assert fake.calls == [Call("ensure_namespace", "ns_1"), Call("prepare_revision", "rev_1"),
                          Call("activate_revision", "rev_1")]
    assert fake.serving("agt_1") == "rev_1"
    assert fake.gateway("agt_1")["workspace_files"] == ["SOUL.md"]


def test_scripted_steps_are_taken_in_order_then_ok(fake):
    fake.script("prepare_revision", "rev_1", [pending(), pending("REVISION_UNSCHEDULABLE"), OK])
    results = [fake.prepare_revision(rev(1), CONTEXT) for _ in range(4)]
    assert [(r.ready, r.pending_reason) for r in results] == [
        (False, "REVISION_INCOMPLETE"), (False, "REVISION_UNSCHEDULABLE"), (True, None), (True, None)]


def test_a_script_for_one_target_leaves_others_alone(fake):
    fake.script("prepare_revision", "rev_1", [pending()])
    assert fake.prepare_revision(rev(2), CONTEXT).ready
    assert not fake.prepare_revision(rev(1), CONTEXT).ready


@pytest.mark.parametrize(("step", "raised", "retryable"), [
    pytest.param(error("AGENT_GATEWAY_UNAVAILABLE"), ComputeError, True, id="retryable"),
    pytest.param(error("RUNTIME_STARTUP_FAILED", retryable=False), ComputeError, False, id="permanent"),
    pytest.param(RAISE, ScriptedCrash, None, id="unexpected"),
])
def test_failures_change_nothing(fake, step, raised, retryable):
    fake.script("activate_revision", "*", [step])
    fake.prepare_revision(rev(1), CONTEXT)
    with pytest.raises(raised) as caught:
        fake.activate_revision(rev(1), CONTEXT)
    if retryable is not None:
        assert caught.value.retryable is retryable
    assert fake.serving("agt_1") is None


def test_lost_response_commits_the_effect_then_raises(fake):
    fake.prepare_revision(rev(1), CONTEXT)
    fake.script("activate_revision", "rev_1", [LOST])
    with pytest.raises(ComputeUnknownOutcome):
        fake.activate_revision(rev(1), CONTEXT)
    assert fake.serving("agt_1") == "rev_1"


def test_activation_of_an_unprepared_revision_fails(fake):
    with pytest.raises(ComputeError) as caught:
        fake.activate_revision(rev(1), CONTEXT)
    assert caught.value.code == "REVISION_NOT_PREPARED"


def test_the_gateway_lifecycle(fake):
    fake.prepare_revision(rev(1), CONTEXT)
    fake.activate_revision(rev(1), CONTEXT)
    fake.prepare_revision(rev(2), CONTEXT)
    assert fake.gateway("agt_1")["starts"] == 1, "a replacement prepare only stages"
    fake.activate_revision(rev(2), CONTEXT)
    fake.retire_revision(rev(1))
    assert (fake.serving("agt_1"), fake.gateway("agt_1")["staged"]) == ("rev_2", ["rev_2"])
    fake.retire_revision(rev(1))  # idempotent
    fake.stop_revision(rev(1))  # not serving: nothing happens
    assert fake.serving("agt_1") == "rev_2"
    fake.stop_revision(rev(2))
    assert (fake.serving("agt_1"), fake.gateway("agt_1")["running"]) == (None, False)
    assert fake.get_gateway_endpoint(rev(2)) is None


def test_runtime_credentials_and_harness_auth(fake):
    assert not fake.runtime_credentials_status(AGENT)
    fake.provision_runtime_credentials(AGENT)
    fake.provision_runtime_credentials(AGENT)
    assert fake.runtime_credentials_status(AGENT)
    fake.delete_runtime_credentials(AGENT)
    fake.delete_runtime_credentials(AGENT)
    assert not fake.runtime_credentials_status(AGENT)
    fake.validate_harness_auth(method="api_key", spec=RevisionSpec())
    with pytest.raises(ComputeError) as caught:
        fake.validate_harness_auth(method="runtime", spec=RevisionSpec())
    assert not caught.value.retryable


def test_reset_and_clear_calls(fake):
    fake.ensure_namespace(NS)
    fake.clear_calls()
    assert fake.calls == []
    assert fake.world()["namespaces"] == {"ns_1": "ready"}
    fake.script("delete_namespace", "*", [pending()])
    fake.reset()
    assert fake.world()["namespaces"] == {}
    assert fake.delete_namespace(NS).done, "scripts are gone too"


@pytest.mark.parametrize("steps", [["nonsense"], ["error:"], ["sleep:soon"]])
def test_malformed_scripts_are_refused_up_front(fake, steps):
    with pytest.raises(ValueError, match=r"step|error|could not convert"):
        fake.script("prepare_revision", "*", steps)


def test_scripting_a_method_the_contract_lacks_is_refused(fake):
    with pytest.raises(ValueError, match="not a ComputeDriver method"):
        fake.script("prepare", "*", [OK])


def test_sleep_waits_then_succeeds(fake):
    fake.script("ensure_namespace", "*", [sleep(0.05)])
    assert fake.ensure_namespace(NS).done


def test_a_state_file_shares_the_world_between_processes(tmp_path: Path):
    state = tmp_path / "fake-compute.json"
    here = FakeCompute(state_file=state)
    here.script("prepare_revision", "rev_1", [pending()])
    program = textwrap.dedent(f"""
        from occ.documents import RevisionSpec
        from occ.drivers.compute.base import RevisionContext, RevisionRef
        from occ.drivers.compute.fake import FakeCompute
        fake = FakeCompute(state_file={str(state)!r})
        ref = RevisionRef(id="rev_1", namespace_id="ns_1", agent_id="agt_1", number=1, spec=RevisionSpec())
        context = RevisionContext(harness_auth_method="api_key", harness_secret=None)
        print(fake.prepare_revision(ref, context).ready, fake.prepare_revision(ref, context).ready)
        fake.activate_revision(ref, context)
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[4], check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"], "the other process took the scripted step"
    assert here.serving("agt_1") == "rev_1"
    assert here.calls_to("prepare_revision") == ["rev_1", "rev_1"]


# --- selection ---------------------------------------------------------------------------------------


def test_the_configured_driver_is_one_object_per_process(settings):
    settings.OCC_COMPUTE_DRIVER = "fake"
    settings.OCC_FAKE_COMPUTE_STATE = "memory"
    forget_compute_drivers()
    try:
        assert get_compute_driver() is get_compute_driver()
        assert isinstance(get_compute_driver(), FakeCompute)
    finally:
        forget_compute_drivers()


@pytest.mark.parametrize("configured", [pytest.param("fake-compute.json", id="default"),
                                        pytest.param("", id="empty")])
def test_by_default_the_world_is_a_file_under_the_data_dir(settings, configured):
    settings.OCC_FAKE_COMPUTE_STATE = configured
    forget_compute_drivers()
    path = Path(settings.OCC_DATA_DIR) / "fake-compute.json"
    try:
        get_compute_driver("fake").ensure_namespace(NS)
        forget_compute_drivers()  # a new process: it reads what the first one wrote
        assert get_compute_driver("fake").world()["namespaces"] == {NS.id: "ready"}
    finally:
        forget_compute_drivers()
        path.unlink(missing_ok=True)
        path.with_name(path.name + ".lock").unlink(missing_ok=True)


def test_the_settings_default_is_durable():
    env = {k: v for k, v in os.environ.items() if k != "OCC_FAKE_COMPUTE_STATE"}
    program = "import django; django.setup(); from django.conf import settings; print(settings.OCC_FAKE_COMPUTE_STATE)"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, env=env,
                          cwd=Path(__file__).resolve().parents[4], check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "fake-compute.json"


def test_memory_keeps_the_world_in_this_process(settings):
    settings.OCC_FAKE_COMPUTE_STATE = "memory"
    forget_compute_drivers()
    try:
        get_compute_driver("fake").ensure_namespace(NS)
        forget_compute_drivers()
        assert get_compute_driver("fake").world()["namespaces"] == {}
    finally:
        forget_compute_drivers()


def test_a_relative_state_file_lives_under_the_data_dir(settings):
    settings.OCC_FAKE_COMPUTE_STATE = "fake-compute-selection-test.json"
    forget_compute_drivers()
    try:
        driver = get_compute_driver("fake")
        driver.ensure_namespace(NS)
        path = Path(settings.OCC_DATA_DIR) / "fake-compute-selection-test.json"
        assert path.exists()
    finally:
        forget_compute_drivers()
        path.unlink(missing_ok=True)
        path.with_name(path.name + ".lock").unlink(missing_ok=True)


def test_the_local_driver_is_found_by_name():
    driver_class = type(get_compute_driver("local"))
    forget_compute_drivers()
    assert (driver_class.driver_id, driver_class.__module__) == ("local", "occ.drivers.compute.local")


def test_an_unknown_driver_is_unavailable():
    with pytest.raises(ComputeUnavailable):
        get_compute_driver("nomad")
