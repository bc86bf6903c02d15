"""A simulated kubelet: the test cluster has no kubelet and no scheduler, so this thread does
what they would for the API server's view of Pods.

It registers one Node, binds every unbound Pod to it (``pods/binding``), reports each bound Pod
Running and Ready (``pods/status``), and confirms deletions (a Pod with a deletion timestamp is
removed with grace 0, as a kubelet does once its containers stopped). Tests can hold Pods
un-Ready or make their container exit, chosen by label selector:

    kubelet.hold_unready({"openclaw.dev/revision": revision_id})
    kubelet.exit_container({"openclaw.dev/agent": agent_id}, exit_code=1)
    kubelet.assign_address({"openclaw.dev/agent": agent_id}, "192.0.2.2")
    kubelet.finish_init({"openclaw.dev/revision": revision_id}, "plugins", message='{"version": 1, …}')

Init containers terminate with exit code 0 and no message unless ``finish_init`` says otherwise
(its exit code and termination message, as a kubelet reports them in ``initContainerStatuses``;
a non-zero exit keeps the Pod initializing).

Pods get made-up addresses (10.244.x.y) unless a test gives the Pods of a selector an address of
this machine where something listens (``assign_address``): the API server refuses to proxy to
loopback and link-local addresses, so that is how its service proxy reaches a stand-in.

It polls the API server (one list of all Pods every ``interval``); no container ever runs.

Container logs: the API server answers ``GET .../pods/<name>/log`` by asking the Pod's kubelet
(``https://<node address>:<status.daemonEndpoints.kubeletEndpoint.Port>/containerLogs/...``).
``KubeletLogServer`` is a loopback HTTPS stand-in at exactly that one boundary: the Node reports
its port, the real API server authorizes ``pods/log`` and proxies the request, and the stand-in
answers from lines tests write with ``kubelet.write_log(namespace, pod, container, lines)``,
honouring ``tailLines``, ``sinceTime``/``sinceSeconds``, ``limitBytes`` and ``timestamps`` as the
kubelet does (tail first, then since, then the byte limit; RFC 3339 timestamps with nanoseconds).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import shutil
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from kubernetes import client
from kubernetes.client.rest import ApiException

logger = logging.getLogger(__name__)

NODE_NAME = "sim-node"
REAL_NODE_LABEL = "occ.dev/node"  # a Pod selecting this label is for the real node, not this one
MERGE_PATCH = "application/merge-patch+json"
READY, UNREADY, EXITED = "ready", "unready", "exited"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stamp(nanos: int) -> str:
    """RFC 3339 with nanoseconds, trailing zeros trimmed (Go's RFC3339Nano, as the kubelet writes)."""
    seconds, rest = divmod(nanos, 1_000_000_000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    fraction = f"{rest:09d}".rstrip("0")
    return f"{text}.{fraction}Z" if fraction else f"{text}Z"


def _parse_stamp(text: str) -> int:
    whole, _, fraction = text.rstrip("Z").partition(".")
    seconds = int(datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp())
    return seconds * 1_000_000_000 + int((fraction or "0").ljust(9, "0")[:9])


class KubeletLogServer:
    """The kubelet's ``/containerLogs/<namespace>/<pod>/<container>`` on loopback HTTPS (a
    self-signed certificate: the API server verifies no kubelet certificate unless it is given
    ``--kubelet-certificate-authority``). ``requests`` records each query the API server sent."""

    def __init__(self) -> None:
        self._logs: dict[tuple[str, str, str], list[tuple[int, bytes]]] = {}
        self._lock = threading.Lock()
        self._clock = 0
        self.requests: list[dict[str, list[str]]] = []
        self._server: ThreadingHTTPServer | None = None
        self._folder = Path(tempfile.mkdtemp(prefix="occ-kubelet-"))

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def write(self, namespace: str, pod: str, container: str, lines: list[str]) -> None:
        with self._lock:
            entries = self._logs.setdefault((namespace, pod, container), [])
            for line in lines:
                # Strictly increasing stamps (a real log may repeat one; the driver copes with both).
                self._clock = max(self._clock + 1, time.time_ns())
                entries.append((self._clock, line.encode() + b"\n"))

    def answer(self, namespace: str, pod: str, container: str, query: dict[str, list[str]]) -> bytes | None:
        with self._lock:
            self.requests.append(query)
            entries = list(self._logs.get((namespace, pod, container), ()))
        if "tailLines" in query:
            tail = int(query["tailLines"][0])
            entries = entries[-tail:] if tail > 0 else []
        since = None
        if "sinceTime" in query:
            since = _parse_stamp(query["sinceTime"][0])
        elif "sinceSeconds" in query:
            since = time.time_ns() - int(query["sinceSeconds"][0]) * 1_000_000_000
        if since is not None:
            entries = [entry for entry in entries if entry[0] >= since]
        stamps = query.get("timestamps", ["false"])[0] == "true"
        data = b"".join((_stamp(nanos).encode() + b" " if stamps else b"") + text for nanos, text in entries)
        if "limitBytes" in query:
            data = data[:int(query["limitBytes"][0])]
        return data

    def start(self) -> KubeletLogServer:
        cert, key = self._folder / "kubelet.crt", self._folder / "kubelet.key"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                        "/CN=sim-node", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                parts = [unquote(part) for part in url.path.split("/") if part]
                body = None
                if len(parts) == 4 and parts[0] == "containerLogs":
                    body = stand_in.answer(parts[1], parts[2], parts[3], parse_qs(url.query))
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, name="kubelet-logs", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        shutil.rmtree(self._folder, ignore_errors=True)


class SimulatedKubelet:
    def __init__(self, api_client: client.ApiClient, *, interval: float = 0.2) -> None:
        self.core = client.CoreV1Api(api_client)
        self.logs = KubeletLogServer()
        self.interval = interval
        self._rules: list[tuple[dict[str, str], str, int]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ips = itertools.count(2)
        self._assigned: dict[str, str] = {}
        self._addresses: list[tuple[dict[str, str], str]] = []
        self._left: list[dict[str, str]] = []  # Pods for the real node (``leave``)
        self._init_results: list[tuple[dict[str, str], str, int, str]] = []
        self.errors: list[str] = []

    # --- what tests ask for --------------------------------------------------------------------
    def hold_unready(self, selector: Mapping[str, str]) -> None:
        """Pods matching ``selector`` run but never become Ready."""
        with self._lock:
            self._rules.append((dict(selector), UNREADY, 0))

    def exit_container(self, selector: Mapping[str, str], *, exit_code: int = 1) -> None:
        """The container of Pods matching ``selector`` exits (and keeps crashing)."""
        with self._lock:
            self._rules.append((dict(selector), EXITED, exit_code))

    def assign_address(self, selector: Mapping[str, str], ip: str) -> None:
        """Pods matching ``selector`` report ``ip`` as their address (their Endpoints follow)."""
        with self._lock:
            self._addresses.append((dict(selector), ip))

    def finish_init(self, selector: Mapping[str, str], container: str, *, exit_code: int = 0,
                    message: str = "") -> None:
        """The init container ``container`` of Pods matching ``selector`` terminates with
        ``exit_code`` and the termination ``message`` (what a real kubelet reads from the file at
        its terminationMessagePath). Non-zero: the Pod stays initializing, never Ready. Without
        such a rule an init container terminates with 0 and no message (nothing runs here)."""
        with self._lock:
            self._init_results.append((dict(selector), container, exit_code, message))

    def leave(self, selector: Mapping[str, str]) -> None:
        """Pods matching ``selector`` are not this kubelet's (not bound, not reported): a test
        binds them to the real node (tests/kubecluster/node.py) itself. Until ``take_back``."""
        with self._lock:
            self._left.append(dict(selector))

    def take_back(self, selector: Mapping[str, str]) -> None:
        with self._lock:
            self._left = [left for left in self._left if left != dict(selector)]

    def release(self, selector: Mapping[str, str] | None = None) -> None:
        """Forget the rules for ``selector`` (all rules and addresses without one): those Pods
        become Ready."""
        with self._lock:
            self._rules = [] if selector is None else [r for r in self._rules if r[0] != dict(selector)]
            if selector is None:
                self._addresses = []
                self._init_results = []

    def write_log(self, namespace: str, pod: str, container: str, lines: list[str]) -> None:
        """The container printed ``lines`` (served by the kubelet log stand-in)."""
        self.logs.write(namespace, pod, container, lines)

    def _behaviour(self, labels: Mapping[str, str]) -> tuple[str, int]:
        with self._lock:
            for selector, behaviour, code in reversed(self._rules):
                if all(labels.get(key) == value for key, value in selector.items()):
                    return behaviour, code
        return READY, 0

    # --- the loop ------------------------------------------------------------------------------
    def start(self) -> None:
        self.logs.start()
        self._register_node()
        self._thread = threading.Thread(target=self._run, name="simulated-kubelet", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.logs.stop()

    def _register_node(self) -> None:
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": NODE_NAME, "labels": {"kubernetes.io/hostname": NODE_NAME}}}
        with contextlib.suppress(ApiException):
            self.core.create_node(node)
        status = {"status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "lastHeartbeatTime": _now(), "lastTransitionTime": _now()}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "500"},
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"},
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.logs.port}},
        }}
        self.core.patch_node_status(NODE_NAME, status, _content_type=MERGE_PATCH)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync_once()
            except Exception as exc:  # keep serving; a test that depends on it will time out and say so
                self.errors.append(repr(exc))
                logger.warning("simulated kubelet: %r", exc)
            self._stop.wait(self.interval)

    def sync_once(self) -> None:
        pods = self.core.list_pod_for_all_namespaces(_request_timeout=10).items
        for pod in pods:
            try:
                self._sync_pod(pod)
            except ApiException as exc:
                # Gone, changed meanwhile, or in a namespace being deleted (no new bindings there).
                if exc.status not in (403, 404, 409):
                    raise

    def _sync_pod(self, pod: Any) -> None:
        meta = pod.metadata
        if not self._mine(pod):
            return
        if meta.deletion_timestamp is not None:
            self.core.delete_namespaced_pod(meta.name, meta.namespace, grace_period_seconds=0,
                                            body=client.V1DeleteOptions(
                                                grace_period_seconds=0,
                                                preconditions=client.V1Preconditions(uid=meta.uid)),
                                            _preload_content=False)
            return
        if not pod.spec.node_name:
            binding = {"apiVersion": "v1", "kind": "Binding",
                       "metadata": {"name": meta.name, "namespace": meta.namespace},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": NODE_NAME}}
            # 1.20 answers a Status, which the current client cannot deserialize as a Binding.
            self.core.create_namespaced_pod_binding(meta.name, meta.namespace, binding, _preload_content=False)
            return
        behaviour, exit_code = self._behaviour(meta.labels or {})
        desired = self._status(pod, behaviour, exit_code)
        if not self._differs(pod, desired):
            return
        self.core.patch_namespaced_pod_status(meta.name, meta.namespace, {"status": desired},
                                             _content_type=MERGE_PATCH)

    def _mine(self, pod: Any) -> bool:
        """A Pod bound to this Node, or unbound and neither asking for another one nor left to the
        real node (``leave``; the real node of the ``kubelet`` tests, tests/kubecluster/node.py,
        runs the Pods that name or select it)."""
        if pod.spec.node_name:
            return bool(pod.spec.node_name == NODE_NAME)
        labels = pod.metadata.labels or {}
        with self._lock:
            if any(all(labels.get(key) == value for key, value in left.items()) for left in self._left):
                return False
        return not (pod.spec.node_selector or {}).get(REAL_NODE_LABEL)

    def _init_result(self, labels: Mapping[str, str], container: str) -> tuple[int, str]:
        with self._lock:
            for selector, name, code, message in reversed(self._init_results):
                if name == container and all(labels.get(key) == value for key, value in selector.items()):
                    return code, message
        return 0, ""

    def _ip(self, pod: Any) -> str:
        labels = pod.metadata.labels or {}
        with self._lock:
            for selector, ip in reversed(self._addresses):
                if all(labels.get(key) == value for key, value in selector.items()):
                    return ip
        uid = pod.metadata.uid
        if uid not in self._assigned:
            n = next(self._ips)
            self._assigned[uid] = f"10.244.{n // 250}.{n % 250 + 2}"
        return self._assigned[uid]

    def _status(self, pod: Any, behaviour: str, exit_code: int) -> dict[str, Any]:
        now = _now()
        init_statuses = []
        for container in pod.spec.init_containers or []:
            code, message = self._init_result(pod.metadata.labels or {}, container.name)
            terminated: dict[str, Any] = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                          "startedAt": now, "finishedAt": now}
            if message:
                terminated["message"] = message
            init_statuses.append({"name": container.name, "image": container.image,
                                  "imageID": f"sim://{container.image}", "ready": code == 0,
                                  "restartCount": 0, "state": {"terminated": terminated}})
        initialized = all(status["state"]["terminated"]["exitCode"] == 0 for status in init_statuses)
        if not initialized:
            behaviour = UNREADY
        ready = behaviour == READY
        flag = "True" if ready else "False"
        containers = []
        previous = {status.name: status for status in (pod.status.container_statuses or [])}
        for container in pod.spec.containers:
            entry: dict[str, Any] = {"name": container.name, "image": container.image,
                                     "imageID": f"sim://{container.image}", "ready": ready,
                                     "restartCount": 0, "started": behaviour != EXITED}
            if behaviour == EXITED:
                old = previous.get(container.name)
                entry["restartCount"] = max(1, old.restart_count if old else 0)
                entry["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
                entry["lastState"] = {"terminated": {"exitCode": exit_code, "reason": "Error",
                                                     "startedAt": now, "finishedAt": now}}
            elif not initialized:
                entry["started"] = False
                entry["state"] = {"waiting": {"reason": "PodInitializing"}}
            else:
                entry["state"] = {"running": {"startedAt": now}}
            containers.append(entry)
        ip = self._ip(pod)
        status = {
            "phase": "Running" if initialized else "Pending", "hostIP": "127.0.0.1", "podIP": ip,
            "podIPs": [{"ip": ip}], "startTime": now,
            "conditions": [
                {"type": "Initialized", "status": "True" if initialized else "False", "lastTransitionTime": now},
                {"type": "Ready", "status": flag, "lastTransitionTime": now},
                {"type": "ContainersReady", "status": flag, "lastTransitionTime": now},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            ],
            "containerStatuses": containers,
        }
        if init_statuses:
            status["initContainerStatuses"] = init_statuses
        return status

    @staticmethod
    def _differs(pod: Any, desired: dict[str, Any]) -> bool:
        status = pod.status
        if status.phase != desired["phase"] or status.pod_ip != desired["podIP"]:
            return True
        conditions = {c.type: c.status for c in (status.conditions or [])}
        if any(conditions.get(c["type"]) != c["status"] for c in desired["conditions"]):
            return True
        observed = {c.name: (c.ready, c.state.waiting is not None if c.state else None)
                    for c in (status.container_statuses or [])}
        wanted = {c["name"]: (c["ready"], "waiting" in c["state"]) for c in desired["containerStatuses"]}
        if observed != wanted:
            return True
        terminated = {c.name: (c.state.terminated.exit_code, c.state.terminated.message or "")
                      for c in (status.init_container_statuses or []) if c.state and c.state.terminated}
        wanted_init = {c["name"]: (c["state"]["terminated"]["exitCode"], c["state"]["terminated"].get("message", ""))
                       for c in desired.get("initContainerStatuses", [])}
        return terminated != wanted_init
