"""OCC's own manifests (deploy/kubernetes, kustomize) and image (Dockerfile).

``kubectl kustomize`` builds the whole installation (what it sends validates, strict, against the
newest Kubernetes schema ``kubernetes-validate`` ships; each manifest against 1.20, the test
cluster's, and 1.30+ in test_schemas.py), and the installation keeps its promises: only the init Job
mounts the volume the bootstrap key is written to; secret settings reach the processes only by
``secretKeyRef``; one beat; every Pod restricted; the worker's ServiceAccount is the subject of
the driver's RBAC. (Admission by a real API server, ``kubectl apply --dry-run=server``, needs
the Kubernetes test cluster.)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import environ
import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from occ.drivers.kube.api import Connection, Settings
from occ.drivers.kube.compute import KubernetesComputeDriver
from provisioning.queues import Queue

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
KUBERNETES_VERSION = latest_version()
NAMESPACE = "occ"
SECRET_SETTINGS = {"DATABASE_URL", "CELERY_BROKER_URL", "OCC_DJANGO_SECRET_KEY", "OCC_SECRET_KEYS"}
BOOTSTRAP_CLAIM = "occ-bootstrap-output"


def _documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _manifest_files() -> list[Path]:
    return sorted(path for path in MANIFESTS.glob("*.yaml") if path.name != "kustomization.yaml")


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    """``kubectl kustomize deploy/kubernetes``: what ``kubectl apply -k`` would send."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is missing in CI: `make kubectl` installs Debian's kubernetes-client")
        pytest.skip("kubectl is not installed: `make kubectl` installs Debian's kubernetes-client")
    result = subprocess.run([kubectl, "kustomize", str(MANIFESTS)], capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
    return _documents(result.stdout)


def _by_kind(documents: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in documents if doc["kind"] == kind}


def _pod_specs(documents: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{doc['kind']}/{doc['metadata']['name']}": doc["spec"]["template"]["spec"]
            for doc in documents if doc["kind"] in ("Deployment", "Job")}


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def test_kustomize_builds_the_installation_in_its_namespace(rendered):
    kinds = sorted({(doc["kind"], doc["metadata"]["name"]) for doc in rendered})
    assert kinds == sorted([
        ("Namespace", NAMESPACE), ("ConfigMap", "occ-config"), ("PersistentVolumeClaim", BOOTSTRAP_CLAIM),
        ("Job", "occ-init"), ("Deployment", "occ-api"), ("Service", "occ-api"), ("Deployment", "occ-worker"),
        ("Deployment", "occ-beat"), ("ServiceAccount", "occ-api"), ("ServiceAccount", "occ-worker"),
        ("ServiceAccount", "occ-beat"), ("ServiceAccount", "occ-init"), ("ClusterRole", "occ-worker-driver"),
        ("ClusterRoleBinding", "occ-worker-driver"), ("ClusterRole", "occ-api-secrets"),
        ("ClusterRoleBinding", "occ-api-secrets"), ("ClusterRole", "occ-api-observe"),
        ("ClusterRoleBinding", "occ-api-observe"), ("ClusterRole", "occ-api-gateways"),
        ("ClusterRoleBinding", "occ-api-gateways"),
    ])
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for document in rendered:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
        if document["kind"] not in cluster_scoped:
            assert document["metadata"]["namespace"] == NAMESPACE, document["metadata"]["name"]
    images = {c["image"] for spec in _pod_specs(rendered).values() for c in _containers(spec)}
    assert len(images) == 1  # every process runs the one OCC image kustomize names


def test_only_the_init_job_mounts_the_volume_that_holds_the_bootstrap_key(rendered):
    claims = {name: {v["persistentVolumeClaim"]["claimName"] for v in spec.get("volumes", [])
                     if "persistentVolumeClaim" in v}
              for name, spec in _pod_specs(rendered).items()}
    assert claims == {"Job/occ-init": {BOOTSTRAP_CLAIM}, "Deployment/occ-api": set(),
                      "Deployment/occ-worker": set(), "Deployment/occ-beat": set()}
    job = _pod_specs(rendered)["Job/occ-init"]
    (container,) = job["containers"]
    data_dir = next(e["value"] for e in container["env"] if e["name"] == "OCC_DATA_DIR")
    volume = next(v["name"] for v in job["volumes"] if v.get("persistentVolumeClaim", {}).get("claimName")
                  == BOOTSTRAP_CLAIM)
    assert {"name": volume, "mountPath": data_dir} in container["volumeMounts"]
    script = container["args"][0]
    assert script.index("migrate") < script.index("occ_bootstrap")


def test_the_web_process_runs_with_the_projects_gunicorn_settings(rendered):
    """The same settings as the Procfile's web line (threads; slow clients hold no thread)."""
    procfile = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    api = _pod_specs(rendered)["Deployment/occ-api"]["containers"][0]["args"][0]
    for part in ("gunicorn project.wsgi:application", "-c python:project.gunicorn_conf"):
        assert part in procfile
        assert part in api
    assert "occ_preflight" in api


def test_the_worker_runs_the_procfiles_worker_command(rendered):
    """The same celery worker line as the Procfile's: every queue, and neither gossip nor mingle
    (tests/provisioning/test_worker_broker_outage.py: gossip logged a traceback at each Redis loss)."""
    procfile = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("worker:"))
    command = procfile.removeprefix("worker:").strip()
    worker = _pod_specs(rendered)["Deployment/occ-worker"]["containers"][0]["args"][0]
    assert command in worker.splitlines()
    assert "--without-gossip --without-mingle" in command


def test_secret_settings_reach_every_process_by_reference_only(rendered):
    config = _by_kind(rendered, "ConfigMap")["occ-config"]["data"]
    assert SECRET_SETTINGS.isdisjoint(config)
    for name, spec in _pod_specs(rendered).items():
        for container in _containers(spec):
            for variable in container.get("env", []):
                if variable["name"] in SECRET_SETTINGS:
                    assert "value" not in variable, (name, variable["name"])
                    assert set(variable["valueFrom"]) == {"secretKeyRef"}
        given = {v["name"] for v in spec["containers"][0].get("env", [])}
        assert given >= SECRET_SETTINGS, name


def test_every_pod_runs_restricted(rendered):
    for name, spec in _pod_specs(rendered).items():
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True, name
        assert pod["runAsUser"] > 0, name
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in _containers(spec):
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, (name, container["name"])
            assert context["readOnlyRootFilesystem"] is True, (name, container["name"])
            assert context["capabilities"] == {"drop": ["ALL"]}, (name, container["name"])
            assert {"cpu", "memory"} <= set(container["resources"]["limits"]), (name, container["name"])
    namespace = _by_kind(rendered, "Namespace")[NAMESPACE]["metadata"]["labels"]
    assert namespace["pod-security.kubernetes.io/enforce"] == "restricted"


def test_one_beat_a_scalable_worker_fleet_and_kubernetes_rights_for_the_worker_and_the_api_only(rendered):
    deployments = _by_kind(rendered, "Deployment")
    beat = deployments["occ-beat"]["spec"]
    assert beat["replicas"] == 1
    assert beat["strategy"] == {"type": "Recreate"}
    # Workers are interchangeable (claims are leased and fenced): a rollout may overlap them.
    assert deployments["occ-worker"]["spec"].get("strategy", {}).get("type", "RollingUpdate") == "RollingUpdate"

    specs = _pod_specs(rendered)
    accounts = {name: spec["serviceAccountName"] for name, spec in specs.items()}
    assert accounts == {"Job/occ-init": "occ-init", "Deployment/occ-api": "occ-api",
                        "Deployment/occ-worker": "occ-worker", "Deployment/occ-beat": "occ-beat"}
    tokens = {name: spec["automountServiceAccountToken"] for name, spec in specs.items()}
    assert tokens == {"Job/occ-init": False, "Deployment/occ-api": True, "Deployment/occ-worker": True,
                      "Deployment/occ-beat": False}
    bindings = {binding["roleRef"]["name"]: binding["subjects"] for binding in rendered
                if binding["kind"] in ("RoleBinding", "ClusterRoleBinding")}
    assert bindings == {
        "occ-worker-driver": [{"kind": "ServiceAccount", "name": "occ-worker", "namespace": NAMESPACE}],
        "occ-api-secrets": [{"kind": "ServiceAccount", "name": "occ-api", "namespace": NAMESPACE}],
        "occ-api-observe": [{"kind": "ServiceAccount", "name": "occ-api", "namespace": NAMESPACE}],
        "occ-api-gateways": [{"kind": "ServiceAccount", "name": "occ-api", "namespace": NAMESPACE}],
    }
    # The API holds the Kubernetes SecretDriver's rights (no list, no other kind) and reads what the
    # console shows of a gateway: no Secret there, no exec, no write.
    api_rules = _by_kind(rendered, "ClusterRole")["occ-api-secrets"]["rules"]
    assert api_rules == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch", "delete"]}]
    observe_rules = _by_kind(rendered, "ClusterRole")["occ-api-observe"]["rules"]
    assert observe_rules == [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    ]
    # The Chat's: a POST through the service proxy, nothing else.
    chat_rules = _by_kind(rendered, "ClusterRole")["occ-api-gateways"]["rules"]
    assert chat_rules == [{"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["create"]}]

    # The worker consumes every queue the tasks are routed to.
    worker = specs["Deployment/occ-worker"]["containers"][0]["args"][0]
    queues = re.search(r"-Q (\S+)", worker)
    assert queues is not None
    assert set(queues.group(1).split(",")) == {queue.value for queue in Queue}


def test_the_image_is_multi_stage_non_root_and_built_from_the_locks():
    dockerfile = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM \S+ AS (\S+)$", dockerfile, flags=re.MULTILINE)
    assert stages == ["uv", "build", "gateway", "occ"]
    users = re.findall(r"^USER (\d+):(\d+)$", dockerfile, flags=re.MULTILINE)
    assert [int(uid) for uid, _gid in users] == [1000, 10001]  # gateway (the runtime's node user), occ
    assert "uv sync --frozen --no-dev" in dockerfile
    assert "manage.py occ_runtime install" in dockerfile  # `make runtime`'s own installer, from the locks
    assert "/app/openclaw.mjs" in dockerfile

    occ_uid = int(users[-1][0])
    for name, spec in _pod_specs(_documents("\n---\n".join(p.read_text() for p in _manifest_files()))).items():
        assert spec["securityContext"]["runAsUser"] == occ_uid, name

    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".occ", "**/node_modules", ".git"} <= set(ignored)


def test_the_gateway_client_policy_the_driver_writes_admits_the_shipped_api_pods(rendered, settings):
    """The tenant namespaces' ``allow-gateway-clients`` NetworkPolicy (the only ingress a gateway
    has) is built from OCC_KUBERNETES_CLIENT_NAMESPACE and OCC_KUBERNETES_CLIENT_POD_LABELS as the
    shipped ConfigMap sets them (or their defaults): its peer must select the namespace as the
    manifests create it and the API's Pods (the web process reaches the gateways). matchLabels
    selects what carries every listed label; the namespace's name label is written in the manifest,
    since API servers before 1.21 do not add it."""
    shipped = _by_kind(rendered, "ConfigMap")["occ-config"]["data"]
    env = environ.Env()
    client_namespace = shipped.get("OCC_KUBERNETES_CLIENT_NAMESPACE", settings.OCC_KUBERNETES_CLIENT_NAMESPACE)
    pod_labels = (env.parse_value(shipped["OCC_KUBERNETES_CLIENT_POD_LABELS"], dict)
                  if "OCC_KUBERNETES_CLIENT_POD_LABELS" in shipped else settings.OCC_KUBERNETES_CLIENT_POD_LABELS)
    route = shipped.get("OCC_KUBERNETES_GATEWAY_ROUTE", settings.OCC_KUBERNETES_GATEWAY_ROUTE)
    connection = cast(Connection, SimpleNamespace(settings=Settings(gateway_route=route)))
    driver = KubernetesComputeDriver(connection=connection, image="occ/gateway:test",
                                     trusted_proxy_cidrs=["10.0.0.0/8"], storage_class="",
                                     client_namespace=client_namespace, client_pod_labels=pod_labels)
    policies = {policy.metadata.name: policy for policy in driver._namespace_policies({}, {})}
    (peer,) = policies["allow-gateway-clients"].spec.ingress[0]._from

    def selects(selector: Any, labels: dict[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in (selector.match_labels or {}).items())

    namespace = _by_kind(rendered, "Namespace")[NAMESPACE]["metadata"]
    assert selects(peer.namespace_selector, namespace.get("labels", {})), (peer.namespace_selector, namespace)
    api_pods = _by_kind(rendered, "Deployment")["occ-api"]["spec"]["template"]["metadata"]["labels"]
    assert selects(peer.pod_selector, api_pods), (peer.pod_selector, api_pods)
    for other in ("occ-worker", "occ-beat"):  # only the web process talks to gateways
        labels = _by_kind(rendered, "Deployment")[other]["spec"]["template"]["metadata"]["labels"]
        assert not selects(peer.pod_selector, labels), other
