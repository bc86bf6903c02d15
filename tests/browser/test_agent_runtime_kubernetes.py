"""The Agent page's Runtime panel and Logs tab in Chromium, against OCC as ``make run`` runs it
with the ``kubernetes`` compute driver on the real test cluster (tests/kubecluster): the worker
as its identity (``deploy/kubernetes/worker-rbac.yaml``, through the fault proxy), the web
process as its own (``api-rbac.yaml``), each bound as shipped.

The panel shows the gateway Pod as the API server reports it (the simulated kubelet writes its
status); the Logs tab's lines come through the API server's Pod log API from the loopback
kubelet stand-in (tests/kubecluster/kubelet.py), the one boundary the cluster cannot run.

The leak canary: the gateway prints the model key, the bound bot token and its own gateway
password; the browser sees ``[redacted]`` where they were, and never a value in any response.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from playwright.sync_api import expect

from occ.drivers.kube import names
from occ.drivers.kube.manifests import PASSWORD_KEY
from tests.browser.support import Console
from tests.browser.test_agent_runtime_logs import (  # noqa: F401 - agent is a fixture
    BOT_TOKEN,
    FOLLOW_MS,
    MODEL_KEY,
    RUNTIME_MS,
    SIZES,
    agent,
    logs_tab,
    no_horizontal_scroll,
    running_panel,
)
from tests.browser.test_console_flow import assert_no_canary
from tests.kubecluster.fixtures import Kube
from tests.kubecluster.support import TEST_IMAGE

pytestmark = [pytest.mark.browser, pytest.mark.kubernetes, pytest.mark.slow]


@pytest.fixture(scope="module")
def occ_extra_env(kube: Kube) -> dict[str, str]:
    kube.reset_faults()
    return {
        "OCC_COMPUTE_DRIVER": "kubernetes",
        "OCC_KUBERNETES_AUTH": "kubeconfig",
        "OCC_KUBERNETES_GATEWAY_IMAGE": TEST_IMAGE,
        "OCC_KUBERNETES_READY_TIMEOUT_SECONDS": "60",
    }


@pytest.fixture(scope="module")
def occ_process_env(kube: Kube) -> dict[str, dict[str, str]]:
    return {
        "web": {"OCC_KUBERNETES_KUBECONFIG": str(kube.api_kubeconfig)},
        "worker": {"OCC_KUBERNETES_KUBECONFIG": str(kube.worker_kubeconfig)},
    }


def gateway_pod(kube: Kube, tenant: str, agent_id: str) -> str:
    (pod,) = kube.core.list_namespaced_pod(tenant, label_selector=f"{names.AGENT_LABEL}={agent_id}").items
    return str(pod.metadata.name)


def gateway_password(kube: Kube, tenant: str, agent_id: str) -> str:
    secret = kube.core.read_namespaced_secret(names.transport_secret_name(agent_id), tenant)
    return base64.b64decode(secret.data[PASSWORD_KEY]).decode()


def test_runtime_panel_and_logs_of_the_gateway_pod_redacted(console: Console, agent: dict[str, Any], kube: Kube):  # noqa: F811
    page, occ = console.page, console.occ
    tenant = names.tenant_namespace(occ.namespace_id)
    pod = gateway_pod(kube, tenant, agent["id"])
    password = gateway_password(kube, tenant, agent["id"])
    kube.kubelet.write_log(
        tenant,
        pod,
        "gateway",
        [
            f"provider key {MODEL_KEY} loaded",
            f"slack: connecting with {BOT_TOKEN}",
            f"trusted proxy password {password}",
        ],
    )
    console.sign_in()

    for width, height in SIZES:
        runtime = running_panel(console, agent, width, height)
        expect(runtime.get_by_role("link", name="v1")).to_be_visible()
        expect(runtime).to_contain_text(re.compile(r"Restarts\s*0"))
        expect(runtime).to_contain_text(re.compile(r"Memory\s*unknown"))  # no metrics API: never made up
        no_horizontal_scroll(console, width)
        console.shot(f"kube-runtime-{width}")

        lines = logs_tab(console)
        expect(lines).to_contain_text("provider key [redacted] loaded")
        expect(lines).to_contain_text("slack: connecting with [redacted]")
        expect(lines).to_contain_text("trusted proxy password [redacted]")
        no_horizontal_scroll(console, width)
        console.shot(f"kube-logs-{width}")

    # Follow: a line the Pod writes now appears without a reload, once.
    kube.kubelet.write_log(tenant, pod, "gateway", ["follow: first new line"])
    expect(lines).to_contain_text("follow: first new line", timeout=FOLLOW_MS)
    assert lines.locator("li", has_text="provider key [redacted] loaded").count() == 1, "no line twice"

    # The container exits: the polling panel says crashed and counts the restart.
    kube.kubelet.exit_container({names.AGENT_LABEL: agent["id"]}, exit_code=1)
    try:
        runtime = page.locator("#agent-runtime")
        expect(runtime.locator("[data-runtime-state]")).to_have_attribute(
            "data-runtime-state", "crashed", timeout=RUNTIME_MS
        )
        expect(runtime).to_contain_text("OCC restarts it")
        expect(runtime).to_contain_text(re.compile(r"Restarts\s*[1-9]"))
        console.shot("kube-crashed-390")
    finally:
        kube.kubelet.release()
    expect(runtime.locator("[data-runtime-state]")).to_have_attribute(
        "data-runtime-state", "running", timeout=RUNTIME_MS
    )

    assert_no_canary(console, (MODEL_KEY, BOT_TOKEN, password))
