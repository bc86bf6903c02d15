"""The gateway Pod's readiness probe, run as the kubelet would run it, against a real gateway
started with the config the Kubernetes driver renders (``make runtime``).

In a cluster the kubelet probes from the node's side of the Pod network, an address inside the
usual private ranges, and so inside ``gateway.trustedProxies`` (``10.0.0.0/8`` by default). The
gateway attributes a request from a trusted proxy to the client its forwarded headers name, and
refuses a bare one with 403 ``proxy_attribution_required``: an ``httpGet`` probe from there never
succeeds and the Pod never becomes Ready. Here the kubelet's position is played by this
machine's own non-loopback address, made a trusted proxy in the rendered config; a probe over
it reaches the gateway through the local stack only (no packet leaves the machine).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import httpx
import pytest
from kubernetes import client

from occ.documents import RevisionSpec
from occ.drivers.compute.base import RevisionRef
from occ.drivers.kube.api import Connection, Settings
from occ.drivers.kube.compute import KubernetesComputeDriver
from occ.drivers.kube.manifests import PASSWORD_ENV, RevisionManifest
from occ.ids import IdPrefix, new_id
from occ.runtime import Runtime
from tests.conftest import service_missing
from tests.ports import free_port

pytestmark = [pytest.mark.gateway, pytest.mark.slow]

READY_WITHIN_SECONDS = 240.0
DOCUMENT = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}


def local_address() -> str | None:
    """One of this machine's own non-loopback IPv4 addresses (the kubelet's stand-in): the
    source address a connection to it gets, without a route off the machine."""
    out = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True, check=False).stdout
    for link in json.loads(out or "[]"):
        for info in link.get("addr_info", []):
            if info.get("scope") == "global":
                return str(info["local"])
    return None



def loopback_ready(port: int) -> bool:
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
    except httpx.HTTPError:
        return False
    return answer.status_code == 200 and answer.json().get("ready") is True


def run_probe(probe: client.V1Probe, *, pod_address: str, node: Path) -> tuple[bool, str]:
    """One run of ``probe`` the way the kubelet runs it: an ``httpGet`` from the node's address to
    the Pod's (success is a status in 200-399), or the ``exec`` command inside the container
    (here: this machine, the runtime's ``node`` first on PATH; success is exit 0)."""
    if probe.http_get is not None:
        try:
            answer = httpx.get(f"http://{pod_address}:{probe.http_get.port}{probe.http_get.path}", timeout=5)
        except httpx.HTTPError as exc:
            return False, repr(exc)
        return 200 <= answer.status_code < 400, f"{answer.status_code} {answer.text[:200]}"
    command = probe.var_exec.command
    env = {"PATH": f"{node.parent}:/usr/bin:/bin"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=probe.timeout_seconds or 1,
                          check=False)
    return done.returncode == 0, f"exit {done.returncode} {done.stderr[-200:]}"


def test_the_readiness_probe_succeeds_when_the_kubelets_address_is_a_trusted_proxy(tmp_path):
    runtime = Runtime.default()
    if not runtime.is_installed():
        service_missing("OpenClaw runtime not installed: run make runtime")
    address = local_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to stand for the kubelet's")
    port = free_port()
    driver = KubernetesComputeDriver(connection=cast(Connection, SimpleNamespace(settings=Settings())),
                                     image="occ/gateway:test", gateway_port=port,
                                     trusted_proxy_cidrs=["10.0.0.0/8", f"{address}/32"], storage_class="")
    revision = RevisionRef(id=new_id(IdPrefix.REVISION), namespace_id=new_id(IdPrefix.NAMESPACE),
                           agent_id=new_id(IdPrefix.AGENT), number=1,
                           spec=RevisionSpec.from_stored({"configuration": DOCUMENT}))
    plan = RevisionManifest(driver, revision, None)
    (container,) = plan.pod_template().spec.containers
    config = json.loads(plan.rendered())
    assert config["gateway"]["trustedProxies"] == ["10.0.0.0/8", f"{address}/32"]
    # The Pod's paths moved into this test's folder (the rest of the config is the driver's).
    config["agents"]["defaults"]["workspace"] = str(tmp_path / "state" / "workspace")
    (tmp_path / "openclaw.json").write_text(json.dumps(config))
    pod_env = {variable.name: variable.value for variable in container.env if variable.value is not None}
    env = {**pod_env, "LANG": "C.UTF-8", "PATH": runtime.bin_path(), "HOME": str(tmp_path),
           "OPENCLAW_STATE_DIR": str(tmp_path / "state"), "OPENCLAW_CONFIG_PATH": str(tmp_path / "openclaw.json"),
           PASSWORD_ENV: "a-gateway-password-for-this-test-only"}
    node, entry = runtime.require()
    log = (tmp_path / "gateway.log").open("wb")
    gateway = subprocess.Popen([str(node), str(entry), "gateway", "--port", str(port)], env=env, cwd=tmp_path,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # Ready as the gateway itself sees it (its local-direct client, over loopback) ...
        deadline = time.monotonic() + READY_WITHIN_SECONDS
        while not loopback_ready(port):
            if gateway.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the gateway did not become ready; its log:\n"
                            + (tmp_path / "gateway.log").read_text()[-2000:])
            time.sleep(1)
        # ... so the Pod's probe must say so, from where the kubelet stands.
        ok, seen = run_probe(container.readiness_probe, pod_address=address, node=node)
        assert ok, f"the Pod's readiness probe fails on a ready gateway: {seen}"
        # The condition is real: a bare request from the kubelet's address is refused.
        bare = httpx.get(f"http://{address}:{port}/readyz", timeout=5)
        assert bare.status_code == 403
        assert bare.json()["error"]["type"] == "proxy_attribution_required"
    finally:
        if gateway.poll() is None:
            os.killpg(gateway.pid, signal.SIGTERM)
            try:
                gateway.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(gateway.pid, signal.SIGKILL)
                gateway.wait(timeout=10)
        log.close()
