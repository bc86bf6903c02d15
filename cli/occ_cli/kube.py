"""``occ tui`` on the ``kubernetes`` compute driver: find the gateway Pod, exec the TUI in it.

Names and labels are the Kubernetes ComputeDriver's (reference A3): the tenant namespace is
``oce-<sha256(namespaceId)[:15]>`` unless the Namespace adopted an ``existingNamespace``; the
gateway Pod carries ``app.kubernetes.io/managed-by=openclaw-enterprise``,
``openclaw.dev/workload-role=gateway``, ``openclaw.dev/namespace=<namespaceId>`` and
``openclaw.dev/agent=<agentId>``, and mounts the revision's ConfigMap
``gateway-<sha256(agentId)[:12]>-rev-<sha256(revisionId)[:12]>``. Labels alone cannot tell
the revision after a cutover, so the Pod must mount exactly that ConfigMap, run, be Ready and
not be terminating.

The TUI runs in the gateway container as the seed's operator runs it:
``env -u OPENAI_API_KEY OPENCLAW_STATE_DIR=/tmp/occ-tui-client node /app/openclaw.mjs tui``
(the model key stays with the gateway; the client keeps its state apart from the gateway's),
with a TTY through the exec API (``kubernetes.stream``). The local terminal is put in raw mode,
so Ctrl+D reaches the TUI, which exits; the gateway process is not the exec's and keeps serving.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import shutil
import signal
import sys
import termios
import time
import tty
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.stream import stream
from kubernetes.stream.ws_client import RESIZE_CHANNEL, STDERR_CHANNEL, STDOUT_CHANNEL

from occ_cli.client import CliError, Exit
from occ_cli.tui import Target, TuiOptions, Where

MANAGED_BY = "openclaw-enterprise"
CONTAINER = "gateway"
TUI_ENTRY = ["env", "-u", "OPENAI_API_KEY", "OPENCLAW_STATE_DIR=/tmp/occ-tui-client", "node", "/app/openclaw.mjs"]
POD_WAIT_SECONDS = 180.0
POLL_SECONDS = 2.0
REQUEST_TIMEOUT_SECONDS = 15


def short_hash(value: str, length: int = 12) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:length]


def tenant_namespace(namespace_id: str) -> str:
    return "oce-" + short_hash(namespace_id, 15)


def revision_config_map(agent_id: str, revision_id: str) -> str:
    return f"gateway-{short_hash(agent_id)}-rev-{short_hash(revision_id)}"


def gateway_selector(namespace_id: str, agent_id: str) -> str:
    return ",".join([f"app.kubernetes.io/managed-by={MANAGED_BY}", "openclaw.dev/workload-role=gateway",
                     f"openclaw.dev/namespace={namespace_id}", f"openclaw.dev/agent={agent_id}"])


def core_api(*, kubeconfig: str | None, context: str | None) -> k8s.CoreV1Api:
    """A client of its own (never the global default): the kubeconfig given, else in-cluster,
    else ``~/.kube/config``."""
    configuration = k8s.Configuration()
    default = Path("~/.kube/config").expanduser()
    try:
        if kubeconfig:
            k8s_config.load_kube_config(config_file=kubeconfig.split(os.pathsep)[0], context=context,
                                        client_configuration=configuration, persist_config=False)
        elif os.environ.get("KUBERNETES_SERVICE_HOST") and not context:
            k8s_config.load_incluster_config(client_configuration=configuration)
        elif default.is_file():
            k8s_config.load_kube_config(config_file=str(default), context=context,
                                        client_configuration=configuration, persist_config=False)
        else:
            raise CliError("No Kubernetes credentials: pass --kubeconfig (or set KUBECONFIG).", Exit.USAGE,
                           code="NO_KUBECONFIG")
    except k8s_config.ConfigException as exc:
        raise CliError(f"The kubeconfig could not be used: {exc}", Exit.USAGE, code="INVALID_KUBECONFIG") from None
    return k8s.CoreV1Api(k8s.ApiClient(configuration))


def _ready(pod: Any) -> bool:
    conditions = (pod.status.conditions if pod.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def mounts_config_map(pod: Any, name: str) -> bool:
    volumes = (pod.spec.volumes if pod.spec else None) or []
    return any(v.config_map is not None and v.config_map.name == name for v in volumes)


def serving_pods(pods: list[Any], *, agent_id: str, revision_id: str) -> list[Any]:
    """The Pods that serve exactly this revision: running, Ready, not terminating, mounting its ConfigMap."""
    config_map = revision_config_map(agent_id, revision_id)
    return [pod for pod in pods
            if pod.metadata.deletion_timestamp is None and pod.status is not None and pod.status.phase == "Running"
            and _ready(pod) and mounts_config_map(pod, config_map)
            and any(c.name == CONTAINER for c in (pod.spec.containers or []))]


def await_gateway_pod(api: k8s.CoreV1Api, tenant: str, *, namespace_id: str, agent_id: str, revision_id: str,
                      timeout: float = POD_WAIT_SECONDS, sleep: Callable[[float], Any] = time.sleep) -> str:
    """The name of the one Pod serving the revision (waiting while a Recreate rollout settles)."""
    deadline = time.monotonic() + timeout
    selector = gateway_selector(namespace_id, agent_id)
    while True:
        try:
            pods = api.list_namespaced_pod(tenant, label_selector=selector,
                                           _request_timeout=REQUEST_TIMEOUT_SECONDS).items
        except k8s.ApiException as exc:
            raise _api_error(exc, f"listing the gateway Pods in {tenant}") from None
        found = serving_pods(pods, agent_id=agent_id, revision_id=revision_id)
        if len(found) == 1:
            return str(found[0].metadata.name)
        if time.monotonic() >= deadline:
            config_map = revision_config_map(agent_id, revision_id)
            raise CliError(f"No single Ready gateway Pod in {tenant} mounts {config_map} "
                           f"({len(pods)} gateway Pods, {len(found)} serving it).", Exit.UNAVAILABLE,
                           code="GATEWAY_POD_NOT_READY")
        sleep(POLL_SECONDS)


def _api_error(exc: Any, doing: str) -> CliError:
    status = int(getattr(exc, "status", 0) or 0)
    exit_code = {401: Exit.AUTH, 403: Exit.AUTH, 404: Exit.NOT_FOUND}.get(status, Exit.UNAVAILABLE)
    return CliError(f"Kubernetes answered {status or 'nothing'} {getattr(exc, 'reason', '')} {doing}.".strip(),
                    exit_code, code="KUBERNETES_API_ERROR")


@contextlib.contextmanager
def raw_terminal(fd: int) -> Iterator[bool]:
    """Raw mode while attached (so Ctrl+D and Ctrl+C reach the remote TUI); restored after."""
    if not os.isatty(fd):
        yield False
        return
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        yield True
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _terminal_size(fd: int) -> str:
    """The size of the terminal being attached (the remote TUI lays itself out for it)."""
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        size = shutil.get_terminal_size()
    return json.dumps({"Width": size.columns, "Height": size.lines})


def exec_tui(api: k8s.CoreV1Api, tenant: str, pod: str, tui_argv: list[str]) -> int:
    """Run the TUI in the Pod's gateway container with a TTY, wired to this terminal; its exit status."""
    try:
        ws = stream(api.connect_get_namespaced_pod_exec, pod, tenant, container=CONTAINER,
                    command=[*TUI_ENTRY, *tui_argv], stdin=True, stdout=True, stderr=True, tty=True,
                    _preload_content=False, binary=True)
    except k8s.ApiException as exc:
        raise _api_error(exc, f"opening an exec session in {tenant}/{pod}") from None
    stdin_fd, out = sys.stdin.fileno(), sys.stdout.buffer
    resized = False

    def on_resize(_signum: int, _frame: Any) -> None:
        nonlocal resized
        resized = True

    previous = signal.signal(signal.SIGWINCH, on_resize)
    try:
        with raw_terminal(stdin_fd):
            ws.write_channel(RESIZE_CHANNEL, _terminal_size(stdin_fd))
            stdin_open = True
            while ws.is_open():
                ws.update(timeout=0.05)
                for channel in (STDOUT_CHANNEL, STDERR_CHANNEL):
                    if ws.peek_channel(channel):
                        out.write(_bytes(ws.read_channel(channel)))
                        out.flush()
                if resized:
                    resized = False
                    ws.write_channel(RESIZE_CHANNEL, _terminal_size(stdin_fd))
                if stdin_open and select.select([stdin_fd], [], [], 0)[0]:
                    data = os.read(stdin_fd, 4096)
                    if data:
                        ws.write_stdin(data)
                    else:
                        stdin_open = False  # stdin closed (not a terminal): let the TUI finish
    finally:
        signal.signal(signal.SIGWINCH, previous)
        ws.close()
    code = ws.returncode
    return int(code) if code is not None else 0


def _bytes(data: str | bytes) -> bytes:
    return data if isinstance(data, bytes) else data.encode("utf-8", "replace")


def attach(target: Target, options: TuiOptions, where: Where) -> int:
    """The TUI in the Ready gateway Pod serving the revision, in the Namespace's tenant namespace."""
    api = core_api(kubeconfig=where.kubeconfig, context=where.context)
    namespace = where.namespace
    tenant = where.kube_namespace or namespace.get("existingNamespace") or tenant_namespace(namespace["id"])
    pod = await_gateway_pod(api, tenant, namespace_id=namespace["id"], agent_id=target.agent_id,
                            revision_id=target.revision_id)
    return exec_tui(api, tenant, pod, options.argv())
