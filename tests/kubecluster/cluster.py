"""A real Kubernetes control plane for the tests: etcd, kube-apiserver and kube-controller-manager
on free loopback ports, started once per test session and stopped after.

The binaries come from ``make kube`` (kube-apiserver and kube-controller-manager 1.20.2 built from
Debian's source package into ``~/.cache/occ/kube/1.20.2/bin``; etcd from Debian's etcd-server).
There is no scheduler: ``tests.kubecluster.kubelet`` binds Pods and reports their status, and the
tests marked ``kubelet`` add a real node (``tests.kubecluster.node``), which the API server reaches by
its InternalIP, presenting a client certificate of ``kubelet_ca``. The API server authenticates
static tokens (``token_file``) and authorizes with the Node authorizer and RBAC:

- ``admin``: ``system:masters``, for the harness and for assertions;
- ``system:serviceaccount:occ:occ-worker``: the identity ``deploy/kubernetes/worker-rbac.yaml``
  binds, so the driver in tests holds exactly the permissions OCC's manifests ship;
- ``system:serviceaccount:occ:occ-api``: the web process's identity, bound by
  ``deploy/kubernetes/api-rbac.yaml`` (the Kubernetes SecretDriver's rights, and reading the gateways
  the console observes: the Runtime panel and Logs tab);
- ``system:node:occ-node`` in ``system:nodes``: the real node's kubelet.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.ports import free_port

KUBE_VERSION = "1.20.2"
WORKER_USER = "system:serviceaccount:occ:occ-worker"
API_USER = "system:serviceaccount:occ:occ-api"
NODE_USER = "system:node:occ-node"
SERVICE_ACCOUNT_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:occ", "system:authenticated")
REPO = Path(__file__).resolve().parents[2]
WORKER_RBAC = REPO / "deploy" / "kubernetes" / "worker-rbac.yaml"
API_RBAC = REPO / "deploy" / "kubernetes" / "api-rbac.yaml"


class ClusterUnavailable(RuntimeError):
    """The binaries are missing or the control plane did not come up."""


def kube_cache() -> Path:
    configured = os.environ.get("OCC_KUBE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "occ" / "kube" / KUBE_VERSION


def binaries() -> dict[str, Path]:
    """The three programs, or ClusterUnavailable naming what is missing."""
    bin_dir = kube_cache() / "bin"
    found = {"kube-apiserver": bin_dir / "kube-apiserver",
             "kube-controller-manager": bin_dir / "kube-controller-manager"}
    etcd = shutil.which("etcd")
    missing = [name for name, path in found.items() if not os.access(path, os.X_OK)]
    if etcd is None:
        missing.append("etcd")
    if missing:
        raise ClusterUnavailable(f"{', '.join(missing)} not installed: run `make kube` (builds into {bin_dir})")
    found["etcd"] = Path(etcd)
    return found



@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class Cluster:
    """The running control plane. ``url`` is the API server's HTTPS address."""

    root: Path
    url: str
    ca_file: Path
    admin_token: str
    worker_token: str
    api_token: str
    node_token: str
    kubelet_ca: Path  # signs the client certificate the API server presents to a kubelet
    processes: list[Process] = field(default_factory=list)

    def kubeconfig(self, path: Path, *, token: str, server: str | None = None) -> Path:
        """A kubeconfig for ``token`` at ``server`` (default: the API server itself)."""
        server = server or self.url
        tls = (f"    certificate-authority: {self.ca_file}\n" if server.startswith("https") else "")
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: test\n  cluster:\n    server: {server}\n{tls}"
            f"users:\n- name: user\n  user:\n    token: {token}\n"
            "contexts:\n- name: test\n  context:\n    cluster: test\n    user: user\n"
            "current-context: test\n")
        path.chmod(0o600)
        return path

    @contextlib.contextmanager
    def controllers_paused(self) -> Iterator[None]:
        """Hold kube-controller-manager still (SIGSTOP, then SIGCONT): the API server keeps
        serving, but nothing a controller writes happens meanwhile: no quota status computed,
        no ReplicaSet or Pod made from a Deployment, no namespace finalized. Started with
        ``--leader-elect=false``, so it has no lease to lose while it is held."""
        (manager,) = [process for process in self.processes if process.name == "kube-controller-manager"]
        os.kill(manager.popen.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(manager.popen.pid, signal.SIGCONT)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.popen.poll() is None:
                process.popen.terminate()
        for process in reversed(self.processes):
            try:
                process.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait(timeout=5)
        self.processes.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _spawn(root: Path, name: str, argv: list[str]) -> Process:
    log = root / f"{name}.log"
    handle = log.open("wb")
    popen = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
    handle.close()
    return Process(name, popen, log)


def _wait(check, *, what: str, process: Process, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise ClusterUnavailable(f"{what}: {process.name} exited ({process.popen.returncode}):\n{process.tail()}")
        with contextlib.suppress(httpx.HTTPError, OSError):
            if check():
                return
        time.sleep(0.25)
    raise ClusterUnavailable(f"{what} not reached in {timeout:.0f} s:\n{process.tail()}")


def _kubelet_client_certificate(root: Path) -> tuple[Path, Path]:
    """A CA of the kubelets (``kubelet-ca.crt``) and the API server's client certificate from it."""
    ca_key, ca, key, request, certificate = (root / name for name in (
        "kubelet-ca.key", "kubelet-ca.crt", "kubelet-client.key", "kubelet-client.csr", "kubelet-client.crt"))
    for argv in (
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=occ-kubelet-ca",
         "-keyout", str(ca_key), "-out", str(ca)],
        ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/O=system:masters/CN=kube-apiserver-kubelet-client",
         "-keyout", str(key), "-out", str(request)],
        ["x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
         "-days", "2", "-out", str(certificate)],
    ):
        subprocess.run(["openssl", *argv], check=True, capture_output=True)
    return certificate, key


def start(*, timeout: float = 180.0) -> Cluster:
    """Start etcd, the API server and the controller manager; return once the API server is
    ready and the default ServiceAccount exists (Pods are refused before that)."""
    programs = binaries()
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="occ-kube-", dir=base))
    admin_token, worker_token, api_token, node_token = (secrets.token_hex(24) for _ in range(4))
    tokens = root / "tokens.csv"
    groups = ",".join(SERVICE_ACCOUNT_GROUPS)
    tokens.write_text(f'{admin_token},admin,admin-uid,"system:masters"\n'
                      f'{worker_token},{WORKER_USER},occ-worker-uid,"{groups}"\n'
                      f'{api_token},{API_USER},occ-api-uid,"{groups}"\n'
                      f'{node_token},{NODE_USER},occ-node-uid,"system:nodes"\n')
    tokens.chmod(0o600)
    sa_key, sa_pub = root / "sa.key", root / "sa.pub"
    subprocess.run(["openssl", "genrsa", "-out", str(sa_key), "2048"], check=True, capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", str(sa_key), "-pubout", "-out", str(sa_pub)], check=True,
                   capture_output=True)
    kubelet_client = _kubelet_client_certificate(root)
    etcd_port, peer_port, secure_port, kcm_port = free_port(), free_port(), free_port(), free_port()
    cert_dir = root / "certs"
    url = f"https://127.0.0.1:{secure_port}"
    cluster = Cluster(root=root, url=url, ca_file=cert_dir / "apiserver.crt", admin_token=admin_token,
                      worker_token=worker_token, api_token=api_token, node_token=node_token,
                      kubelet_ca=root / "kubelet-ca.crt")
    try:
        etcd = _spawn(root, "etcd", [
            str(programs["etcd"]), "--name", "t", "--data-dir", str(root / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-cluster", f"t=http://127.0.0.1:{peer_port}", "--log-level", "warn",
        ])
        cluster.processes.append(etcd)
        _wait(lambda: httpx.get(f"http://127.0.0.1:{etcd_port}/health", timeout=2).status_code == 200,
              what="etcd healthy", process=etcd, timeout=timeout)
        apiserver = _spawn(root, "kube-apiserver", [
            str(programs["kube-apiserver"]), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={secure_port}",
            "--insecure-port=0", f"--cert-dir={cert_dir}", f"--token-auth-file={tokens}",
            "--authorization-mode=Node,RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={sa_pub}", f"--service-account-signing-key-file={sa_key}",
            "--service-cluster-ip-range=10.96.0.0/16", "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false", "--watch-cache=true", "-v=1",
            # A node is reached at its address, never through a name (no DNS query leaves).
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={kubelet_client[0]}", f"--kubelet-client-key={kubelet_client[1]}",
        ])
        cluster.processes.append(apiserver)
        headers = {"Authorization": f"Bearer {admin_token}"}
        _wait(lambda: httpx.get(f"{url}/readyz", headers=headers, verify=False, timeout=3).status_code == 200,
              what="kube-apiserver /readyz", process=apiserver, timeout=timeout)
        kcm_config = cluster.kubeconfig(root / "kcm.kubeconfig", token=admin_token)
        kcm = _spawn(root, "kube-controller-manager", [
            str(programs["kube-controller-manager"]), f"--kubeconfig={kcm_config}", "--leader-elect=false",
            f"--service-account-private-key-file={sa_key}", f"--root-ca-file={cluster.ca_file}",
            "--use-service-account-credentials=false", "--port=0", f"--secure-port={kcm_port}",
            "--bind-address=127.0.0.1",
            # No kubelet heartbeats: without this the simulated node would be declared
            # unreachable after 40 s and its Pods evicted five minutes later.
            "--controllers=*,-nodelifecycle,-nodeipam,-route,-cloud-node-lifecycle,-attachdetach",
            "--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10", "-v=1",
            # A quota's usage is recounted on this period (default 5 min) besides on a Pod's end:
            # a quota first computed before the controller's Pod cache caught up (as after
            # controllers_paused) would otherwise keep a short count for minutes.
            "--resource-quota-sync-period=10s",
        ])
        cluster.processes.append(kcm)

        def default_service_account() -> bool:
            response = httpx.get(f"{url}/api/v1/namespaces/default/serviceaccounts/default", headers=headers,
                                 verify=False, timeout=3)
            return response.status_code == 200

        _wait(default_service_account, what="the default ServiceAccount", process=kcm, timeout=timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster
