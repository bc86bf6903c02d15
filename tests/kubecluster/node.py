"""A real node for the test cluster: containerd, runc, Debian's CNI plugins and the kubelet built
from the same source as the API server (``make kube``), on this machine, for tests marked
``kubelet``.

- containerd runs with its own root, state and socket under the node's folder (nothing of a
  system containerd is used or touched), ``restrict_oom_score_adj = true`` (without it every Pod
  fails with "can't get final child's PID from pipe" here) and runc's state in its own folder.
- Images come from no registry: ``devtools.images`` writes OCI archives from files on this machine
  (busybox-static for the Pod sandbox, the kubelet's "pause", and for test Pods), cached by the
  hash of their inputs and imported with ``ctr images import``.
- The kubelet registers Node ``occ-node`` with an address of this machine (``--node-ip``; the
  API server reaches it by that InternalIP, never through a name), serves only to the API server
  (a client certificate of the cluster's ``kubelet_ca``), gives Pods their own loopback as DNS server
  (``--resolv-conf``: no query ever goes to the machine's resolver) and writes no iptables chains.
- Pods are on a bridge of their own subnet (``POD_SUBNET``) with no default route and no other
  route: nothing a Pod sends can leave this machine (tests/kubecluster/test_node.py reads a Pod's
  routing table to prove it, and sends nothing).
- Everything the node changes on the machine (sysctls, iptables, mounts, links, cgroups, files in
  fixed places) is recorded before it starts and restored after it stopped (``host.HostState``).

The simulated kubelet keeps serving Pods bound to its own Node; Pods for this one name it
(``spec.nodeName: occ-node``) or select it (``nodeSelector: {occ.dev/node: real}``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client
from kubernetes.client.rest import ApiException

from devtools import images
from tests.kubecluster import cluster as cluster_module
from tests.kubecluster.host import HostState

NODE_NAME = "occ-node"
NODE_LABEL = {"occ.dev/node": "real"}
POD_SUBNET = "10.85.0.0/24"
BRIDGE = "occ-br0"
RUNC = "/usr/sbin/runc"
CNI_BIN = Path("/usr/lib/cni")
IMAGE_CACHE = Path.home() / ".cache" / "occ" / "images"


class NodeUnavailable(RuntimeError):
    """containerd, runc, the CNI plugins or the kubelet are missing or did not come up."""


def node_address() -> str:
    """An IPv4 address of this machine that is not loopback (the kubelet refuses loopback)."""
    result = subprocess.run(["ip", "-j", "-4", "addr", "show", "scope", "global", "up"], capture_output=True,
                            text=True, check=True)
    for link in json.loads(result.stdout):
        for address in link.get("addr_info", []):
            if address.get("family") == "inet" and not ipaddress.ip_address(address["local"]).is_loopback:
                return str(address["local"])
    raise NodeUnavailable("no global IPv4 address on this machine for the node")


def programs() -> dict[str, Path]:
    """The node's programs, or NodeUnavailable naming what is missing."""
    found: dict[str, Path] = {}
    missing = []
    kubelet = cluster_module.kube_cache() / "bin" / "kubelet"
    if os.access(kubelet, os.X_OK):
        found["kubelet"] = kubelet
    else:
        missing.append(f"kubelet ({kubelet})")
    for name in ("containerd", "ctr", "containerd-shim-runc-v2"):
        path = shutil.which(name)
        if path:
            found[name] = Path(path)
        else:
            missing.append(name)
    if not os.access(RUNC, os.X_OK):
        missing.append("runc")
    if not (CNI_BIN / "bridge").exists() or not (CNI_BIN / "host-local").exists():
        missing.append("containernetworking-plugins")
    if not images.BUSYBOX.is_file():
        missing.append("busybox-static")
    if missing:
        raise NodeUnavailable(f"{', '.join(missing)} not installed: run `make kube` as root")
    if os.geteuid() != 0:
        raise NodeUnavailable("a kubelet and containerd need root")
    return found


@dataclass
class RealNode:
    """The running node. ``busybox`` is the reference of the imported busybox image."""

    root: Path
    address: str
    busybox: str
    host: HostState
    ctr_socket: Path
    processes: list[cluster_module.Process] = field(default_factory=list)
    restore_problems: list[str] = field(default_factory=list)
    after: HostState | None = None
    imported: set[Path] = field(default_factory=set)

    def ctr(self, *args: str, timeout: float = 120) -> str:
        result = subprocess.run(["ctr", "--address", str(self.ctr_socket), "--namespace", "k8s.io", *args],
                                capture_output=True, text=True, timeout=timeout, check=False)
        if result.returncode != 0:
            raise NodeUnavailable(f"ctr {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def import_image(self, archive: Path) -> None:
        """``ctr images import`` of ``archive`` (once per node: its name carries its input hash)."""
        if archive not in self.imported:
            self.ctr("images", "import", "--no-unpack=false", str(archive), timeout=600)
            self.imported.add(archive)

    def bind_pending(self, core: client.CoreV1Api, namespace: str, selector: str) -> list[str]:
        """Bind the unbound Pods of ``namespace`` matching the label ``selector`` to this node
        (``pods/binding``, what a scheduler does; the test cluster has none, and the simulated
        kubelet leaves them alone when told to: ``SimulatedKubelet.leave``). Their names."""
        bound = []
        for pod in core.list_namespaced_pod(namespace, label_selector=selector).items:
            if pod.spec.node_name or pod.metadata.deletion_timestamp is not None:
                continue
            binding = {"apiVersion": "v1", "kind": "Binding",
                       "metadata": {"name": pod.metadata.name, "namespace": namespace},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": NODE_NAME}}
            with contextlib.suppress(ApiException):  # bound meanwhile, or gone
                core.create_namespaced_pod_binding(pod.metadata.name, namespace, binding, _preload_content=False)
                bound.append(pod.metadata.name)
        return bound

    @contextlib.contextmanager
    def scheduling(self, core: client.CoreV1Api, namespace: str, selector: str,
                   interval: float = 0.5) -> Iterator[None]:
        """``bind_pending`` every ``interval`` seconds while the block runs: the scheduler a call
        that waits for a new Pod to become Ready (a Recreate rollout's) needs meanwhile."""
        stop = threading.Event()

        def bind() -> None:
            while not stop.wait(interval):
                with contextlib.suppress(ApiException, OSError):
                    self.bind_pending(core, namespace, selector)

        binder = threading.Thread(target=bind, name="real-node-scheduler", daemon=True)
        binder.start()
        try:
            yield
        finally:
            stop.set()
            binder.join(timeout=30)

    def local_volume(self, core: client.CoreV1Api, name: str, *, claim_namespace: str, claim_name: str,
                     storage_class: str = "", size: str = "10Gi") -> Path:
        """A ``local`` PersistentVolume on this node (a folder under its root, owned by root as a
        fresh disk is), reserved for the claim ``claim_namespace/claim_name``; the folder. The
        kubelet gives a ``local`` volume the Pod's ``fsGroup`` (a ``hostPath`` one it would not)."""
        folder = self.root / "volumes" / name
        folder.mkdir(parents=True, mode=0o755)
        core.create_persistent_volume({
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": storage_class,
                     "local": {"path": str(folder)},
                     "claimRef": {"namespace": claim_namespace, "name": claim_name},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE_NAME]}]}]}}}})
        return folder

    def running_tasks(self) -> list[str]:
        """The ids of the containers (Pod sandboxes included) whose process still runs."""
        try:
            listing = self.ctr("tasks", "list", timeout=20).splitlines()[1:]
        except (NodeUnavailable, subprocess.TimeoutExpired):
            return []
        return [line.split()[0] for line in listing if line.split()[-1:] == ["RUNNING"]]

    def log(self, name: str, lines: int = 40) -> str:
        for process in self.processes:
            if process.name == name:
                return process.tail(lines)
        return ""

    def stop(self, core: client.CoreV1Api | None = None) -> None:
        """Delete the Pods bound here (the kubelet stops their containers and releases their
        network), stop the kubelet, kill what still runs, stop containerd, restore the host."""
        if core is not None and any(p.name == "kubelet" and p.popen.poll() is None for p in self.processes):
            with contextlib.suppress(ApiException, OSError):
                for pod in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={NODE_NAME}").items:
                    with contextlib.suppress(ApiException):
                        core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and self.running_tasks():
                time.sleep(0.5)
        for name in ("kubelet",):
            self._terminate(name)
        with contextlib.suppress(NodeUnavailable, subprocess.TimeoutExpired):
            for task in self.ctr("tasks", "list", "-q", timeout=20).split():
                with contextlib.suppress(NodeUnavailable, subprocess.TimeoutExpired):
                    self.ctr("tasks", "kill", "--signal", "SIGKILL", task, timeout=20)
                    self.ctr("tasks", "delete", "--force", task, timeout=20)
            for container in self.ctr("containers", "list", "-q", timeout=20).split():
                with contextlib.suppress(NodeUnavailable, subprocess.TimeoutExpired):
                    self.ctr("containers", "delete", container, timeout=20)
        self._terminate("containerd")
        self.restore_problems = self.host.restore()
        self.after = HostState.record()
        shutil.rmtree(self.root, ignore_errors=True)

    def _terminate(self, name: str) -> None:
        for process in self.processes:
            if process.name != name or process.popen.poll() is not None:
                continue
            process.popen.terminate()
            try:
                process.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait(timeout=10)


def _containerd_config(root: Path, sandbox_image: str) -> str:
    return f"""version = 2
root = "{root}/containerd/root"
state = "{root}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "{root}/containerd.sock"
[ttrpc]
  address = "{root}/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{root}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox_image}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{RUNC}"
        Root = "{root}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{root}/cni/net.d"
"""


def cni_config(root: Path) -> dict[str, Any]:
    """A bridge of the Pods' own subnet and nothing else: no default route (``isDefaultGateway``
    is off and the IPAM section lists no routes), no masquerading, addresses kept under ``root``."""
    return {
        "cniVersion": "0.4.0",
        "name": "occ-node",
        "plugins": [{
            "type": "bridge", "bridge": BRIDGE, "isGateway": True, "isDefaultGateway": False, "ipMasq": False,
            "hairpinMode": True,
            "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]], "routes": [],
                     "dataDir": str(root / "cni" / "ipam")},
        }],
    }


def _wait(check, *, what: str, process: cluster_module.Process, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise NodeUnavailable(f"{what}: {process.name} exited ({process.popen.returncode}):\n{process.tail()}")
        with contextlib.suppress(httpx.HTTPError, OSError, ApiException, NodeUnavailable,
                                 subprocess.TimeoutExpired):
            if check():
                return
        time.sleep(0.5)
    raise NodeUnavailable(f"{what} not reached in {timeout:.0f} s:\n{process.tail()}")


def start(cluster: cluster_module.Cluster, core: client.CoreV1Api, *, timeout: float = 180.0) -> RealNode:
    """containerd, the images, the CNI network and the kubelet; returns once the Node is Ready."""
    found = programs()
    address = node_address()
    image = images.busybox_image()
    archive = images.build(image, IMAGE_CACHE)
    host = HostState.record()
    root = Path(tempfile.mkdtemp(prefix="occ-node-", dir="/var/tmp"))
    node = RealNode(root=root, address=address, busybox=image.reference(), host=host,
                    ctr_socket=root / "containerd.sock")
    try:
        (root / "cni" / "net.d").mkdir(parents=True)
        (root / "cni" / "net.d" / "10-occ-node.conflist").write_text(json.dumps(cni_config(root), indent=1))
        config = root / "containerd.toml"
        config.write_text(_containerd_config(root, node.busybox))
        containerd = cluster_module._spawn(root, "containerd", [str(found["containerd"]), "--config", str(config)])
        node.processes.append(containerd)
        _wait(lambda: node.ctr("version", timeout=10) != "", what="containerd serving", process=containerd,
              timeout=60)
        node.import_image(archive)

        kubeconfig = cluster.kubeconfig(root / "kubelet.kubeconfig", token=cluster.node_token)
        port, healthz = cluster_module.free_port(), cluster_module.free_port()
        # Pods' DNS: their own loopback (nothing listens there; without a server here containerd
        # would copy the machine's /etc/resolv.conf into every Pod).
        resolv = root / "resolv.conf"
        resolv.write_text("nameserver 127.0.0.1\n")
        kubelet = cluster_module._spawn(root, "kubelet", [
            str(found["kubelet"]), f"--kubeconfig={kubeconfig}", f"--root-dir={root / 'kubelet'}",
            f"--cert-dir={root / 'kubelet-pki'}", f"--volume-plugin-dir={root / 'volume-plugins'}",
            "--container-runtime=remote", f"--container-runtime-endpoint=unix://{node.ctr_socket}",
            f"--image-service-endpoint=unix://{node.ctr_socket}", "--runtime-request-timeout=5m",
            f"--hostname-override={NODE_NAME}", f"--node-ip={address}", f"--address={address}",
            f"--port={port}", "--read-only-port=0", "--healthz-bind-address=127.0.0.1", f"--healthz-port={healthz}",
            f"--node-labels={','.join(f'{k}={v}' for k, v in NODE_LABEL.items())}",
            f"--client-ca-file={cluster.kubelet_ca}", "--anonymous-auth=false", "--authorization-mode=AlwaysAllow",
            f"--pod-infra-container-image={node.busybox}", f"--resolv-conf={resolv}",
            "--make-iptables-util-chains=false",
            "--cgroup-driver=cgroupfs", "--fail-swap-on=false", "--image-gc-high-threshold=100",
            "--image-gc-low-threshold=99", "--eviction-hard=memory.available<100Mi,nodefs.available<1%,"
            "imagefs.available<1%", "--serialize-image-pulls=false", "--sync-frequency=10s",
            "--node-status-update-frequency=5s", "--v=1",
        ])
        node.processes.append(kubelet)

        def ready() -> bool:
            status = core.read_node_status(NODE_NAME).status
            return any(c.type == "Ready" and c.status == "True" for c in status.conditions or [])

        _wait(ready, what=f"Node {NODE_NAME} Ready", process=kubelet, timeout=timeout)
    except BaseException:
        node.stop(core)
        raise
    return node

