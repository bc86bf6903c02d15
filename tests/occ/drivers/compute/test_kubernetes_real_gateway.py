"""A real OpenClaw gateway Pod, written by the Kubernetes ComputeDriver, on the real kubelet
(tests/kubecluster/node.py): the gateway image from runtime/ (``devtools.images.gateway_image``)
imported into the node's containerd, the driver's Deployment's Pod bound to the real node, its
state claim bound to a ``local`` PersistentVolume there. The Pod passes its real readiness probe
(the exec of ``node`` inside the container, ``manifests.readiness_probe``), chat through the
API server's service proxy answers from the loopback fake model (listening on the Pod bridge's
address: the only address off the Pod it has a route to), and a gateway killed inside its Pod is
restarted by the kubelet and becomes Ready again.

The two bugs of issue 25 fail this test on the manifests before their fix (ed7f21c):

- the state volume mounted in pieces below ``/home/node/.openclaw`` (``subPath`` mounts): the
  container runtime creates ``/home/node/.openclaw`` owned by root, the gateway (uid 1000) exits
  with ``EPERM chmod '/home/node/.openclaw/state'`` and the Pod never becomes Ready (tried: with
  those mounts put back the wait for Ready times out, the container's state and log in the
  message). Here the state folder is also checked to be the volume's own root, owned by the
  Pod's fsGroup and written by the gateway, and the container not to have restarted before the
  test kills it;
- the readiness probe an ``httpGet`` from the kubelet: the kubelet's side of the Pod network (the
  bridge's address) is inside ``gateway.trustedProxies``' 10.0.0.0/8, the gateway asks it to name
  its client, ``/readyz`` answers 403 and the Pod never becomes Ready. Here the same request from
  the bridge's address is made and its 403 asserted (what an ``httpGet`` probe gets), beside the
  Pod Ready through the exec probe (and ``http_get`` asserted absent).

A third bug this test found: OCC's own chat was refused by the real gateway. The service proxy
puts the caller in ``X-Forwarded-For``, and a caller on loopback (this test's OCC) or inside
``trustedProxies`` (a web Pod in 10.0.0.0/8) leaves the gateway no client to attribute the
request to (403 ``proxy_attribution_required``, asserted here for a bare request). The driver's
chat now names one in ``X-Real-IP`` (``compute.attributed_client``): the person's address, or
OCC's own (``OCC_KUBERNETES_CLIENT_ADDRESS``) when the person's is loopback; both are chatted
through here, and with neither the driver says what is missing.

It runs alone (``-m kubelet``); what it adds to the suite is printed (``timings``).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from kubernetes import client
from kubernetes.client.rest import ApiException

from devtools import images
from occ.documents import PluginWarning, RevisionSpec
from occ.drivers.compute import local_chat
from occ.drivers.compute.base import CHAT_GATEWAY_NOT_RUNNING, ChatMessage, ComputeError, RevisionRef
from occ.drivers.kube import manifests, names
from occ.ids import IdPrefix, new_id
from occ.openclaw.render import TRUSTED_PROXY_IDENTITY, TRUSTED_PROXY_USER_HEADER
from tests.conftest import service_missing
from tests.fakes.fake_openai import REPLY, FakeOpenAI
from tests.kubecluster import node as node_module
from tests.kubecluster.fixtures import wait_for
from tests.kubecluster.support import kube_driver, ready_namespace, sharing_connection
from tests.occ.drivers.compute.local_support import context, new_agent, revision_ref, stored_secret
from tests.occ.drivers.compute.test_kubernetes import PLUGIN_SELECTIONS, plugin_catalog  # noqa: F401 - a fixture
from tests.occ.drivers.compute.test_local_gateway import fake_document
from tests.ports import free_port

pytestmark = [pytest.mark.kubernetes, pytest.mark.kubelet]

READY_WITHIN_SECONDS = 300.0  # a gateway reaches /readyz in ~20 s on 2 idle cores; the suite loads them
TURNS = [ChatMessage(role="user", content="hello from a real Pod")]
BRIDGE_ADDRESS = str(next(ipaddress.ip_network(node_module.POD_SUBNET).hosts()))  # the CNI bridge (isGateway)


@pytest.fixture
def gateway_image(real_node) -> str:
    """The gateway image built (or found in the cache) and imported into the node; its reference."""
    try:
        image = images.gateway_image(Path(settings.OCC_RUNTIME_DIR))
    except images.ImageUnavailable as exc:
        service_missing(str(exc))
    real_node.import_image(images.build(image, node_module.IMAGE_CACHE))
    return image.reference()


def _pod(kube, namespace: str, agent_id: str) -> client.V1Pod | None:
    pods = kube.core.list_namespaced_pod(namespace, label_selector=f"{names.AGENT_LABEL}={agent_id}").items
    live = [pod for pod in pods if pod.metadata.deletion_timestamp is None]
    return live[0] if len(live) == 1 else None


def _ready(pod: client.V1Pod | None) -> bool:
    return pod is not None and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def _diagnosis(kube, namespace: str, agent_id: str) -> str:
    """Why the gateway Pod is not Ready: its container's state and the end of its log."""
    pod = _pod(kube, namespace, agent_id)
    if pod is None:
        return "no gateway Pod"
    lines = [f"{pod.metadata.name} {pod.status.phase} on {pod.spec.node_name}"]
    for status in pod.status.container_statuses or []:
        lines.append(f"{status.name}: restarts {status.restart_count}, state {status.state}, "
                     f"last {status.last_state}")
        with contextlib.suppress(ApiException):
            log = kube.core.read_namespaced_pod_log(pod.metadata.name, namespace, container=status.name,
                                                    tail_lines=20, previous=status.restart_count > 0)
            lines.append(log)
    return "\n".join(lines)


def _exec(kube, real_node, namespace: str, pod: str, *command: str) -> str:
    kubeconfig = kube.cluster.kubeconfig(real_node.root / "admin.kubeconfig", token=kube.cluster.admin_token)
    result = subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", "-n", namespace, "exec", pod, "-c", "gateway",
                             "--", *command], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


PERSON_ADDRESS = "192.0.2.10"  # a person's address (TEST-NET-1): only ever a header's value here
TUI_MESSAGE = "hello from the tui in the Pod"
# ``occ tui``'s Kubernetes attacher (``occ_cli.kube.attach``: the Pod found by labels and mounted
# ConfigMap, then ``node /app/openclaw.mjs tui`` through the exec API with a TTY), as the CLI runs
# it once OCC has named the Namespace, Agent and revision.
ATTACH = r"""
import sys
from occ_cli import kube
from occ_cli.tui import Target, TuiOptions, Where
kubeconfig, namespace_id, agent_id, revision_id, message = sys.argv[1:6]
target = Target(namespace_id=namespace_id, agent={"id": agent_id}, revision={"id": revision_id})
sys.exit(kube.attach(target, TuiOptions(session="pod", message=message),
                     Where(namespace={"id": namespace_id}, kubeconfig=kubeconfig)))
"""
TUI_SECONDS = 180.0


def _proxied_chat(web, kube_namespace: str, agent_id: str, *, client_address: str | None) -> tuple[int, str]:
    """A chat through the gateway Service's service proxy route on ``web``'s connection, as the
    driver's ``chat`` sent it before it named a client, plus ``X-Real-IP: client_address`` when
    given. (status, the reply or the refusal's body)."""
    headers = {TRUSTED_PROXY_USER_HEADER: TRUSTED_PROXY_IDENTITY}
    if client_address is not None:
        headers["X-Real-IP"] = client_address
    with web.connection.service_proxy_post(kube_namespace, names.gateway_name(agent_id), "http",
                                           local_chat.CHAT_PATH, body=local_chat.chat_body(TURNS), headers=headers,
                                           read_timeout=120) as (status, chunks):
        if status != 200:
            return status, b"".join(chunks).decode(errors="replace")
        return status, "".join(local_chat.reply_deltas(local_chat.sse_events(chunks)))


def _tui(kubeconfig: Path, namespace_id: str, agent_id: str, revision_id: str) -> tuple[bytes, int | None]:
    """``occ tui``'s attach on a pseudo-terminal of its own: what its terminal showed once the
    fake model's reply appeared (or the wait ran out), then Ctrl+D; (the terminal, exit status)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen([sys.executable, "-c", ATTACH, str(kubeconfig), namespace_id, agent_id, revision_id,
                                TUI_MESSAGE], stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                               env={**os.environ, "TERM": "xterm-256color"}, close_fds=True)
    os.close(slave)
    seen = bytearray()

    def read(wanted: bytes, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while wanted not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 1.0)[0]:
                try:
                    seen.extend(os.read(master, 65536))
                except OSError:
                    return

    try:
        read(REPLY.encode(), TUI_SECONDS)
        for _attempt in range(3):  # again if a busy machine swallowed the first one
            os.write(master, b"\x04")
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=20)
                break
        read(b"\0", 1.0)
        return bytes(seen), process.poll()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def _labelled(kube, namespace: str, label: str) -> list[tuple[str, list]]:
    """Each kind the driver writes for an Agent and what of it carries the Agent's label."""
    core, apps = kube.core, client.AppsV1Api(kube.core.api_client)
    networking = client.NetworkingV1Api(kube.core.api_client)
    listings = {
        "Deployment": apps.list_namespaced_deployment, "Service": core.list_namespaced_service,
        "ConfigMap": core.list_namespaced_config_map, "Secret": core.list_namespaced_secret,
        "ServiceAccount": core.list_namespaced_service_account,
        "PersistentVolumeClaim": core.list_namespaced_persistent_volume_claim,
        "NetworkPolicy": networking.list_namespaced_network_policy,
    }
    return [(kind, list_of(namespace, label_selector=label).items) for kind, list_of in listings.items()]


def _memory_bytes(kube, real_node, namespace: str, pod: str) -> int:
    """The gateway container's memory as its cgroup counts it (cgroup v1, else v2)."""
    script = ("const fs=require('fs');for(const f of ['/sys/fs/cgroup/memory/memory.usage_in_bytes',"
              "'/sys/fs/cgroup/memory.current']){try{console.log(fs.readFileSync(f,'utf8').trim());break}catch(e){}}")
    return int(_exec(kube, real_node, namespace, pod, "node", "-e", script).strip() or 0)


@pytest.mark.usefixtures("plugin_catalog")  # the catalog with the npm plugin "stubby" (test_kubernetes)
def test_a_driver_written_gateway_pod_becomes_ready_answers_and_is_restarted(kube, real_node, gateway_image,
                                                                             memory_secrets):
    timings: dict[str, float] = {}
    model_port = free_port()
    document = fake_document(f"http://{BRIDGE_ADDRESS}:{model_port}/v1")
    model: FakeOpenAI | None = None
    with kube_driver(kube.worker_direct_kubeconfig, image=gateway_image, ready_timeout=READY_WITHIN_SECONDS,
                     prepare_wait=0) as worker, kube_driver(kube.api_kubeconfig, image=gateway_image) as web:
        namespace = ready_namespace(worker)
        kube_namespace = names.tenant_namespace(namespace.id)
        agent = new_agent(namespace.id)
        revision = revision_ref(agent, 1, document)
        ctx = context(agent, stored_secret("sk-real-pod-model-key"))
        worker.provision_runtime_credentials(agent)
        selector = {names.AGENT_LABEL: agent.id}
        label = f"{names.AGENT_LABEL}={agent.id}"
        volume = f"gateway-state-{agent.id.lower()[-12:]}"
        real_node.local_volume(kube.core, volume, claim_namespace=kube_namespace,
                               claim_name=names.state_claim_name(agent.id))
        kube.kubelet.leave(selector)
        try:
            started = time.monotonic()

            def prepared() -> bool:
                real_node.bind_pending(kube.core, kube_namespace, f"{names.AGENT_LABEL}={agent.id}")
                return worker.prepare_revision(revision, ctx).ready

            try:
                wait_for(prepared, timeout=READY_WITHIN_SECONDS, interval=1,
                         what="the gateway Pod Ready on the real node")
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{_diagnosis(kube, kube_namespace, agent.id)}") from None
            timings["deploy accepted -> Pod Ready (prepare)"] = time.monotonic() - started
            assert worker.activate_revision(revision, ctx).ready
            timings["deploy accepted -> revision active"] = time.monotonic() - started

            pod = _pod(kube, kube_namespace, agent.id)
            assert pod is not None
            assert _ready(pod)
            assert pod.spec.node_name == node_module.NODE_NAME
            (status,) = pod.status.container_statuses
            assert status.ready
            assert status.state.running is not None
            assert status.restart_count == 0, "the gateway exited before it became Ready (EPERM on its state?)"
            assert gateway_image in status.image

            # Bug 1: the state folder is the volume's own root, owned by the Pod's fsGroup, written
            # by the gateway (uid 1000), not a folder the container runtime made for sub-mounts.
            state = json.loads(_exec(kube, real_node, kube_namespace, pod.metadata.name, "node", "-e",
                                     "const fs=require('fs'),s=fs.statSync(process.argv[1]);"
                                     "console.log(JSON.stringify({gid:s.gid,uid:process.getuid(),"
                                     "entries:fs.readdirSync(process.argv[1])}))", manifests.STATE_DIR))
            assert state["uid"] == 1000
            assert state["gid"] == 1000, state
            assert state["entries"], f"the gateway wrote nothing under {manifests.STATE_DIR}: {state}"
            assert (real_node.root / "volumes" / volume).stat().st_gid == 1000  # the local volume itself

            # Bug 2: an httpGet probe from the kubelet's side of the Pod network (the bridge's
            # address, inside trustedProxies 10.0.0.0/8) is refused; the exec probe made it Ready.
            assert pod.spec.containers[0].readiness_probe.http_get is None
            with httpx.Client(transport=httpx.HTTPTransport(local_address=BRIDGE_ADDRESS), timeout=10) as probe:
                refused = probe.get(f"http://{pod.status.pod_ip}:{worker.port}/readyz")
            assert refused.status_code == 403, refused.text

            # OCC's chat through the Service (the API server's service proxy, the web identity) for a
            # person at a remote address, answered by the fake model: the gateway reaches it at the
            # bridge's address, its only way off the Pod.
            model = FakeOpenAI(port=model_port, host=BRIDGE_ADDRESS).start()
            chat_started = time.monotonic()
            answer = "".join(web.chat(namespace_id=namespace.id, agent_id=agent.id, revision_id=revision.id,
                                      gateway_password=None, timeout=120, messages=TURNS,
                                      client_address=PERSON_ADDRESS))
            timings["chat through the service proxy"] = time.monotonic() - chat_started
            assert answer == REPLY
            assert [request["path"] for request in model.requests] == ["/v1/chat/completions"]
            # Why the driver names a client: the same request without one is refused.
            refused = _proxied_chat(web, kube_namespace, agent.id, client_address=None)
            assert refused[0] == 403, refused
            assert "proxy_attribution_required" in refused[1], refused
            memory = _memory_bytes(kube, real_node, kube_namespace, pod.metadata.name)
            print(f"gateway Pod memory after one chat: {memory >> 20} MiB")

            # The gateway killed inside its Pod: the kubelet restarts the container, Ready again.
            killed = time.monotonic()
            # (SIGTERM: inside its PID namespace the gateway is PID 1, which SIGKILL cannot reach from there.)
            _exec(kube, real_node, kube_namespace, pod.metadata.name, "node", "-e", "process.kill(1, 'SIGTERM')")

            def restarted() -> client.V1Pod | None:
                again = _pod(kube, kube_namespace, agent.id)
                statuses = (again.status.container_statuses or []) if again is not None else []
                return again if statuses and statuses[0].restart_count >= 1 and _ready(again) else None

            again = wait_for(restarted, timeout=READY_WITHIN_SECONDS, interval=1,
                             what=f"the gateway restarted and Ready\n{real_node.log('kubelet')}")
            timings["killed -> restarted and Ready"] = time.monotonic() - killed
            assert again.metadata.uid == pod.metadata.uid  # the same Pod: the kubelet restarted its container
            assert again.status.container_statuses[0].last_state.terminated is not None
            # What the console's Runtime panel shows (the driver's observation): running, restarted.
            observed = web.observe_runtime(agent)
            assert observed.state == "running", observed
            assert observed.revision_id == revision.id
            assert observed.restarts >= 1, observed

            # A person on OCC's own host (loopback): the driver names OCC's own address instead, and
            # without one it says which setting is missing rather than blaming the model.
            own = sharing_connection(web, client_address=real_node.address)
            answer = "".join(own.chat(namespace_id=namespace.id, agent_id=agent.id, revision_id=revision.id,
                                      gateway_password=None, timeout=120, messages=TURNS, client_address="127.0.0.1"))
            assert answer == REPLY
            with pytest.raises(ComputeError, match="could not tell which client") as missing:
                "".join(web.chat(namespace_id=namespace.id, agent_id=agent.id, revision_id=revision.id,
                                 gateway_password=None, timeout=120, messages=TURNS, client_address="127.0.0.1"))
            assert missing.value.code == CHAT_GATEWAY_NOT_RUNNING

            # `occ tui` on the real node: the CLI finds the serving Pod and runs the TUI in its
            # gateway container; the first message gets the fake model's reply on the terminal,
            # Ctrl+D leaves it with status 0 and the gateway keeps serving (the same container).
            kubeconfig = kube.cluster.kubeconfig(real_node.root / "admin.kubeconfig", token=kube.cluster.admin_token)
            tui_started = time.monotonic()
            terminal, status = _tui(kubeconfig, namespace.id, agent.id, revision.id)
            timings["occ tui: attach -> reply -> Ctrl+D"] = time.monotonic() - tui_started
            assert REPLY.encode() in terminal, f"no reply on the TUI's terminal: {terminal[-3000:]!r}"
            assert status == 0, terminal[-3000:]
            after = _pod(kube, kube_namespace, agent.id)
            assert after is not None
            assert after.metadata.uid == again.metadata.uid
            assert after.status.container_statuses[0].restart_count == again.status.container_statuses[0].restart_count
            assert "".join(web.chat(namespace_id=namespace.id, agent_id=agent.id, revision_id=revision.id,
                                    gateway_password=None, timeout=120, messages=TURNS,
                                    client_address=PERSON_ADDRESS)) == REPLY

            # A second revision replaces the first (Recreate: the old Pod goes, the new one becomes
            # Ready on the node, the Service follows), then a stop scales it to zero and the
            # Agent's deletion removes every object labelled with it.
            second = revision_ref(agent, 2, document)
            replaced = time.monotonic()
            assert worker.prepare_revision(second, ctx).ready
            with real_node.scheduling(kube.core, kube_namespace, label):
                assert worker.activate_revision(second, ctx).ready
            timings["second revision -> active"] = time.monotonic() - replaced
            serving = _pod(kube, kube_namespace, agent.id)
            assert serving is not None
            assert serving.metadata.uid != again.metadata.uid
            assert _ready(serving)
            assert "".join(web.chat(namespace_id=namespace.id, agent_id=agent.id, revision_id=second.id,
                                    gateway_password=None, timeout=120, messages=TURNS,
                                    client_address=PERSON_ADDRESS)) == REPLY
            with pytest.raises(ComputeError):  # the first revision serves no more
                "".join(web.chat(namespace_id=namespace.id, agent_id=agent.id, revision_id=revision.id,
                                 gateway_password=None, timeout=30, messages=TURNS, client_address=PERSON_ADDRESS))

            # A revision with plugins: the Pod's init step runs the runtime's own install of the npm
            # selection, which the runtime refuses (no way off the Pod to a registry): a per-plugin
            # warning, that plugin off in the effective config, the bundled one on, and the gateway
            # serves.
            plugged_spec = RevisionSpec.from_stored({"configuration": document, "plugins": PLUGIN_SELECTIONS})
            third = RevisionRef(id=new_id(IdPrefix.REVISION), namespace_id=namespace.id, agent_id=agent.id, number=3,
                                spec=plugged_spec)
            with_plugins = time.monotonic()
            assert worker.prepare_revision(third, ctx).ready
            with real_node.scheduling(kube.core, kube_namespace, label):
                activated = worker.activate_revision(third, ctx)
            timings["plugin revision (one refused install) -> active"] = time.monotonic() - with_plugins
            assert activated.ready
            assert list(activated.warnings) == [PluginWarning(plugin_id="occ-plugin:stubby",
                                                              code="PLUGIN_INSTALL_FAILED")]
            plugged = _pod(kube, kube_namespace, agent.id)
            assert plugged is not None
            (init,) = plugged.status.init_container_statuses
            assert init.state.terminated.exit_code == 0
            assert json.loads(init.state.terminated.message)["installs"] == ["refused"]
            effective = json.loads(_exec(kube, real_node, kube_namespace, plugged.metadata.name, "cat",
                                         "/home/node/openclaw.json"))
            entries = effective["plugins"]["entries"]
            assert entries["workboard"]["enabled"] is True
            assert entries.get("stubby", {}).get("enabled") is not True
            assert "".join(web.chat(namespace_id=namespace.id, agent_id=agent.id, revision_id=third.id,
                                    gateway_password=None, timeout=120, messages=TURNS,
                                    client_address=PERSON_ADDRESS)) == REPLY
            worker.stop_revision(third)
            wait_for(lambda: not kube.core.list_namespaced_pod(kube_namespace, label_selector=label).items,
                     timeout=120, interval=1, what="the stopped gateway's Pod gone")
            assert web.observe_runtime(agent).state == "stopped"
            worker.delete_runtime_credentials(agent)
            left = [kind for kind, listed in _labelled(kube, kube_namespace, label) if listed]
            assert left == [], f"objects of the deleted Agent left behind: {left}"
        finally:
            print("timings: " + ", ".join(f"{what} {seconds:.1f} s" for what, seconds in timings.items()))
            if model is not None:
                model.stop()
            kube.core.delete_namespace(kube_namespace)
            kube.kubelet.take_back(selector)
            wait_for(lambda: not kube.core.list_namespaced_pod(kube_namespace).items, timeout=120, interval=0.5,
                     what="the gateway Pod gone")
            kube.core.delete_persistent_volume(volume)
