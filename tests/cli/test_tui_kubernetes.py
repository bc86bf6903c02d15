"""``occ tui`` on the ``kubernetes`` compute driver, at the Kubernetes API's boundary.

Pod discovery picks the one Pod serving the intended revision (labels, then the mounted
ConfigMap, Running, Ready, not terminating); the attach runs the TUI with a TTY through the
exec API of the official client (``kubernetes.stream``) and leaves on Ctrl+D.

The exec endpoint is a loopback stand-in (``tests/fakes/kube_exec.py``): kube-apiserver
cannot exec without a kubelet, and the test cluster has none. The stand-in speaks the
``v4.channel.k8s.io`` protocol of kube-apiserver 1.20 and runs a small terminal program on a
real pseudo-terminal where the Pod would run ``node /app/openclaw.mjs tui``; the CLI side runs
in its own process on a pseudo-terminal too, so raw mode, Ctrl+D and the resize are real.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s
from occ_cli import kube

from tests.fakes.kube_exec import FakeExec

NAMESPACE_ID = "ns_0b7c2a4e-9d1f-4c3a-8e5b-6f7a8b9c0d1e"
AGENT_ID = "agt_5d4c3b2a-1f0e-4d9c-8b7a-6e5f4d3c2b1a"
REVISION_ID = "rev_9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
OLD_REVISION_ID = "rev_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
TOKEN = "test-exec-token"
FAKE_TUI = r"""
import sys
sys.stdout.write("tui> "); sys.stdout.flush()
for line in sys.stdin:
    line = line.strip()
    if line == "fail":
        sys.exit(7)
    sys.stdout.write(f"you said: {line}\r\ntui> "); sys.stdout.flush()
sys.stdout.write("bye\r\n")
"""
ATTACH = r"""
import sys
from kubernetes import client
from occ_cli import kube
configuration = client.Configuration(host=sys.argv[1])
configuration.api_key = {"authorization": sys.argv[2]}
configuration.api_key_prefix = {"authorization": "Bearer"}
api = client.CoreV1Api(client.ApiClient(configuration))
sys.exit(kube.exec_tui(api, sys.argv[3], sys.argv[4], ["tui", "--session", "ops"]))
"""
READ_SECONDS = 60


def test_names_are_the_kubernetes_drivers():
    # reference A3: oce-<sha256(namespaceId)[:15]>, gateway-<sha256(agentId)[:12]>-rev-<sha256(revisionId)[:12]>
    assert kube.tenant_namespace(NAMESPACE_ID) == "oce-" + hashlib.sha256(NAMESPACE_ID.encode()).hexdigest()[:15]
    assert kube.revision_config_map(AGENT_ID, REVISION_ID) == (
        f"gateway-{hashlib.sha256(AGENT_ID.encode()).hexdigest()[:12]}"
        f"-rev-{hashlib.sha256(REVISION_ID.encode()).hexdigest()[:12]}")
    assert kube.gateway_selector(NAMESPACE_ID, AGENT_ID) == (
        "app.kubernetes.io/managed-by=openclaw-enterprise,openclaw.dev/workload-role=gateway,"
        f"openclaw.dev/namespace={NAMESPACE_ID},openclaw.dev/agent={AGENT_ID}")


def pod(name: str, revision_id: str, *, phase: str = "Running", ready: bool = True, terminating: bool = False,
        container: str = "gateway") -> k8s.V1Pod:
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, deletion_timestamp="2026-12-01T00:00:00Z" if terminating else None),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name=container)], volumes=[
            k8s.V1Volume(name="config", config_map=k8s.V1ConfigMapVolumeSource(
                name=kube.revision_config_map(AGENT_ID, revision_id))),
            k8s.V1Volume(name="runtime-state", empty_dir=k8s.V1EmptyDirVolumeSource())]),
        status=k8s.V1PodStatus(phase=phase, conditions=[k8s.V1PodCondition(type="Ready",
                                                                            status="True" if ready else "False")]))


@pytest.mark.parametrize(("pods", "serving"), [
    pytest.param([pod("new", REVISION_ID)], ["new"], id="the-one-ready-pod"),
    pytest.param([pod("old", OLD_REVISION_ID)], [], id="labels-alone-name-the-predecessor"),
    pytest.param([pod("old", OLD_REVISION_ID, terminating=True), pod("new", REVISION_ID, phase="Pending",
                                                                     ready=False)], [], id="mid-recreate"),
    pytest.param([pod("new", REVISION_ID, ready=False)], [], id="running-not-ready"),
    pytest.param([pod("new", REVISION_ID, terminating=True)], [], id="terminating"),
    pytest.param([pod("new", REVISION_ID, container="agent")], [], id="no-gateway-container"),
    pytest.param([pod("old", OLD_REVISION_ID), pod("new", REVISION_ID)], ["new"], id="after-cutover"),
])
def test_the_serving_pod_runs_ready_and_mounts_the_revisions_config_map(pods, serving):
    found = kube.serving_pods(pods, agent_id=AGENT_ID, revision_id=REVISION_ID)
    assert [p.metadata.name for p in found] == serving


class ListingApi:
    """CoreV1Api at its boundary: one answer of list_namespaced_pod per call."""

    def __init__(self, answers: list[list[k8s.V1Pod]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str]] = []

    def list_namespaced_pod(self, namespace: str, *, label_selector: str, _request_timeout: float) -> k8s.V1PodList:
        self.calls.append((namespace, label_selector))
        return k8s.V1PodList(items=self.answers.pop(0))


def test_discovery_waits_while_the_recreate_rollout_settles_then_gives_up_plainly():
    api = ListingApi([[pod("old", OLD_REVISION_ID, terminating=True)], [pod("new", REVISION_ID, ready=False)],
                      [pod("new", REVISION_ID)]])
    name = kube.await_gateway_pod(api, "oce-tenant", namespace_id=NAMESPACE_ID, agent_id=AGENT_ID,  # type: ignore[arg-type]
                                  revision_id=REVISION_ID, sleep=lambda _s: None)
    assert name == "new"
    assert api.calls == [("oce-tenant", kube.gateway_selector(NAMESPACE_ID, AGENT_ID))] * 3

    never = ListingApi([[pod("old", OLD_REVISION_ID)]] * 3)
    with pytest.raises(kube.CliError) as refused:
        kube.await_gateway_pod(never, "oce-tenant", namespace_id=NAMESPACE_ID, agent_id=AGENT_ID,  # type: ignore[arg-type]
                               revision_id=REVISION_ID, timeout=0, sleep=lambda _s: None)
    assert refused.value.exit_code == kube.Exit.UNAVAILABLE
    assert kube.revision_config_map(AGENT_ID, REVISION_ID) in refused.value.message


@pytest.fixture
def fake_exec() -> Iterator[FakeExec]:
    server = FakeExec(run=lambda _command: [sys.executable, "-c", FAKE_TUI]).start()
    yield server
    server.stop()


@contextlib.contextmanager
def attached(fake_exec: FakeExec, tenant: str, pod_name: str) -> Iterator[tuple[subprocess.Popen, int]]:
    """The CLI's exec_tui in its own process, its terminal a pseudo-terminal of 100x30."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    process = subprocess.Popen([sys.executable, "-c", ATTACH, fake_exec.url, TOKEN, tenant, pod_name],
                               stdin=slave, stdout=slave, stderr=slave, start_new_session=True, close_fds=True)
    os.close(slave)
    try:
        yield process, master
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        os.close(master)


def read_until(master: int, wanted: bytes, seen: bytearray) -> bytes:
    deadline = time.monotonic() + READ_SECONDS
    while wanted not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"{wanted!r} never appeared in {bytes(seen)!r}"
        if select.select([master], [], [], min(remaining, 1.0))[0]:
            try:
                seen.extend(os.read(master, 4096))
            except OSError:
                break
    assert wanted in seen, bytes(seen)
    return bytes(seen)


def test_the_tui_attaches_over_exec_with_a_tty_and_ctrl_d_leaves_it(fake_exec):
    tenant, pod_name = kube.tenant_namespace(NAMESPACE_ID), "gateway-5d4c3b2a1f0e-7d9f8c6b5-x2x4q"
    with attached(fake_exec, tenant, pod_name) as (process, master):
        seen = bytearray()
        read_until(master, b"tui> ", seen)
        os.write(master, b"hello gateway\r")  # raw mode: the CR goes to the remote terminal as typed
        read_until(master, b"you said: hello gateway", seen)
        os.write(master, b"\x04")  # Ctrl+D: end of input for the TUI, which exits
        read_until(master, b"bye", seen)
        assert process.wait(timeout=READ_SECONDS) == 0

    (request,) = fake_exec.requests
    assert request.path == f"/api/v1/namespaces/{tenant}/pods/{pod_name}/exec"
    assert request.query["command"] == [*kube.TUI_ENTRY, "tui", "--session", "ops"]
    assert request.query["command"][:4] == ["env", "-u", "OPENAI_API_KEY", "OPENCLAW_STATE_DIR=/tmp/occ-tui-client"]
    assert {k: request.query[k] for k in ("container", "stdin", "stdout", "tty")} == {
        "container": ["gateway"], "stdin": ["true"], "stdout": ["true"], "tty": ["true"]}
    assert request.authorization == f"Bearer {TOKEN}"
    assert request.resizes[0] == {"Width": 100, "Height": 30}
    assert bytes(request.stdin).endswith(b"\x04")
    assert request.exit_code == 0


def test_the_tuis_exit_status_is_the_commands(fake_exec):
    with attached(fake_exec, "oce-tenant", "gateway-pod") as (process, master):
        seen = bytearray()
        read_until(master, b"tui> ", seen)
        os.write(master, b"fail\r")
        assert process.wait(timeout=READ_SECONDS) == 7
    assert fake_exec.requests[0].exit_code == 7
