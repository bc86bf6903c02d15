"""``ensure_namespace`` is ready only when it observed the tenant namespace ready, on the real
test cluster (tests/kubecluster) as the worker's least-privilege identity, with the cluster held
in the two states the driver waits out:

- the ResourceQuota not yet computed: kube-controller-manager held still (SIGSTOP), so its quota
  controller writes no ``status``. The API server's quota admission checks only what
  ``status.hard`` names, so until then the quota does not bind (shown: Pods past its limit are
  admitted), which is why the namespace is not ready;
- the namespace Terminating: deleted out of band (as an operator's ``kubectl delete ns``) and held
  there by a finalizer, as a namespace whose content is still being finalized.

Each time the driver says not ready, writes nothing more, and says ready once it observed it.
The worker's side (the ready work defers, the Namespace stays provisioning, deploys are refused)
is in tests/provisioning/jobs/test_kubernetes_jobs.py.
"""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from occ.drivers.compute.base import NamespaceRef
from occ.drivers.kube import names
from occ.drivers.kube.compute import quota_enforced
from occ.drivers.kube.manifests import LIMITS, NAMESPACE_POLICIES, QUOTA
from occ.ids import IdPrefix, new_id
from tests.kubecluster.fixtures import wait_for
from tests.kubecluster.support import TEST_IMAGE, kube_driver

pytestmark = pytest.mark.kubernetes

HOLD = "openclaw.dev/test-hold"


def new_namespace(name: str) -> NamespaceRef:
    return NamespaceRef(id=new_id(IdPrefix.NAMESPACE), name=name)


def bare_pod(name: str) -> dict:
    """A Pod the admission chain takes without the ServiceAccount token the held controllers
    would mint (``automountServiceAccountToken: false``)."""
    return {
        "metadata": {"name": name},
        "spec": {"automountServiceAccountToken": False, "containers": [{"name": "c", "image": TEST_IMAGE}]},
    }


def boundary(kube, kube_namespace: str) -> dict[str, list[str]]:
    """The tenant boundary's objects as the server lists them."""
    return {
        "quotas": sorted(q.metadata.name for q in kube.core.list_namespaced_resource_quota(kube_namespace).items),
        "limits": sorted(r.metadata.name for r in kube.core.list_namespaced_limit_range(kube_namespace).items),
        "policies": sorted(
            p.metadata.name for p in kube.networking.list_namespaced_network_policy(kube_namespace).items
        ),
    }


WHOLE = {"quotas": [QUOTA], "limits": [LIMITS], "policies": sorted(NAMESPACE_POLICIES)}


def test_a_quota_the_controller_has_not_computed_is_not_ready_until_it_is(kube_faults):
    kube = kube_faults
    namespace = new_namespace("held-quota")
    kube_namespace = names.tenant_namespace(namespace.id)
    with kube_driver(kube.worker_kubeconfig, quota_pods="1") as driver:
        with kube.cluster.controllers_paused():
            first = driver.ensure_namespace(namespace)
            assert (first.done, first.pending_reason) == (False, "QUOTA_PENDING")
            assert boundary(kube, kube_namespace) == WHOLE, "everything written; the quota not yet computed"
            quota = kube.core.read_namespaced_resource_quota(QUOTA, kube_namespace)
            assert quota.spec.hard == {"pods": "1"}
            assert not (quota.status and quota.status.hard)
            assert not quota_enforced(quota)

            # Why that is not ready: the quota does not bind yet. Two Pods past a limit of one
            # are admitted (the default ServiceAccount, which the held controllers would make, by hand).
            kube.core.create_namespaced_service_account(
                kube_namespace, {"metadata": {"name": "default"}, "automountServiceAccountToken": False}
            )
            for index in (1, 2):
                kube.core.create_namespaced_pod(kube_namespace, bare_pod(f"admitted-{index}"))

            with kube.proxy.counting() as calls:
                again = driver.ensure_namespace(namespace)
            assert (again.done, again.pending_reason) == (False, "QUOTA_PENDING")
            assert calls.writes == [], "still pending: it reads what it wrote, nothing more"
            assert calls.total > 0

        # The controller manager runs again: its quota controller computes the quota, the driver observes it.
        done = wait_for(
            lambda: (result := driver.ensure_namespace(namespace)).done and result,
            timeout=90,
            interval=0.5,
            what="the quota computed and observed",
        )
        assert done.pending_reason is None
        quota = kube.core.read_namespaced_resource_quota(QUOTA, kube_namespace)
        assert quota_enforced(quota)
        assert quota.status.hard == {"pods": "1"}
        wait_for(
            lambda: kube.core.read_namespaced_resource_quota(QUOTA, kube_namespace).status.used == {"pods": "2"},
            timeout=60,
            what="the admitted Pods counted",
        )
        # Now it binds.
        with pytest.raises(ApiException) as refused:
            kube.core.create_namespaced_pod(kube_namespace, bare_pod("refused"))
        assert refused.value.status == 403
        assert "exceeded quota" in refused.value.body
        with kube.proxy.counting() as calls:
            assert driver.ensure_namespace(namespace).done
        assert calls.writes == [], "ready: a reconcile reads only"
    kube.core.delete_namespace(kube_namespace)


def test_a_terminating_namespace_is_not_ready_until_it_is_gone_and_made_again(kube_faults):
    kube = kube_faults
    namespace = new_namespace("terminating")
    kube_namespace = names.tenant_namespace(namespace.id)
    kube.core.create_namespace(
        {
            "metadata": {
                "name": kube_namespace,
                "labels": {**names.owner_labels(namespace.id), **names.PSA_LABELS},
                "finalizers": [HOLD],
            }
        }
    )
    kube.core.delete_namespace(kube_namespace)
    held = kube.core.read_namespace(kube_namespace)
    assert held.status.phase == "Terminating"
    with kube_driver(kube.worker_kubeconfig) as driver:
        for _ in range(2):  # as often as the worker asks: the same answer
            with kube.proxy.counting() as calls:
                result = driver.ensure_namespace(namespace)
            assert (result.done, result.pending_reason) == (False, "NAMESPACE_NOT_ACTIVE")
            assert calls.writes == [], "nothing written into a namespace on its way out"
        assert boundary(kube, kube_namespace) == {"quotas": [], "limits": [], "policies": []}

        kube.core.patch_namespace(kube_namespace, [{"op": "remove", "path": "/metadata/finalizers"}])
        wait_for(
            lambda: driver.ensure_namespace(namespace).done,
            timeout=120,
            interval=0.5,
            what="the namespace gone, made again and observed ready",
        )
    again = kube.core.read_namespace(kube_namespace)
    assert again.metadata.uid != held.metadata.uid, "a new namespace, not the terminating one"
    assert (again.status.phase, again.metadata.deletion_timestamp) == ("Active", None)
    assert names.labels_match(again.metadata.labels, {**names.owner_labels(namespace.id), **names.PSA_LABELS})
    assert boundary(kube, kube_namespace) == WHOLE
    assert quota_enforced(kube.core.read_namespaced_resource_quota(QUOTA, kube_namespace))
    kube.core.delete_namespace(kube_namespace)
