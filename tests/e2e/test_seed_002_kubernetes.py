"""Seed 002 end to end on Kubernetes, driven by the ``occ`` command line.

OCC runs as production runs it, against the real test cluster (tests/kubecluster: kube-apiserver
and kube-controller-manager 1.20.2, the simulated kubelet making Pods run): gunicorn, a Celery
worker and beat on PostgreSQL (or SQLite) and the filesystem broker, with
``OCC_COMPUTE_DRIVER=kubernetes`` and ``OCC_SECRET_DRIVER=kubernetes``. Each process holds the
Kubernetes identity production gives it and nothing more: the web process
``system:serviceaccount:occ:occ-api`` bound by ``deploy/kubernetes/api-rbac.yaml`` (it writes
the OCC Secrets' values), the worker ``system:serviceaccount:occ:occ-worker`` bound by
``deploy/kubernetes/worker-rbac.yaml``, beat none. A verb those files lack fails this test.

The operator's steps are the seed's, each one an ``occ`` process reading the bootstrap key file:
installation → namespaces create (ready once the worker observed the tenant boundary) → secrets
create (value on stdin) → configurations create -f → agents create → deploy → status → a second
deploy → a third whose Pod never becomes Ready (it fails; the second keeps serving) → stop →
delete. After each step the cluster is read with the official client as administrator: the
Secret in the tenant namespace, the Service selector switched on activation, the predecessor's
ConfigMap retired, the Deployment scaled to zero on stop, nothing of the Agent left after delete,
and the model key in no ConfigMap, label, annotation, argv, output or log.

(The TUI attach of seed 002 needs the exec API, which needs a kubelet: tests/cli/test_tui_kubernetes.py
runs it at that boundary.)
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from occ_cli.client import Exit

from occ.drivers.kube import names
from tests.e2e.stack import REMOVED_ENV, OccStack, stack_database
from tests.kubecluster.fixtures import Kube, wait_for

pytestmark = [pytest.mark.kubernetes, pytest.mark.slow]

OCC = Path(sys.executable).with_name("occ")
CANARY = "sk-seed-002-canary-4b7e19d2c3a8"
NAMESPACE = "seed-team"
AGENT = "seed-agent"
VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}
CLI_TIMEOUT_SECONDS = 600
# How long activation waits for the revision's Pod (the simulated kubelet makes it Ready in about
# a second; the failing third revision costs this much).
READY_TIMEOUT_SECONDS = 30


@dataclass
class Result:
    argv: list[str]
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        assert self.code == 0, f"{self.argv[1:]} exited {self.code}:\n{self.stderr[-3000:]}"
        return json.loads(self.stdout)


@dataclass
class Seed:
    stack: OccStack
    kube: Kube
    env: dict[str, str]
    runs: list[Result]

    def __call__(self, *args: str, stdin: str | None = None) -> Result:
        argv = [str(OCC), *args]
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=self.env,
                              timeout=CLI_TIMEOUT_SECONDS, check=False)
        result = Result(argv, done.returncode, done.stdout, done.stderr)
        self.runs.append(result)
        return result


@pytest.fixture
def seed(kube_faults, tmp_path, django_db_blocker) -> Iterator[Seed]:
    kube = kube_faults
    with contextlib.ExitStack() as cleanup, django_db_blocker.unblock():
        database = cleanup.enter_context(stack_database(tmp_path / "stack" / "data", suffix="seed002"))
        stack = OccStack(
            tmp_path / "stack", database=database, secret_key=Fernet.generate_key().decode(),
            gateway_ports="29200-29299",  # unused: no local gateway
            extra_env={"OCC_COMPUTE_DRIVER": "kubernetes", "OCC_SECRET_DRIVER": "kubernetes",
                       "OCC_KUBERNETES_AUTH": "kubeconfig",
                       "OCC_KUBERNETES_GATEWAY_IMAGE": "registry.invalid/openclaw:seed-002",
                       "OCC_KUBERNETES_READY_TIMEOUT_SECONDS": str(READY_TIMEOUT_SECONDS)},
            process_env={"web": {"OCC_KUBERNETES_KUBECONFIG": str(kube.api_kubeconfig)},
                         "worker": {"OCC_KUBERNETES_KUBECONFIG": str(kube.worker_kubeconfig)}})
        cleanup.callback(stack.stop)
        stack.start()
        env = {k: v for k, v in os.environ.items() if k not in REMOVED_ENV and k != "OCC_API_KEY"}
        env.update(OCC_URL=stack.base_url, OCC_DATA_DIR=str(stack.data_dir), COLUMNS="200", NO_COLOR="1")
        yield Seed(stack, kube, env, [])


# --- reading the cluster as administrator ---------------------------------------------------------


def agent_selector(agent_id: str) -> str:
    return f"{names.AGENT_LABEL}={agent_id}"


def serving(kube: Kube, tenant: str, agent_id: str) -> tuple[str, int]:
    """(the revision id the gateway Deployment's template serves, its replicas)."""
    deployment = kube.apps.read_namespaced_deployment(names.gateway_name(agent_id), tenant)
    return deployment.metadata.annotations[names.DEPLOYMENT_REVISION_ID], deployment.spec.replicas


def service_selector(kube: Kube, tenant: str, agent_id: str) -> str:
    return kube.core.read_namespaced_service(names.gateway_name(agent_id), tenant).spec.selector[names.NAME_LABEL]


def config_maps(kube: Kube, tenant: str, agent_id: str) -> set[str]:
    return {c.metadata.name for c in kube.core.list_namespaced_config_map(
        tenant, label_selector=agent_selector(agent_id)).items}


def ready_pods(kube: Kube, tenant: str, agent_id: str, revision_id: str) -> list[str]:
    """Live, Ready gateway Pods mounting the revision's ConfigMap."""
    wanted = names.config_map_name(agent_id, revision_id)
    found = []
    for pod in kube.core.list_namespaced_pod(tenant, label_selector=agent_selector(agent_id)).items:
        mounted = {v.config_map.name for v in pod.spec.volumes or [] if v.config_map is not None}
        ready = any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))
        if pod.metadata.deletion_timestamp is None and wanted in mounted and ready:
            found.append(pod.metadata.name)
    return found


def agent_objects(kube: Kube, tenant: str, agent_id: str) -> dict[str, list[str]]:
    selector = agent_selector(agent_id)
    listed = {
        "deployments": kube.apps.list_namespaced_deployment(tenant, label_selector=selector).items,
        "services": kube.core.list_namespaced_service(tenant, label_selector=selector).items,
        "configmaps": kube.core.list_namespaced_config_map(tenant, label_selector=selector).items,
        "secrets": kube.core.list_namespaced_secret(tenant, label_selector=selector).items,
        "persistentvolumeclaims": kube.core.list_namespaced_persistent_volume_claim(
            tenant, label_selector=selector).items,
        "serviceaccounts": kube.core.list_namespaced_service_account(tenant, label_selector=selector).items,
        "networkpolicies": kube.networking.list_namespaced_network_policy(tenant, label_selector=selector).items,
        "pods": kube.core.list_namespaced_pod(tenant, label_selector=selector).items,
    }
    return {kind: sorted(item.metadata.name for item in items) for kind, items in listed.items() if items}


def assert_canary_only_in_its_secret(kube: Kube, tenant: str) -> None:
    for config_map in kube.core.list_namespaced_config_map(tenant).items:
        assert CANARY not in json.dumps(config_map.data or {}), config_map.metadata.name
    for kind, items in (("configmap", kube.core.list_namespaced_config_map(tenant).items),
                        ("secret", kube.core.list_namespaced_secret(tenant).items),
                        ("deployment", kube.apps.list_namespaced_deployment(tenant).items)):
        for item in items:
            metadata = json.dumps({"labels": item.metadata.labels, "annotations": item.metadata.annotations})
            assert CANARY not in metadata, (kind, item.metadata.name)
    for deployment in kube.apps.list_namespaced_deployment(tenant).items:
        for container in deployment.spec.template.spec.containers:
            assert all(variable.value is None or CANARY not in variable.value for variable in container.env or [])


# --- the seed -----------------------------------------------------------------------------------


def test_seed_002_an_operator_runs_an_agent_on_kubernetes_with_the_occ_cli(seed, tmp_path):
    kube = seed.kube

    # The protected bootstrap key opens the Installation.
    assert seed("installation", "--json").json()["id"].startswith("ins_")

    # The Namespace is ready once the worker observed the tenant boundary.
    namespace = seed("namespaces", "create", NAMESPACE, "--json").json()
    assert namespace["status"] == "ready"
    tenant = names.tenant_namespace(namespace["id"])
    boundary = kube.core.read_namespace(tenant)
    assert boundary.metadata.labels[names.NAMESPACE_LABEL] == namespace["id"]
    assert boundary.metadata.labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert {p.metadata.name for p in kube.networking.list_namespaced_network_policy(tenant).items} >= {
        "default-deny", "allow-dns", "allow-gateway-clients"}

    # The model key, from stdin: the web process writes it as an Opaque Secret in the tenant
    # namespace (with the API's own identity), under the fixed key ``value``.
    secret = seed("secrets", "create", "model-key", "-n", NAMESPACE, "--json", stdin=CANARY + "\n").json()
    stored = kube.core.read_namespaced_secret(names.occ_secret_name(secret["id"]), tenant)
    assert base64.b64decode(stored.data["value"]).decode() == CANARY
    assert stored.type == "Opaque"

    body = tmp_path / "configuration.json"
    body.write_text(json.dumps({"kind": "agent", "values": VALUES}))
    configuration = seed("configurations", "create", "-n", NAMESPACE, "-f", str(body), "--json").json()
    agent = seed("agents", "create", AGENT, "-n", NAMESPACE, "-c", configuration["id"], "--model-secret",
                 "model-key", "--json").json()
    assert agent["executionMode"] == "embedded"
    agent_id = agent["id"]

    # First deploy: the Deployment came up behind the inactive selector, then activation switched it.
    first = seed("agents", "deploy", AGENT, "-n", NAMESPACE, "--json").json()
    first_id = first["revision"]["id"]
    assert (first["deployment"]["status"], first["agent"]["activeRevisionId"]) == ("succeeded", first_id)
    assert serving(kube, tenant, agent_id) == (first_id, 1)
    assert service_selector(kube, tenant, agent_id) == names.gateway_name(agent_id)
    assert len(ready_pods(kube, tenant, agent_id, first_id)) == 1
    assert config_maps(kube, tenant, agent_id) == {names.config_map_name(agent_id, first_id)}
    status = seed("agents", "status", AGENT, "-n", NAMESPACE, "--json").json()
    assert status["agent"]["activeRevisionId"] == first_id
    assert status["latestDeployment"]["deploymentId"] == first_id
    assert first_id in seed("agents", "status", AGENT, "-n", NAMESPACE).stdout

    # Second deploy: the same Deployment now serves it, the predecessor's ConfigMap is retired.
    second = seed("agents", "deploy", AGENT, "-n", NAMESPACE, "--json").json()
    second_id = second["revision"]["id"]
    assert (second["deployment"]["status"], second["agent"]["activeRevisionId"]) == ("succeeded", second_id)
    assert serving(kube, tenant, agent_id) == (second_id, 1)
    assert service_selector(kube, tenant, agent_id) == names.gateway_name(agent_id)
    wait_for(lambda: len(ready_pods(kube, tenant, agent_id, second_id)) == 1, timeout=60,
             what="the second revision's Pod Ready")
    assert config_maps(kube, tenant, agent_id) == {names.config_map_name(agent_id, second_id)}

    # A third whose Pod never becomes Ready: the deployment fails with the convergence code and
    # the gateway is put back on the second, which serves again once its Pod is Ready.
    hold = {names.AGENT_LABEL: agent_id}
    kube.kubelet.hold_unready(hold)
    failed = seed("agents", "deploy", AGENT, "-n", NAMESPACE, "--json")
    assert failed.code == Exit.FAILED, failed.stderr
    assert "GATEWAY_CONVERGENCE_TIMEOUT" in failed.stderr
    kube.kubelet.release(hold)
    assert serving(kube, tenant, agent_id) == (second_id, 1)
    wait_for(lambda: len(ready_pods(kube, tenant, agent_id, second_id)) == 1, timeout=60,
             what="the second revision serving again")

    # Stop: the Deployment is scaled to zero behind the inactive selector; its objects stay.
    stopped = seed("agents", "stop", AGENT, "-n", NAMESPACE, "--json").json()
    assert (stopped["desiredRuntimeState"], stopped["runtime"]["state"]) == ("stopped", "stopped")
    assert stopped.get("activeRevisionId") is None
    assert serving(kube, tenant, agent_id)[1] == 0
    assert service_selector(kube, tenant, agent_id) == names.inactive_selector_value(agent_id)
    wait_for(lambda: "pods" not in agent_objects(kube, tenant, agent_id), timeout=60, what="the gateway Pod gone")
    assert names.state_claim_name(agent_id) in agent_objects(kube, tenant, agent_id)["persistentvolumeclaims"]

    assert_canary_only_in_its_secret(kube, tenant)

    # Delete: nothing labelled with the Agent is left; the Namespace's model key Secret stays.
    assert seed("agents", "delete", AGENT, "-n", NAMESPACE, "--json").json()["status"] == "deleted"
    wait_for(lambda: agent_objects(kube, tenant, agent_id) == {}, timeout=120,
             what="nothing of the Agent left")
    assert kube.core.read_namespaced_secret(names.occ_secret_name(secret["id"]), tenant).data["value"]

    # The value went in on stdin only: no argv, no output, no log of any OCC process.
    for run in seed.runs:
        assert not any(CANARY in arg for arg in run.argv)
        assert CANARY not in run.stdout
        assert CANARY not in run.stderr
    for log in seed.stack.log_dir.glob("*.log"):
        assert CANARY not in log.read_text(errors="replace"), log.name
