"""The Agent page's Runtime panel and Logs tab on the Kubernetes ComputeDriver: the console
(Django's test client: the htmx partials and the whole page) over the real test cluster
(tests/kubecluster). The worker deploys as its identity (``deploy/kubernetes/worker-rbac.yaml``);
the console then reads as the web process's (``api-rbac.yaml``, ``occ-api-observe``), so a right
the shipped Role lacks shows here as a panel that could not ask.

What the panel shows is the Deployment's Pod as the API server reports it (the simulated kubelet
writes its status); the log lines come through the real API server's Pod log API from the
loopback kubelet stand-in (``tests/kubecluster/kubelet.py``), the one boundary the test cluster
cannot run. The leak canary: the model key, a channel token and the gateway password, printed
by the gateway, are never on the panel, the tab, a follow step or the page; ``[redacted]`` is.
"""

from __future__ import annotations

import base64
import re

import pytest

from occ.drivers.compute.base import LOG_REDACTED, NamespaceRef
from occ.drivers.kube import names
from occ.drivers.kube.manifests import PASSWORD_KEY
from occ.models import AuditEvent
from occ.models.work import revision_reconcile_key
from occ.services.agent_logs import LOGS_VIEWED
from occ.services.deploy import agent_deploy
from tests.console.conftest import agent_with_secrets, fragment_root
from tests.kubecluster.fixtures import wait_for
from tests.kubecluster.support import run_until_settled, use_kubernetes_compute

# Real commits: the worker's claim renews its lease on a connection of its own.
pytestmark = [pytest.mark.kubernetes, pytest.mark.django_db(transaction=True)]

MODEL_CANARY = "sk-canary-kube-console-model-key-71c3"
TOOL_CANARY = "xoxb-canary-kube-console-bot-token-2f9a"
FOLLOW = re.compile(r'id="agent-log-follow"[^>]*hx-get="([^"]+)"')


@pytest.fixture
def deployed(settings, console_actor, ready_namespace, kube_faults, kube_compute):
    """An Agent whose first revision the worker activated on the cluster; afterwards the
    process's driver is the web process's (its own identity, straight to the API server)."""
    tenant = NamespaceRef(id=ready_namespace.id, name=ready_namespace.name)
    wait_for(lambda: kube_compute.ensure_namespace(tenant).done, timeout=60, what="the tenant namespace ready")
    agent = agent_with_secrets(
        console_actor,
        ready_namespace.id,
        name="Watcher",
        model_key=MODEL_CANARY,
        bound={"SLACK_BOT_TOKEN": ("bot-token", TOOL_CANARY)},
    )
    revision = agent_deploy(actor=console_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    assert run_until_settled(revision_reconcile_key(revision.id)).reason_code == "REVISION_ACTIVATED"
    agent.refresh_from_db()
    assert agent.active_revision_id == revision.id
    use_kubernetes_compute(settings, kube_faults.api_kubeconfig)
    return agent, revision


def page(agent) -> str:
    return f"/console/namespaces/{agent.namespace_id}/agents/{agent.id}"


def gateway_password(kube, agent) -> str:
    secret = kube.core.read_namespaced_secret(
        names.transport_secret_name(agent.id), names.tenant_namespace(agent.namespace_id)
    )
    return base64.b64decode(secret.data[PASSWORD_KEY]).decode()


def no_secret_value(html: str, values: tuple[str, ...]) -> None:
    for value in values:
        assert value not in html
        assert value[4:20] not in html, "not even a piece of it"


def follow_url(html: str) -> str:
    found = FOLLOW.search(html)
    assert found, "the tab follows the log"
    return found.group(1).replace("&amp;", "&")


def test_the_runtime_panel_and_logs_tab_show_the_observed_pod_and_its_log(console, deployed, kube_faults):
    kube = kube_faults
    agent, revision = deployed
    kube_namespace = names.tenant_namespace(agent.namespace_id)
    (pod,) = kube.core.list_namespaced_pod(kube_namespace, label_selector=f"{names.REVISION_LABEL}={revision.id}").items
    secrets = (MODEL_CANARY, TOOL_CANARY, gateway_password(kube, agent))

    # The Runtime panel: the Pod running, the revision it serves, no restarts; no metrics API, so
    # memory and CPU are unknown, never made up.
    response = console.hx_get(f"{page(agent)}/runtime")
    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "section#agent-runtime"
    assert "could not be asked" not in html, "the web identity may read what the panel shows"
    assert 'data-runtime-state="running"><span class="pill pill-ok" data-status="running">Running' in html
    assert '<span class="since">since ' in html
    assert re.search(rf"<dt>Serving</dt>\s*<dd><a [^>]*revision={revision.id}[^>]*>v1</a>", html)
    assert re.search(r"<dt>Restarts</dt><dd>0</dd>", html)
    assert re.search(r'<dt>Memory</dt><dd><span class="muted">unknown</span></dd>', html)
    assert re.search(r'<dt>CPU</dt><dd><span class="muted">unknown</span></dd>', html)
    assert "every 5s" in html
    no_secret_value(html, secrets)

    # The Logs tab: the Pod's log through the Pod log API, every secret value redacted.
    kube.kubelet.write_log(
        kube_namespace,
        pod.metadata.name,
        "gateway",
        [
            "gateway listening on :8080",
            f"model key {MODEL_CANARY}",
            f"slack token={TOOL_CANARY} ok",
            f"auth password {secrets[2]}",
        ],
    )
    html = console.hx_get(page(agent), {"tab": "logs"}).content.decode()
    assert fragment_root(html) == "div#agent-tabs"
    assert 'id="agent-logs"' in html
    lines = re.findall(r'<li class="log-line">([^<]*)</li>', html)
    assert lines == [
        "gateway listening on :8080",
        f"model key {LOG_REDACTED}",
        f"slack token={LOG_REDACTED} ok",
        f"auth password {LOG_REDACTED}",
    ]
    no_secret_value(html, secrets)
    asked = len(kube.kubelet.logs.requests)
    assert "tailLines" in kube.kubelet.logs.requests[-1], "a new view asks the kubelet for the tail"
    [view] = AuditEvent.objects.filter(action=LOGS_VIEWED, resource_id=agent.id)
    assert view.details["activeRevisionId"] == revision.id

    # Follow: only what the Pod wrote since.
    kube.kubelet.write_log(kube_namespace, pod.metadata.name, "gateway", [f"turn 1 echo {TOOL_CANARY}"])
    step = console.hx_get(follow_url(html)).content.decode()
    assert re.findall(r'<li class="log-line">([^<]*)</li>', step) == [f"turn 1 echo {LOG_REDACTED}"]
    no_secret_value(step, secrets)
    assert len(kube.kubelet.logs.requests) == asked + 1
    assert "sinceSeconds" in kube.kubelet.logs.requests[-1], "a follow step asks for what came since"
    assert AuditEvent.objects.filter(action=LOGS_VIEWED, resource_id=agent.id).count() == 1

    # A crash: the container exits, the panel says so and counts the restart.
    kube.kubelet.exit_container({names.AGENT_LABEL: agent.id}, exit_code=1)
    crashed = wait_for(
        lambda: (
            'data-runtime-state="crashed"' in (text := console.hx_get(f"{page(agent)}/runtime").content.decode())
            and text
        ),
        timeout=60,
        what="the panel showing the crash",
    )
    restarts = re.search(r"<dt>Restarts</dt><dd>(\d+)</dd>", crashed)
    assert restarts, "the restart count shown"
    assert int(restarts.group(1)) >= 1
    assert "OCC restarts it" in crashed
    assert re.search(rf"<dt>Last served</dt>\s*<dd><a [^>]*revision={revision.id}[^>]*>v1</a>", crashed)
    no_secret_value(crashed, secrets)
    kube.kubelet.release()
    wait_for(
        lambda: 'data-runtime-state="running"' in console.hx_get(f"{page(agent)}/runtime").content.decode(),
        timeout=60,
        what="running again",
    )

    # The whole page, without htmx: the panel's placeholder (it asks for the panel once loaded),
    # and the panel's own URL, where the placeholder links without script: the page with the
    # panel in it. No value anywhere.
    whole = console.get(page(agent)).content.decode()
    assert 'id="agent-runtime"' in whole
    no_secret_value(whole, secrets)
    linked = console.get(f"{page(agent)}/runtime").content.decode()
    assert 'id="agent-header"' in linked
    assert 'data-runtime-state="running"' in linked
    no_secret_value(linked, secrets)
    logs_page = console.get(page(agent), {"tab": "logs"}).content.decode()
    assert f"model key {LOG_REDACTED}" in logs_page
    no_secret_value(logs_page, secrets)
