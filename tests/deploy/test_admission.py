"""OCC's own manifests admitted by a real API server: ``kubectl apply --dry-run=server`` of what
``kubectl kustomize deploy/kubernetes`` builds, against the Kubernetes test cluster (1.20.2).

Server dry run runs admission and validation (defaults, schema, the ServiceAccount and the
Namespace existing) without persisting anything, so the init Job and the API and worker
Deployments are checked by the same code that would accept them in production.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.kubernetes, pytest.mark.slow]


@pytest.fixture
def kube_cluster(request):
    """The session's Kubernetes test cluster (tests/kubecluster's ``kube`` fixture)."""
    try:
        return request.getfixturevalue("kube")
    except pytest.FixtureLookupError:
        pytest.skip("the Kubernetes test cluster fixture (tests/kubecluster, `make kube`) is not in this checkout")


def _kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl is not installed: `make kubectl` installs Debian's kubernetes-client")
    return found


def _apply(kubectl: str, kubeconfig: Path, manifests: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "apply", "--dry-run=server", "-f", "-"],
                          input=manifests, capture_output=True, text=True, timeout=180, check=False)


def test_the_api_server_admits_the_init_job_and_the_api_and_worker_deployments(kube_cluster, tmp_path):
    kube = kube_cluster
    kubectl = _kubectl()
    kubeconfig = kube.cluster.kubeconfig(tmp_path / "admin.kubeconfig", token=kube.cluster.admin_token)
    built = subprocess.run([kubectl, "kustomize", str(ROOT / "deploy" / "kubernetes")], capture_output=True,
                           text=True, timeout=120, check=True).stdout

    admitted = _apply(kubectl, kubeconfig, built)
    assert admitted.returncode == 0, admitted.stderr
    for name in ("job.batch/occ-init", "deployment.apps/occ-api", "deployment.apps/occ-worker",
                 "deployment.apps/occ-beat", "service/occ-api"):
        assert f"{name} created (server dry run)" in admitted.stdout, admitted.stdout
    # A dry run persists nothing.
    assert kube.apps.list_namespaced_deployment("occ").items == []

    # The server refuses what it must: a Deployment whose Pod template breaks its own selector.
    documents = [doc for doc in yaml.safe_load_all(built) if doc]
    api = copy.deepcopy(next(d for d in documents if d["kind"] == "Deployment" and d["metadata"]["name"] == "occ-api"))
    api["spec"]["template"]["metadata"]["labels"] = {"app.kubernetes.io/name": "something-else"}
    refused = _apply(kubectl, kubeconfig, yaml.safe_dump(api))
    assert refused.returncode != 0
    assert "selector" in refused.stderr
