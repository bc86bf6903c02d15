"""A simulated kubelet: the test cluster has no kubelet and no scheduler, so this thread does
what they would for the API server's view of Pods.

It registers one Node, binds every unbound Pod to it (``pods/binding``), reports each bound Pod
Running and Ready (``pods/status``), and confirms deletions (a Pod with a deletion timestamp is
removed with grace 0, as a kubelet does once its containers stopped). Tests can hold Pods
un-Ready or make their container exit, chosen by label selector:

    kubelet.hold_unready({"openclaw.dev/revision": revision_id})
    kubelet.exit_container({"openclaw.dev/agent": agent_id}, exit_code=1)

It polls the API server (one list of all Pods every ``interval``); no container ever runs.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

logger = logging.getLogger(__name__)

NODE_NAME = "sim-node"
MERGE_PATCH = "application/merge-patch+json"
READY, UNREADY, EXITED = "ready", "unready", "exited"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SimulatedKubelet:
    def __init__(self, api_client: client.ApiClient, *, interval: float = 0.2) -> None:
        self.core = client.CoreV1Api(api_client)
        self.interval = interval
        self._rules: list[tuple[dict[str, str], str, int]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ips = itertools.count(2)
        self._assigned: dict[str, str] = {}
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

    def release(self, selector: Mapping[str, str] | None = None) -> None:
        """Forget the rules for ``selector`` (all rules without one): those Pods become Ready."""
        with self._lock:
            self._rules = [] if selector is None else [r for r in self._rules if r[0] != dict(selector)]

    def _behaviour(self, labels: Mapping[str, str]) -> tuple[str, int]:
        with self._lock:
            for selector, behaviour, code in reversed(self._rules):
                if all(labels.get(key) == value for key, value in selector.items()):
                    return behaviour, code
        return READY, 0

    # --- the loop ------------------------------------------------------------------------------
    def start(self) -> None:
        self._register_node()
        self._thread = threading.Thread(target=self._run, name="simulated-kubelet", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

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

    def _ip(self, uid: str) -> str:
        if uid not in self._assigned:
            n = next(self._ips)
            self._assigned[uid] = f"10.244.{n // 250}.{n % 250 + 2}"
        return self._assigned[uid]

    def _status(self, pod: Any, behaviour: str, exit_code: int) -> dict[str, Any]:
        ready = behaviour == READY
        now = _now()
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
            else:
                entry["state"] = {"running": {"startedAt": now}}
            containers.append(entry)
        ip = self._ip(pod.metadata.uid)
        return {
            "phase": "Running", "hostIP": "127.0.0.1", "podIP": ip, "podIPs": [{"ip": ip}],
            "startTime": now,
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                {"type": "Ready", "status": flag, "lastTransitionTime": now},
                {"type": "ContainersReady", "status": flag, "lastTransitionTime": now},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            ],
            "containerStatuses": containers,
        }

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
        return observed != wanted
