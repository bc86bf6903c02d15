"""The Kubernetes ComputeDriver against the real test cluster (tests/kubecluster): kube-apiserver
and kube-controller-manager 1.20.2 with RBAC, the simulated kubelet making Pods run, and the fault
proxy in front. The driver runs as the worker's least-privilege identity, bound by
``deploy/kubernetes/worker-rbac.yaml`` as shipped, so a verb the file lacks fails here.

Secret values come from a SecretDriver in memory (the driver needs no database); the Kubernetes
SecretDriver's own tests are in tests/occ/drivers/secrets/test_kubernetes.py.
"""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest

from occ.documents import PluginWarning, RevisionSpec
from occ.drivers.compute.base import ComputeError, NamespaceRef, RevisionRef
from occ.drivers.compute.local_plugins import resolve_spec
from occ.drivers.kube import names, plugin_init
from occ.drivers.plugins.catalog import CATALOG_FILE
from occ.drivers.plugins.registry import forget_plugin_drivers
from occ.ids import IdPrefix, new_id
from tests.kubecluster.fixtures import wait_for
from tests.kubecluster.support import (
    DOCUMENT,
    SECOND,
    deployable,
    kube_driver,
    prepared,
    ready_namespace,
    sharing_connection,
)
from tests.occ.drivers.compute.local_support import (
    MemorySecretDriver,
    context,
    new_agent,
    revision_ref,
    stored_secret,
)

pytestmark = pytest.mark.kubernetes

CANARY = "sk-canary-3e8b1f-never-in-a-configmap"


@pytest.fixture
def driver(kube_faults):
    with kube_driver(kube_faults.worker_kubeconfig) as driver:
        yield driver


def selector_of(kube, agent, kube_namespace) -> str:
    service = kube.core.read_namespaced_service(names.gateway_name(agent.id), kube_namespace)
    return service.spec.selector[names.NAME_LABEL]


def serving(kube, agent, kube_namespace) -> str:
    deployment = kube.apps.read_namespaced_deployment(names.gateway_name(agent.id), kube_namespace)
    return deployment.metadata.annotations[names.DEPLOYMENT_REVISION_ID]


def agent_objects(kube, agent, kube_namespace) -> dict[str, list[str]]:
    selector = f"{names.AGENT_LABEL}={agent.id}"
    found = {
        "deployments": kube.apps.list_namespaced_deployment(kube_namespace, label_selector=selector).items,
        "services": kube.core.list_namespaced_service(kube_namespace, label_selector=selector).items,
        "configmaps": kube.core.list_namespaced_config_map(kube_namespace, label_selector=selector).items,
        "secrets": kube.core.list_namespaced_secret(kube_namespace, label_selector=selector).items,
        "serviceaccounts": kube.core.list_namespaced_service_account(kube_namespace, label_selector=selector).items,
        "pvcs": kube.core.list_namespaced_persistent_volume_claim(kube_namespace, label_selector=selector).items,
        "networkpolicies": kube.networking.list_namespaced_network_policy(kube_namespace,
                                                                           label_selector=selector).items,
        "pods": [p for p in kube.core.list_namespaced_pod(kube_namespace, label_selector=selector).items],
    }
    return {kind: sorted(item.metadata.name for item in items) for kind, items in found.items() if items}


def assert_canary_nowhere_but_secrets(kube, kube_namespace) -> None:
    for config_map in kube.core.list_namespaced_config_map(kube_namespace).items:
        assert CANARY not in json.dumps(config_map.data or {})
    listings = [kube.core.list_namespaced_config_map(kube_namespace).items,
                kube.core.list_namespaced_secret(kube_namespace).items,
                kube.apps.list_namespaced_deployment(kube_namespace).items,
                kube.core.list_namespaced_service(kube_namespace).items,
                kube.core.list_namespaced_pod(kube_namespace).items]
    for items in listings:
        for item in items:
            assert CANARY not in json.dumps(item.metadata.labels or {})
            assert CANARY not in json.dumps(item.metadata.annotations or {})
    for deployment in kube.apps.list_namespaced_deployment(kube_namespace).items:
        # The template names Secrets (secretKeyRef), never a value.
        assert CANARY not in json.dumps(kube.admin.sanitize_for_serialization(deployment.spec))


def test_ensure_namespace_builds_the_tenant_boundary(kube_faults, driver):
    kube = kube_faults
    namespace = ready_namespace(driver)
    kube_namespace = names.tenant_namespace(namespace.id)
    assert kube_namespace == "oce-" + names.sha_hex(namespace.id, 15)
    found = kube.core.read_namespace(kube_namespace)
    assert found.status.phase == "Active"
    for mode in ("enforce", "audit", "warn"):
        assert found.metadata.labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    assert found.metadata.labels[names.NAMESPACE_LABEL] == namespace.id
    assert kube.core.read_namespaced_resource_quota("openclaw-quota", kube_namespace).status.hard == {"pods": "10"}
    assert kube.core.read_namespaced_limit_range("openclaw-limits", kube_namespace).spec.limits[0].type == "Container"
    policies = {p.metadata.name: p for p in kube.networking.list_namespaced_network_policy(kube_namespace).items}
    assert set(policies) == {"default-deny", "allow-dns", "allow-gateway-clients"}
    assert policies["default-deny"].spec.policy_types == ["Ingress", "Egress"]
    assert {p.port for p in policies["allow-dns"].spec.egress[0].ports} == {53, 5353}
    with kube.proxy.counting() as calls:
        assert driver.ensure_namespace(namespace).done  # again: reads only
    assert calls.writes == []
    result = driver.delete_namespace(namespace)
    assert not result.done
    wait_for(lambda: driver.delete_namespace(namespace).done, timeout=120, what="the tenant namespace gone")


def test_an_existing_namespace_is_verified_claimed_and_never_deleted(kube_faults, driver):
    kube = kube_faults
    name = f"operator-{new_id(IdPrefix.NAMESPACE)[-8:]}"
    kube.core.create_namespace({"metadata": {"name": name, "labels": dict(names.PSA_LABELS)}})
    namespace = NamespaceRef(id=new_id(IdPrefix.NAMESPACE), name="adopted", existing_namespace=name)
    with pytest.raises(ComputeError) as refused:
        driver.ensure_namespace(namespace)
    assert refused.value.code == "EXISTING_NAMESPACE_NOT_ADOPTABLE"
    kube.core.patch_namespace(name, {"metadata": {"annotations": {names.LIFECYCLE_ANNOTATION: "external"}}},
                              _content_type="application/merge-patch+json")
    wait_for(lambda: driver.ensure_namespace(namespace).done, timeout=60, what="adoption")
    assert kube.core.read_namespace(name).metadata.labels[names.NAMESPACE_LABEL] == namespace.id
    other = NamespaceRef(id=new_id(IdPrefix.NAMESPACE), name="second", existing_namespace=name)
    with pytest.raises(ComputeError) as claimed:
        driver.ensure_namespace(other)
    assert claimed.value.code == "EXISTING_NAMESPACE_CLAIMED"
    assert driver.delete_namespace(namespace).done
    kept = kube.core.read_namespace(name)
    assert kept.metadata.deletion_timestamp is None
    assert names.NAMESPACE_LABEL not in (kept.metadata.labels or {})
    assert kube.networking.list_namespaced_network_policy(name).items == []
    kube.core.delete_namespace(name)


def test_an_agent_from_first_revision_to_deletion(kube_faults, driver, memory_secrets):
    kube = kube_faults
    namespace = ready_namespace(driver)
    kube_namespace = names.tenant_namespace(namespace.id)
    agent = new_agent(namespace.id)
    harness = stored_secret(CANARY)
    ctx = context(agent, harness)
    assert not driver.runtime_credentials_status(agent)
    driver.provision_runtime_credentials(agent)
    assert driver.runtime_credentials_status(agent)
    assert driver.observe_runtime_credentials(agent).owner == agent.id

    first = revision_ref(agent, 1, DOCUMENT)
    # The first prepare creates everything and waits (a watch) until the Pod is Ready behind the
    # inactive selector: nothing routes to the gateway yet, and its model egress came first.
    with kube.proxy.counting() as calls:
        readiness = driver.prepare_revision(first, ctx)
    assert (readiness.agent_id, readiness.revision_id, readiness.ready) == (agent.id, first.id, True)
    # No polling, and no list first: the Deployment's create answer stands for it (no Pod of it
    # can be older), so the one request for the revision's Pods is a watch from that answer.
    pod_reads = [path for method, path in calls.seen if path == f"/api/v1/namespaces/{kube_namespace}/pods"]
    assert pod_reads == calls.watches == [f"/api/v1/namespaces/{kube_namespace}/pods"]
    assert selector_of(kube, agent, kube_namespace) == f"{names.gateway_name(agent.id)}-inactive"
    writes = [path.rsplit("/", 1)[-1] for _method, path in calls.writes]
    assert writes.index("networkpolicies") < writes.index("deployments")
    config_map = kube.core.read_namespaced_config_map(names.config_map_name(agent.id, first.id), kube_namespace)
    assert config_map.immutable is True
    rendered = json.loads(config_map.data["openclaw.json"])
    assert rendered["gateway"]["auth"]["mode"] == "trusted-proxy"
    assert rendered["gateway"]["trustedProxies"] == ["10.0.0.0/8"]
    assert rendered["gateway"]["auth"]["password"] == {"source": "env", "provider": "default",
                                                       "id": "OPENCLAW_GATEWAY_PASSWORD"}
    deployment = kube.apps.read_namespaced_deployment(names.gateway_name(agent.id), kube_namespace)
    assert deployment.spec.strategy.type == "Recreate"
    assert deployment.spec.replicas == 1
    pod_spec = deployment.spec.template.spec
    assert pod_spec.security_context.run_as_non_root is True
    assert pod_spec.security_context.seccomp_profile.type == "RuntimeDefault"
    container = pod_spec.containers[0]
    assert container.security_context.read_only_root_filesystem is True
    assert container.security_context.capabilities.drop == ["ALL"]
    # Readiness is asked from inside the Pod over loopback (the kubelet's own address may be a
    # trusted proxy, whose bare request the gateway refuses), and the state volume is mounted
    # whole at the runtime's state folder (mounted in pieces, that folder is root's).
    assert container.readiness_probe.http_get is None
    probe = container.readiness_probe.var_exec.command
    assert probe[:2] == ["node", "-e"]
    assert "host:'127.0.0.1'" in probe[2]
    assert "path:'/readyz'" in probe[2]
    state_mounts = [m for m in container.volume_mounts if m.name == "openclaw-gateway-state"]
    assert [(m.mount_path, m.sub_path) for m in state_mounts] == [("/home/node/.openclaw", None)]
    (state_volume,) = [v for v in pod_spec.volumes if v.name == "openclaw-gateway-state"]
    assert state_volume.persistent_volume_claim.claim_name == names.state_claim_name(agent.id)
    env = {e.name: e for e in container.env}
    assert env["OPENAI_API_KEY"].value is None
    assert env["OPENAI_API_KEY"].value_from.secret_key_ref.name == names.revision_secret_name(agent.id, first.id)
    assert env["OPENCLAW_GATEWAY_PASSWORD"].value_from.secret_key_ref.name == names.transport_secret_name(agent.id)
    assert env["OPENCLAW_CONFIG_PATH"].value == "/etc/openclaw/openclaw.json"

    assert driver.activate_revision(first, ctx).ready
    assert selector_of(kube, agent, kube_namespace) == names.gateway_name(agent.id)
    assert kube.networking.read_namespaced_network_policy(names.runtime_policy_name(agent.id), kube_namespace)
    assert driver.activate_revision(first, ctx).ready  # repeatable

    second = revision_ref(agent, 2, SECOND)
    with kube.proxy.counting() as calls:
        assert driver.prepare_revision(second, ctx).ready  # staged only: the first keeps serving
    assert not [path for method, path in calls.writes if "/deployments" in path]
    assert serving(kube, agent, kube_namespace) == first.id
    assert driver.activate_revision(second, ctx).ready
    assert serving(kube, agent, kube_namespace) == second.id
    pods = driver.gateway_pods(second)
    assert len(pods) == 1
    assert pods[0].metadata.labels[names.REVISION_LABEL] == second.id

    driver.retire_revision(first)
    assert serving(kube, agent, kube_namespace) == second.id
    remaining = agent_objects(kube, agent, kube_namespace)["configmaps"]
    assert remaining == [names.config_map_name(agent.id, second.id)]
    assert_canary_nowhere_but_secrets(kube, kube_namespace)

    driver.stop_revision(second)
    driver.stop_revision(second)  # idempotent
    deployment = kube.apps.read_namespaced_deployment(names.gateway_name(agent.id), kube_namespace)
    assert deployment.spec.replicas == 0
    assert selector_of(kube, agent, kube_namespace).endswith("-inactive")
    wait_for(lambda: not agent_objects(kube, agent, kube_namespace).get("pods"), what="the gateway Pod gone")

    driver.retire_revision(second)
    driver.delete_runtime_credentials(agent)
    wait_for(lambda: agent_objects(kube, agent, kube_namespace) == {}, timeout=60,
             what="nothing of the Agent left")
    assert not driver.runtime_credentials_status(agent)
    driver.delete_runtime_credentials(agent)  # missing is success


def test_a_stale_resource_version_is_read_again_not_overwritten(kube_faults, driver, memory_secrets):
    kube = kube_faults
    _, kube_namespace, agent, ctx = deployable(driver)
    first, second = revision_ref(agent, 1, DOCUMENT), revision_ref(agent, 2, SECOND)
    prepared(driver, first, ctx)
    driver.activate_revision(first, ctx)
    assert driver.prepare_revision(second, ctx).ready
    gateway = names.gateway_name(agent.id)
    # The driver's template patch is held; meanwhile someone else writes the Deployment, so the
    # resourceVersion the driver read is stale when its patch arrives.
    kube.proxy.delay(1.5, times=1, method="PATCH", path=f"/deployments/{gateway}$")

    def meanwhile():
        time.sleep(0.5)
        kube.apps.patch_namespaced_deployment(gateway, kube_namespace,
                                              {"metadata": {"labels": {"example.com/touched": "yes"}}},
                                              _content_type="application/merge-patch+json")

    writer = threading.Thread(target=meanwhile)
    with kube.proxy.counting() as calls:
        writer.start()
        assert driver.activate_revision(second, ctx).ready
        writer.join()
    patches = [path for method, path in calls.seen if method == "PATCH" and path.endswith(f"/deployments/{gateway}")]
    assert len(patches) >= 2, "the conflict was answered by reading again and patching again"
    deployment = kube.apps.read_namespaced_deployment(gateway, kube_namespace)
    assert deployment.metadata.annotations[names.DEPLOYMENT_REVISION_ID] == second.id
    assert deployment.metadata.labels["example.com/touched"] == "yes"


def test_commit_then_drop_on_the_config_map_and_the_credential_secret(kube_faults, driver, memory_secrets):
    kube = kube_faults
    namespace = ready_namespace(driver)
    kube_namespace = names.tenant_namespace(namespace.id)
    agent = new_agent(namespace.id)
    ctx = context(agent, stored_secret("sk-model"))
    kube.proxy.drop_after_commit(method="POST", path=f"/namespaces/{kube_namespace}/secrets$")
    with kube.proxy.counting() as calls:
        driver.provision_runtime_credentials(agent)
    assert kube.proxy.pending_rules() == 0
    assert [p for m, p in calls.seen if m == "POST" and p.endswith("/secrets")] == [
        f"/api/v1/namespaces/{kube_namespace}/secrets"]
    transports = [s for s in agent_objects(kube, agent, kube_namespace)["secrets"]
                  if s == names.transport_secret_name(agent.id)]
    assert len(transports) == 1
    stored = kube.core.read_namespaced_secret(names.transport_secret_name(agent.id), kube_namespace)
    password = MemorySecretDriver().with_value(agent.runtime_credentials["gateway-password"].backend_name, str)
    assert base64.b64decode(stored.data["gateway-password"]).decode() == password

    revision = revision_ref(agent, 1, DOCUMENT)
    kube.proxy.drop_after_commit(method="POST", path=f"/namespaces/{kube_namespace}/configmaps$")
    with kube.proxy.counting() as calls:
        driver.prepare_revision(revision, ctx)
    assert kube.proxy.pending_rules() == 0
    assert len([p for m, p in calls.seen if m == "POST" and p.endswith("/configmaps")]) == 1
    assert agent_objects(kube, agent, kube_namespace)["configmaps"] == [names.config_map_name(agent.id, revision.id)]
    prepared(driver, revision, ctx)


def test_api_server_errors_are_retried_with_backoff(kube_faults, driver, memory_secrets):
    kube = kube_faults
    namespace = ready_namespace(driver)
    agent = new_agent(namespace.id)
    ctx = context(agent, stored_secret("sk-model"))
    driver.provision_runtime_credentials(agent)
    kube.proxy.fail_next(2, status=503)
    kube.proxy.fail_next(1, status=429, method="POST", path="/configmaps$")
    # A 500 to a create may hide a commit: the driver reads back (absent here) before creating again.
    kube.proxy.fail_next(1, status=500, method="POST", path="/serviceaccounts$")
    revision = revision_ref(agent, 1, DOCUMENT)
    with kube.proxy.counting() as calls:
        driver.prepare_revision(revision, ctx)
    assert kube.proxy.pending_rules() == 0
    sequence = [(m, p.rsplit("/", 2)[-2:]) for m, p in calls.seen if "serviceaccounts" in p]
    assert [m for m, _ in sequence] == ["POST", "GET", "POST"]
    prepared(driver, revision, ctx)
    kube.proxy.fail_next(100, status=503)
    with pytest.raises(ComputeError) as unavailable:
        driver.prepare_revision(revision, ctx)
    assert (unavailable.value.code, unavailable.value.retryable) == ("KUBERNETES_API_UNAVAILABLE", True)


def test_a_pod_that_never_becomes_ready_fails_and_the_previous_revision_keeps_serving(kube_faults, memory_secrets):
    kube = kube_faults
    with kube_driver(kube.worker_kubeconfig, ready_timeout=6, prepare_wait=1) as driver:
        namespace, kube_namespace, agent, ctx = deployable(driver)
        first, second = revision_ref(agent, 1, DOCUMENT), revision_ref(agent, 2, SECOND)
        prepared(driver, first, ctx)
        assert driver.activate_revision(first, ctx).ready
        kube.kubelet.hold_unready({names.REVISION_LABEL: second.id})
        assert driver.prepare_revision(second, ctx).ready
        with pytest.raises(ComputeError) as failed:
            driver.activate_revision(second, ctx)
        assert (failed.value.code, failed.value.retryable) == ("GATEWAY_CONVERGENCE_TIMEOUT", False)
        assert serving(kube, agent, kube_namespace) == first.id
        assert selector_of(kube, agent, kube_namespace) == names.gateway_name(agent.id)
        wait_for(lambda: driver.prepare_revision(first, ctx).ready, timeout=60, what="the first revision serving again")
        pods = driver.gateway_pods(first)
        assert len(pods) == 1
        assert not driver.gateway_pods(second)

        # A first revision whose Pod never becomes Ready stays pending (the worker's convergence
        # deadline turns that into a failure); nothing routes to it.
        lonely = new_agent(namespace.id)
        driver.provision_runtime_credentials(lonely)
        never = revision_ref(lonely, 1, DOCUMENT)
        kube.kubelet.hold_unready({names.REVISION_LABEL: never.id})
        lonely_ctx = context(lonely, stored_secret("sk-model"))
        for _ in range(3):
            readiness = driver.prepare_revision(never, lonely_ctx)  # waits prepare_wait, then pending
            assert (readiness.ready, readiness.pending_reason) == (False, "GATEWAY_STARTING")
        assert selector_of(kube, lonely, kube_namespace).endswith("-inactive")


def test_an_object_without_our_labels_is_never_adopted(kube_faults, driver, memory_secrets):
    kube = kube_faults
    namespace = ready_namespace(driver)
    kube_namespace = names.tenant_namespace(namespace.id)
    agent = new_agent(namespace.id)
    revision = revision_ref(agent, 1, DOCUMENT)
    kube.core.create_namespaced_config_map(kube_namespace, {"metadata": {
        "name": names.config_map_name(agent.id, revision.id)}, "data": {"openclaw.json": "{}"}})
    driver.provision_runtime_credentials(agent)
    with pytest.raises(ComputeError) as refused:
        driver.prepare_revision(revision, context(agent, stored_secret("sk-model")))
    assert refused.value.code == "KUBERNETES_OBJECT_NOT_OWNED"
    assert kube.core.read_namespaced_config_map(names.config_map_name(agent.id, revision.id),
                                                kube_namespace).data == {"openclaw.json": "{}"}


# --- the console's Runtime panel and Logs tab (observe_runtime, read_logs) ----------------------------


@pytest.fixture
def web_driver(kube_faults):
    """The driver as the web process holds it (the console observes there): the API's identity,
    bound by ``deploy/kubernetes/api-rbac.yaml`` as shipped."""
    with kube_driver(kube_faults.api_kubeconfig) as driver:
        yield driver


def test_runtime_state_and_logs_through_the_pod_log_api(kube_faults, driver, web_driver, memory_secrets):
    """The Pod log API is the real API server's (RBAC ``pods/log`` as the web identity); it asks the
    Node's kubelet endpoint, which is the loopback stand-in (tests/kubecluster/kubelet.py): the
    one boundary the test cluster cannot run for real, since no container runs."""
    kube = kube_faults
    namespace = ready_namespace(driver)
    kube_namespace = names.tenant_namespace(namespace.id)
    agent = new_agent(namespace.id)
    harness = stored_secret(CANARY)
    ctx = context(agent, harness)
    secrets = [harness, agent.runtime_credentials["gateway-password"]]
    before = web_driver.observe_runtime(agent)
    assert (before.state, before.revision_id, before.memory_bytes, before.cpu_percent) == ("stopped", None, None, None)
    assert web_driver.read_logs(agent, secrets=secrets).lines == ()

    driver.provision_runtime_credentials(agent)
    first = revision_ref(agent, 1, DOCUMENT)
    prepared(driver, first, ctx)
    assert driver.activate_revision(first, ctx).ready
    seen = web_driver.observe_runtime(agent)
    assert (seen.state, seen.revision_id, seen.restarts) == ("running", first.id, 0)
    assert seen.since is not None
    assert seen.since <= seen.observed_at
    assert (seen.memory_bytes, seen.cpu_percent) == (None, None)  # no metrics API: unknown, never made up

    (pod,) = driver.gateway_pods(first)
    password = "gateway-password-never-on-disk-5b"
    kube.kubelet.write_log(kube_namespace, pod.metadata.name, "gateway", [
        "gateway listening on :8080",
        f"provider key {CANARY}",
        f'config {{"apiKey": {json.dumps(CANARY)}, "password": "{password}"}}',
        "\x1b[32mready\x1b[0m",
    ])
    first_page = web_driver.read_logs(agent, secrets=secrets)
    assert first_page.lines == ("gateway listening on :8080", "provider key [redacted]",
                                'config {"apiKey": "[redacted]", "password": "[redacted]"}', "ready")
    assert not (first_page.reset)
    assert not (first_page.skipped)
    assert not (first_page.withheld)
    query = kube.kubelet.logs.requests[-1]
    assert query["timestamps"] == ["true"]
    assert "tailLines" in query
    assert "limitBytes" in query

    # Follow: only what was written since, then nothing.
    kube.kubelet.write_log(kube_namespace, pod.metadata.name, "gateway", ["turn 1", f"echo {CANARY}"])
    followed = web_driver.read_logs(agent, secrets=secrets, cursor=first_page.cursor)
    assert followed.lines == ("turn 1", "echo [redacted]")
    assert "sinceSeconds" in kube.kubelet.logs.requests[-1]
    quiet = web_driver.read_logs(agent, secrets=secrets, cursor=followed.cursor)
    assert (quiet.lines, quiet.skipped, quiet.reset) == ((), False, False)
    # More than the page holds: the newest, and the gap said.
    kube.kubelet.write_log(kube_namespace, pod.metadata.name, "gateway", [f"burst {n}" for n in range(7)])
    burst = web_driver.read_logs(agent, secrets=secrets, cursor=quiet.cursor, max_lines=3)
    assert burst.lines == ("burst 4", "burst 5", "burst 6")
    assert burst.skipped
    # A Secret whose value is gone cannot be redacted: nothing is returned, the lines are counted.
    gone = stored_secret("a-value-deleted-meanwhile")
    del memory_secrets[gone.backend_name]
    kube.kubelet.write_log(kube_namespace, pod.metadata.name, "gateway", ["after"])
    withheld = web_driver.read_logs(agent, secrets=[*secrets, gone], cursor=burst.cursor)
    assert (withheld.lines, withheld.withheld) == ((), 1)

    # A crash: the container exits and restarts.
    kube.kubelet.exit_container({names.AGENT_LABEL: agent.id}, exit_code=1)
    crashed = wait_for(lambda: (o := web_driver.observe_runtime(agent)).state == "crashed" and o, timeout=60,
                       what="the gateway seen crashed")
    assert crashed.revision_id == first.id
    assert crashed.restarts >= 1
    assert crashed.since is not None
    kube.kubelet.release()
    wait_for(lambda: web_driver.observe_runtime(agent).state == "running", timeout=60, what="running again")

    # Another revision's Pod is another log: the old cursor gives a fresh tail, said as reset.
    second = revision_ref(agent, 2, SECOND)
    assert driver.prepare_revision(second, ctx).ready
    assert driver.activate_revision(second, ctx).ready
    assert web_driver.observe_runtime(agent).revision_id == second.id
    (new_pod,) = driver.gateway_pods(second)
    kube.kubelet.write_log(kube_namespace, new_pod.metadata.name, "gateway", [f"second revision {CANARY}"])
    moved = web_driver.read_logs(agent, secrets=secrets, cursor=withheld.cursor)
    assert moved.reset
    assert moved.lines == ("second revision [redacted]",)

    driver.stop_revision(second)
    stopped = wait_for(lambda: (o := web_driver.observe_runtime(agent)).state == "stopped" and o, timeout=60,
                       what="the gateway seen stopped")
    assert stopped.revision_id == second.id
    wait_for(lambda: not agent_objects(kube, agent, kube_namespace).get("pods"), what="the gateway Pod gone")
    after_stop = web_driver.read_logs(agent, secrets=secrets, cursor=moved.cursor)
    assert after_stop.lines == ()
    assert after_stop.reset
    for page in (first_page, followed, burst, moved):
        assert CANARY not in json.dumps(page.lines)
        assert password not in json.dumps(page.lines)
    driver.retire_revision(first)
    driver.retire_revision(second)
    driver.delete_runtime_credentials(agent)


# --- plugin delivery: a non-secret ConfigMap per revision and the Pod's init step ---------------------

NPM_PLUGIN = {"id": "stubby", "name": "Stubby", "description": "A stub.", "categories": [], "tools": ["stub_tool"],
              "package": "@acme/stubby", "version": "1.2.3", "integrity": "sha512-" + "A" * 86 + "==",
              "force": True}
PLUGIN_SELECTIONS = {"driver": {"id": "openclaw", "implementation": "occ.openclaw-curated/1"}, "plugins": {
    "occ-plugin:stubby": {"enabled": True, "toolDefaults": {"enabled": True}},
    "occ-plugin:workboard": {"enabled": True, "tools": {"workboard_list": {"enabled": True}}}}}


def plugin_revision(agent, number: int) -> RevisionRef:
    """Revision ``number`` of ``agent`` selecting ``PLUGIN_SELECTIONS``."""
    return RevisionRef(id=new_id(IdPrefix.REVISION), namespace_id=agent.namespace_id, agent_id=agent.id,
                       number=number, spec=RevisionSpec.from_stored({"configuration": DOCUMENT,
                                                                     "plugins": PLUGIN_SELECTIONS}))


@pytest.fixture
def plugin_catalog(tmp_path, settings):
    document = json.loads(CATALOG_FILE.read_text())
    document["npm"].append(NPM_PLUGIN)
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(document))
    settings.OCC_OPENCLAW_PLUGIN_CATALOG = str(path)
    settings.OCC_PLUGIN_DRIVER = "openclaw"
    forget_plugin_drivers()
    yield path
    forget_plugin_drivers()


def init_finishes(kube, revision, outcomes: list[str]) -> None:
    """The simulated kubelet reports the revision's ``plugins`` init container terminated with
    the message its script writes (tests/occ/drivers/kube/test_plugin_init.py runs that script)."""
    resolved = resolve_spec(revision.spec)
    assert resolved is not None
    message = json.dumps({"version": 1, "spec": plugin_init.spec_digest(resolved[1]), "installs": outcomes})
    kube.kubelet.finish_init({names.REVISION_LABEL: revision.id}, "plugins", message=message)


def test_plugins_are_delivered_as_a_configmap_installed_by_an_init_step(kube_faults, driver, memory_secrets,
                                                                         plugin_catalog):
    """The test cluster runs no container: the objects and the Pod spec are what is asserted, and
    the init step's outcome as the kubelet reports it (the script itself runs in
    tests/occ/drivers/kube/test_plugin_init.py)."""
    kube = kube_faults
    _, kube_namespace, agent, ctx = deployable(driver, model_key=CANARY)
    plain = revision_ref(agent, 1, DOCUMENT)
    first = plugin_revision(agent, 2)
    second = revision_ref(agent, 3, SECOND)
    prepared(driver, plain, ctx)
    assert driver.activate_revision(plain, ctx).ready
    assert driver.prepare_revision(first, ctx).ready
    init_finishes(kube, first, ["installed"])
    activated = driver.activate_revision(first, ctx)
    assert activated.ready
    assert activated.warnings == ()

    name = names.plugin_config_map_name(agent.id, first.id)
    plugins = kube.core.read_namespaced_config_map(name, kube_namespace)
    assert plugins.immutable is True
    assert plugins.metadata.labels[names.REVISION_LABEL] == first.id
    assert plugins.metadata.labels[names.MANAGED_BY_KEY] == names.MANAGED_BY
    spec = json.loads(plugins.data["plugins.json"])
    assert "occ-plugin:stubby" in json.dumps(spec)
    script = plugins.data["install.sh"]
    assert "install npm:@acme/stubby@1.2.3 --pin --force" in script.splitlines()
    assert script.count("\ninstall ") == 1  # workboard is bundled with the runtime: nothing to install
    assert 'node "$OPENCLAW_ENTRY" plugins install "$@" </dev/null' in script  # the image's entry, not PATH
    assert "set -e" not in script  # one refused install never ends the script
    assert CANARY not in json.dumps(plugins.data)
    assert "gateway-password-never-on-disk-5b" not in json.dumps(plugins.data)
    # The gateway's own config carries the selections' policy.
    config = json.loads(kube.core.read_namespaced_config_map(names.config_map_name(agent.id, first.id),
                                                             kube_namespace).data["openclaw.json"])
    assert config["plugins"]["entries"]["stubby"]["enabled"] is True

    pod_spec = kube.apps.read_namespaced_deployment(names.gateway_name(agent.id), kube_namespace).spec.template.spec
    (init,) = pod_spec.init_containers
    assert init.name == "plugins"
    assert init.command == ["sh", "/etc/openclaw/plugins/install.sh"]
    assert all(variable.value_from is None for variable in init.env)  # an install gets no credential
    init_env = {variable.name: variable.value for variable in init.env}
    assert init_env["OPENCLAW_ENTRY"] == "/app/openclaw.mjs"
    assert init.termination_message_path == init_env["OCC_PLUGIN_RESULT"] == "/dev/termination-log"
    gateway_env = {variable.name: variable.value for variable in pod_spec.containers[0].env}
    assert gateway_env["OPENCLAW_CONFIG_PATH"] == init_env["OCC_EFFECTIVE_CONFIG"]  # the config it wrote
    volumes = {volume.name: volume for volume in pod_spec.volumes}
    assert volumes["plugins"].config_map.name == name
    mounts = {mount.name: mount.mount_path for mount in init.volume_mounts}
    assert mounts["plugins"] == "/etc/openclaw/plugins"
    assert mounts["config"] + "/openclaw.json" == init_env["OCC_SOURCE_CONFIG"]
    gateway_mounts = {mount.mount_path for mount in pod_spec.containers[0].volume_mounts}
    # It installs (and writes the effective config) where the gateway then reads.
    assert {path for key, path in mounts.items() if key not in ("plugins", "config")} <= gateway_mounts
    assert init_env["OCC_EFFECTIVE_CONFIG"].startswith("/home/node/")
    assert init.security_context.read_only_root_filesystem is True
    assert names.plugin_config_map_name(agent.id, plain.id) not in agent_objects(kube, agent, kube_namespace)[
        "configmaps"]  # a revision without plugins has none

    # The next revision has no plugins: the init step goes with them; retiring removes the old one.
    assert driver.prepare_revision(second, ctx).ready
    assert driver.activate_revision(second, ctx).ready
    pod_spec = kube.apps.read_namespaced_deployment(names.gateway_name(agent.id), kube_namespace).spec.template.spec
    assert not pod_spec.init_containers
    assert "plugins" not in {volume.name for volume in pod_spec.volumes}
    gateway_env = {v.name: v.value for v in pod_spec.containers[0].env}
    assert gateway_env["OPENCLAW_CONFIG_PATH"] == "/etc/openclaw/openclaw.json"
    driver.retire_revision(plain)
    driver.retire_revision(first)
    assert agent_objects(kube, agent, kube_namespace)["configmaps"] == [names.config_map_name(agent.id, second.id)]
    assert_canary_nowhere_but_secrets(kube, kube_namespace)
    driver.stop_revision(second)
    driver.retire_revision(second)
    driver.delete_runtime_credentials(agent)
    wait_for(lambda: agent_objects(kube, agent, kube_namespace) == {}, timeout=60, what="nothing of the Agent left")


def test_a_plugin_revision_that_never_starts_puts_the_predecessor_back_with_its_init_step(
        kube_faults, driver, memory_secrets, plugin_catalog):
    kube = kube_faults
    _, kube_namespace, agent, ctx = deployable(driver, model_key=CANARY)
    first = plugin_revision(agent, 1)
    second = revision_ref(agent, 2, SECOND)
    init_finishes(kube, first, ["installed"])
    prepared(driver, first, ctx)
    assert driver.activate_revision(first, ctx).ready
    assert driver.prepare_revision(second, ctx).ready
    kube.kubelet.hold_unready({names.REVISION_LABEL: second.id})
    fast = sharing_connection(driver, ready_timeout=5)
    with pytest.raises(ComputeError) as failed:
        fast.activate_revision(second, ctx)
    assert failed.value.code == "GATEWAY_CONVERGENCE_TIMEOUT"
    deployment = kube.apps.read_namespaced_deployment(names.gateway_name(agent.id), kube_namespace)
    assert serving(kube, agent, kube_namespace) == first.id
    (init,) = deployment.spec.template.spec.init_containers
    assert init.name == "plugins"
    volumes = {volume.name: volume.config_map.name for volume in deployment.spec.template.spec.volumes
               if volume.config_map is not None}
    assert volumes == {"config": names.config_map_name(agent.id, first.id),
                       "plugins": names.plugin_config_map_name(agent.id, first.id)}
    gateway_env = {v.name: v.value for v in deployment.spec.template.spec.containers[0].env}
    assert gateway_env["OPENCLAW_CONFIG_PATH"] == "/home/node/openclaw.json"  # the init step's config again
    wait_for(lambda: driver.gateway_pods(first), timeout=60, what="the first revision's Pod back")
    kube.kubelet.release()
    driver.stop_revision(first)
    for revision in (first, second):
        driver.retire_revision(revision)
    driver.delete_runtime_credentials(agent)


def test_a_refused_plugin_install_is_a_warning_and_the_gateway_still_starts(kube_faults, driver, memory_secrets,
                                                                            plugin_catalog):
    """The local driver's semantics: the runtime refusing one install (its init step reports it,
    exit 0) is a per-plugin PLUGIN_INSTALL_FAILED on the readiness, and the gateway starts and is
    activated. A Pod whose init step reported nothing (or for another spec) is never called
    ready: the first prepare waits and answers pending."""
    kube = kube_faults
    _, kube_namespace, agent, ctx = deployable(driver, model_key=CANARY)
    first = plugin_revision(agent, 1)
    quick = sharing_connection(driver, prepare_wait=2)
    kube.kubelet.finish_init({names.REVISION_LABEL: first.id}, "plugins", message=json.dumps(
        {"version": 1, "spec": "0" * 64, "installs": ["refused"]}))  # another spec's outcome
    pending = quick.prepare_revision(first, ctx)
    assert not pending.ready
    assert pending.warnings == ()
    (pod,) = driver.gateway_pods(first)
    assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "True"  # Ready, yet not established

    init_finishes(kube, first, ["refused"])
    refused = [PluginWarning(plugin_id="occ-plugin:stubby", code="PLUGIN_INSTALL_FAILED")]
    readiness = wait_for(lambda: (answer := driver.prepare_revision(first, ctx)).ready and answer, timeout=90,
                         interval=0.3, what="the plugin revision's prepare ready")
    assert list(readiness.warnings) == refused
    activated = driver.activate_revision(first, ctx)
    assert activated.ready
    assert list(activated.warnings) == refused
    assert selector_of(kube, agent, kube_namespace) == names.gateway_name(agent.id)  # it serves
    (pod,) = driver.gateway_pods(first)
    (status,) = pod.status.init_container_statuses
    assert status.state.terminated.exit_code == 0
    driver.stop_revision(first)
    driver.retire_revision(first)
    driver.delete_runtime_credentials(agent)
    wait_for(lambda: agent_objects(kube, agent, kube_namespace) == {}, timeout=60, what="nothing of the Agent left")


def test_an_init_step_that_fails_keeps_the_revision_from_serving(kube_faults, driver, memory_secrets,
                                                                 plugin_catalog):
    """An install that did not finish (a signal) fails the init step: the Pod never starts, and
    activation puts the predecessor back, as for any Pod that never becomes Ready."""
    kube = kube_faults
    _, kube_namespace, agent, ctx = deployable(driver, model_key=CANARY)
    plain = revision_ref(agent, 1, DOCUMENT)
    second = plugin_revision(agent, 2)
    prepared(driver, plain, ctx)
    assert driver.activate_revision(plain, ctx).ready
    assert driver.prepare_revision(second, ctx).ready
    kube.kubelet.finish_init({names.REVISION_LABEL: second.id}, "plugins", exit_code=137)
    fast = sharing_connection(driver, ready_timeout=5)
    with pytest.raises(ComputeError) as failed:
        fast.activate_revision(second, ctx)
    assert failed.value.code == "GATEWAY_CONVERGENCE_TIMEOUT"
    assert serving(kube, agent, kube_namespace) == plain.id
    wait_for(lambda: driver.gateway_pods(plain), timeout=60, what="the first revision's Pod back")
    driver.stop_revision(plain)
    for revision in (plain, second):
        driver.retire_revision(revision)
    driver.delete_runtime_credentials(agent)
