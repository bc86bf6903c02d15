#!/usr/bin/env python
"""The Kubernetes ComputeDriver against the real test cluster (tests/kubecluster: kube-apiserver and
kube-controller-manager 1.20.2, etcd, the simulated kubelet), three figures measured in one run:

1. Provisioning: Agents per second through the driver (what the worker calls for a new Agent:
   ``runtime_credentials_status``, ``provision_runtime_credentials``, the first
   ``prepare_revision``, which writes the transport Secret, ConfigMap, ServiceAccount, PVC,
   revision Secret, runtime NetworkPolicy, Deployment and Service) ÷ the same eight object writes
   in a plain client loop (bodies built before the clock starts). The first prepare's wait for
   the Pod is left out here (``prepare_wait=0``: a Deployment it has just created has no Pod, so it
   reads nothing): this figure is the writes. The API calls one new Agent costs through the driver
   (counted by the fault proxy) are printed beside the plain loop's eight. Target >= 0.7.
2. Deploy accepted -> revision active: ``prepare_revision`` (which waits for the Pod, watching)
   until ready, then ``activate_revision`` ÷ the same objects created in a plain loop, the
   Deployment polled every 0.1 s until it reports a ready replica, then the Service switched.
   Target <= 1.3.
3. API calls per reconcile of an unchanged Agent (``prepare_revision`` and ``activate_revision``
   of the revision it serves) with ``--fleet`` Agents in the namespace, counted by the fault proxy:
   a small constant, reads only.

Both arms of 1 and 2 use the worker's identity (the RBAC of deploy/kubernetes/worker-rbac.yaml)
straight to the API server; rounds alternate which arm goes first, and each round's namespace is
gone before the next starts. Values come from a SecretDriver in memory. Run: ``make bench-kubernetes``
(needs ``make kube``), or
``.venv/bin/python bench/kubernetes_driver.py --help``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the project root first
    _root = str(Path(__file__).resolve().parent.parent)
    if _root not in sys.path:
        sys.path.insert(0, _root)
# The driver reads its defaults from OCC's settings (project/settings.py).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import argparse
import statistics
import tempfile
import time
from typing import Any

from kubernetes import client

from bench.kube_support import POLL, make_driver, new_agent, ready_namespace, register_bench_secrets
from bench.verdicts import Verdict, print_skip, print_verdicts
from occ.drivers.compute.base import AgentRef, NamespaceRef, RevisionContext, RevisionRef
from occ.drivers.kube import names
from occ.drivers.kube.api import MERGE_PATCH
from occ.drivers.kube.compute import KubernetesComputeDriver
from occ.drivers.kube.manifests import RevisionManifest
from tests.kubecluster import cluster as test_cluster
from tests.kubecluster.faultproxy import FaultProxy
from tests.kubecluster.fixtures import admin_client, apply_rbac
from tests.kubecluster.kubelet import SimulatedKubelet

DOCUMENT = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}


def plain_bodies(driver: KubernetesComputeDriver, kube_namespace: str, agent: AgentRef, revision: RevisionRef,
                 ctx: RevisionContext) -> list[tuple[str, Any]]:
    """The eight objects the driver writes for a new Agent, as plain bodies."""
    plan = RevisionManifest(driver, revision, ctx)
    plan.kube_namespace = kube_namespace
    owner, annotations = plan.agent_owner, plan.agent_annotations
    meta = lambda name, labels=owner: client.V1ObjectMeta(name=name, labels=labels, annotations=annotations)  # noqa: E731
    return [
        ("secret", client.V1Secret(metadata=meta(names.transport_secret_name(agent.id)), type="Opaque",
                                   data={"gateway-password": "YmVuY2g="})),
        ("configmap", client.V1ConfigMap(metadata=meta(plan.config_map, plan.revision_owner),
                                         data={"openclaw.json": plan.rendered()}, immutable=True)),
        ("serviceaccount", client.V1ServiceAccount(metadata=meta(names.service_account_name(agent.id)),
                                                   automount_service_account_token=False)),
        ("pvc", client.V1PersistentVolumeClaim(metadata=meta(names.state_claim_name(agent.id)),
                                               spec=client.V1PersistentVolumeClaimSpec(
                                                   access_modes=["ReadWriteOnce"],
                                                   resources=client.V1VolumeResourceRequirements(
                                                       requests={"storage": "10Gi"})))),
        ("secret", client.V1Secret(metadata=meta(plan.revision_secret, plan.revision_owner), type="Opaque",
                                   data={"OPENAI_API_KEY": "YmVuY2g="})),
        ("networkpolicy", client.V1NetworkPolicy(
            metadata=meta(names.runtime_policy_name(agent.id)), spec=client.V1NetworkPolicySpec(
                pod_selector=client.V1LabelSelector(match_labels={names.AGENT_LABEL: agent.id}),
                policy_types=["Egress"], egress=[client.V1NetworkPolicyEgressRule(
                    to=[client.V1NetworkPolicyPeer(ip_block=client.V1IPBlock(cidr="0.0.0.0/0"))],
                    ports=[client.V1NetworkPolicyPort(protocol="TCP", port=443)])]))),
        ("deployment", client.V1Deployment(metadata=meta(plan.gateway), spec=client.V1DeploymentSpec(
            replicas=1, strategy=client.V1DeploymentStrategy(type="Recreate"),
            selector=client.V1LabelSelector(match_labels={names.NAME_LABEL: plan.gateway}),
            template=plan.pod_template()))),
        ("service", client.V1Service(metadata=meta(plan.gateway), spec=client.V1ServiceSpec(
            selector={names.NAME_LABEL: names.inactive_selector_value(agent.id)},
            ports=[client.V1ServicePort(name="http", port=8080, target_port=8080)]))),
    ]


def plain_create(api: client.ApiClient, kube_namespace: str, bodies: list[tuple[str, Any]]) -> None:
    core, apps, networking = client.CoreV1Api(api), client.AppsV1Api(api), client.NetworkingV1Api(api)
    create = {"secret": core.create_namespaced_secret, "configmap": core.create_namespaced_config_map,
              "networkpolicy": networking.create_namespaced_network_policy,
              "serviceaccount": core.create_namespaced_service_account,
              "pvc": core.create_namespaced_persistent_volume_claim,
              "deployment": apps.create_namespaced_deployment, "service": core.create_namespaced_service}
    for kind, body in bodies:
        create[kind](kube_namespace, body)


def provisioning(driver, plain_api, agents: int, rounds: int) -> tuple[list[float], list[float]]:
    ours, plains = [], []
    for round_number in range(rounds):
        order = ("driver", "plain") if round_number % 2 == 0 else ("plain", "driver")
        for arm in order:
            namespace, kube_namespace = ready_namespace(driver)
            trials = [new_agent(namespace.id, DOCUMENT) for _ in range(agents)]
            if arm == "driver":
                started = time.perf_counter()
                for agent, revision, ctx in trials:
                    if not driver.runtime_credentials_status(agent):
                        driver.provision_runtime_credentials(agent)
                    driver.prepare_revision(revision, ctx)
                ours.append(agents / (time.perf_counter() - started))
            else:
                bodies = [plain_bodies(driver, kube_namespace, *trial) for trial in trials]
                started = time.perf_counter()
                for each in bodies:
                    plain_create(plain_api, kube_namespace, each)
                plains.append(agents / (time.perf_counter() - started))
            gone(driver, namespace)
    return ours, plains


def gone(driver: KubernetesComputeDriver, namespace: NamespaceRef) -> None:
    """Delete a round's tenant namespace and wait until it is gone: the controller manager's
    cleanup of its Deployments must not run into the next round's (or figure's) clock."""
    deadline = time.monotonic() + 300
    while not driver.delete_namespace(namespace).done and time.monotonic() < deadline:
        time.sleep(0.5)


def activation(driver, plain_api, trials: int) -> tuple[list[float], list[float]]:
    ours, plains = [], []
    namespace, kube_namespace = ready_namespace(driver)
    apps, core = client.AppsV1Api(plain_api), client.CoreV1Api(plain_api)
    for trial in range(trials):
        order = ("driver", "plain") if trial % 2 == 0 else ("plain", "driver")
        for arm in order:
            agent, revision, ctx = new_agent(namespace.id, DOCUMENT)
            if arm == "driver":
                driver.provision_runtime_credentials(agent)
                started = time.perf_counter()
                while not driver.prepare_revision(revision, ctx).ready:  # the worker would defer
                    time.sleep(POLL)
                assert driver.activate_revision(revision, ctx).ready
                ours.append(time.perf_counter() - started)
            else:
                bodies = plain_bodies(driver, kube_namespace, agent, revision, ctx)
                started = time.perf_counter()
                plain_create(plain_api, kube_namespace, bodies)
                gateway = names.gateway_name(agent.id)
                while (apps.read_namespaced_deployment(gateway, kube_namespace).status.ready_replicas
                       or 0) < 1:
                    time.sleep(POLL)
                core.patch_namespaced_service(gateway, kube_namespace,
                                              {"spec": {"selector": {names.NAME_LABEL: gateway}}},
                                              _content_type=MERGE_PATCH)
                plains.append(time.perf_counter() - started)
    driver.delete_namespace(namespace)
    return ours, plains


def provisioning_calls(driver, counted_writes_only, proxy: FaultProxy) -> list[tuple[str, str]]:
    """The requests one new Agent's provisioning sends through the driver (as in ``provisioning``)."""
    namespace, _ = ready_namespace(driver)
    agent, revision, ctx = new_agent(namespace.id, DOCUMENT)
    counted_writes_only.tenant(namespace.id)  # the namespace lookup is cached per process
    with proxy.counting() as calls:
        if not counted_writes_only.runtime_credentials_status(agent):
            counted_writes_only.provision_runtime_credentials(agent)
        counted_writes_only.prepare_revision(revision, ctx)
    driver.delete_namespace(namespace)
    return [(method, path.rsplit("/", 1)[-1]) for method, path in calls.seen]


def reconcile_calls(driver, counted_driver, proxy: FaultProxy, fleet: int) -> list[dict[str, int]]:
    namespace, _ = ready_namespace(driver)
    agents = [new_agent(namespace.id, DOCUMENT) for _ in range(fleet)]
    for agent, revision, ctx in agents:
        driver.provision_runtime_credentials(agent)
        driver.prepare_revision(revision, ctx)
    for _agent, revision, ctx in agents:
        while not driver.prepare_revision(revision, ctx).ready:
            time.sleep(POLL)
        driver.activate_revision(revision, ctx)
    counted_driver.tenant(namespace.id)  # the namespace lookup is cached per process
    results = []
    for _agent, revision, ctx in (agents[0], agents[fleet // 2], agents[-1]):
        with proxy.counting() as prepare_calls:
            assert counted_driver.prepare_revision(revision, ctx).ready
        with proxy.counting() as activate_calls:
            assert counted_driver.activate_revision(revision, ctx).ready
        results.append({"prepare": prepare_calls.total, "prepare_writes": len(prepare_calls.writes),
                        "activate": activate_calls.total, "activate_writes": len(activate_calls.writes)})
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=20, help="Agents per provisioning round (default 20)")
    parser.add_argument("--rounds", type=int, default=4, help="provisioning rounds per arm (default 4)")
    parser.add_argument("--trials", type=int, default=6, help="activation trials per arm (default 6)")
    parser.add_argument("--fleet", type=int, default=100, help="Agents present for the reconcile count (100)")
    args = parser.parse_args()
    register_bench_secrets()
    try:
        cluster = test_cluster.start()
    except test_cluster.ClusterUnavailable as exc:
        print_skip(f"the Kubernetes driver: {exc}")
        return 0
    proxy = FaultProxy(cluster.url, ca_file=str(cluster.ca_file)).start()
    admin = admin_client(cluster)
    kubelet = SimulatedKubelet(admin)
    try:
        apply_rbac(admin)
        kubelet.start()
        folder = Path(tempfile.mkdtemp(prefix="occ-kube-bench-"))
        direct = cluster.kubeconfig(folder / "direct", token=cluster.worker_token)
        counted = cluster.kubeconfig(folder / "counted", token=cluster.worker_token, server=proxy.url)
        driver, counted_driver = make_driver(direct), make_driver(counted)
        writes_only = make_driver(direct, prepare_wait=0)
        plain_api = driver.connection.api_client

        ours, plains = provisioning(writes_only, plain_api, args.agents, args.rounds)
        ratio = statistics.median(ours) / statistics.median(plains)
        print(f"provisioning: driver {statistics.median(ours):.1f} Agents/s, plain loop "
              f"{statistics.median(plains):.1f} Agents/s (medians of {args.rounds}, {args.agents} Agents each)")
        print(f"  per round: driver {[round(x, 1) for x in ours]}, plain {[round(x, 1) for x in plains]}")
        print(f"  driver ÷ plain = {ratio:.2f}")
        seen = provisioning_calls(driver, make_driver(counted, prepare_wait=0), proxy)
        print(f"  API calls per new Agent: driver {len(seen)} ({', '.join(f'{m} {p}' for m, p in seen)}), "
              f"plain loop {len(plain_bodies(driver, 'x', *new_agent('ns_x', DOCUMENT)))} creates")

        ours_t, plains_t = activation(driver, plain_api, args.trials)
        ratio_t = statistics.median(ours_t) / statistics.median(plains_t)
        print(f"activation: deploy accepted -> active {statistics.median(ours_t):.2f} s, plain loop until ready "
              f"{statistics.median(plains_t):.2f} s (medians of {args.trials})")
        print(f"  per trial: driver {[round(x, 2) for x in ours_t]}, plain {[round(x, 2) for x in plains_t]}")
        print(f"  driver ÷ plain = {ratio_t:.2f}")

        counts = reconcile_calls(driver, counted_driver, proxy, args.fleet)
        print(f"reconcile of an unchanged Agent with {args.fleet} Agents (first, middle, last): {counts}")
        writes = sum(c["prepare_writes"] + c["activate_writes"] for c in counts)
        constant = len({(c["prepare"], c["activate"]) for c in counts}) == 1
        print(f"  writes: {writes}; same count for each Agent: {constant}")
        print_verdicts([
            Verdict("provisioning: driver ÷ plain loop, Agents/s", ratio, 0.7, at_most=False),
            Verdict("deploy accepted -> active: driver ÷ plain loop", ratio_t, 1.3, at_most=True),
            Verdict(f"writes to reconcile unchanged Agents ({args.fleet} present)", float(writes), 0.0, at_most=True,
                    detail="same calls for each Agent" if constant else "calls differ between Agents"),
        ])
    finally:
        kubelet.stop()
        proxy.stop()
        admin.close()
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
