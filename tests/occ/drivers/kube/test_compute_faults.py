"""The Kubernetes ComputeDriver under the faults the real server will not make on demand, injected
by the fault proxy (tests/kubecluster) between the driver, as the worker's least-privilege
identity, and the real API server: an answer lost after its patch committed, and throttling that
never lets up. The lifecycle and the other faults are in tests/occ/drivers/compute/test_kubernetes.py.
"""

from __future__ import annotations

import pytest

from occ.drivers.compute.base import ComputeError, ComputeUnknownOutcome
from occ.drivers.kube import names
from occ.drivers.kube.manifests import PREVIOUS_REVISION_ID
from tests.kubecluster.support import DOCUMENT, SECOND, deployable, kube_driver, prepared, ready_namespace
from tests.occ.drivers.compute.local_support import new_agent, revision_ref
from tests.occ.drivers.compute.test_kubernetes import serving

pytestmark = [pytest.mark.kubernetes, pytest.mark.usefixtures("memory_secrets")]


@pytest.fixture
def driver(kube_faults):
    with kube_driver(kube_faults.worker_kubeconfig, attempts=3, max_backoff_seconds=0.2) as driver:
        yield driver


def test_a_template_patch_whose_answer_is_lost_after_it_committed_converges(kube_faults, driver):
    """The patch is sent again with the resourceVersion it was read at: the server answers 409
    (its own commit moved it), the driver reads again and finds the revision already serving."""
    kube = kube_faults
    _, kube_namespace, agent, ctx = deployable(driver)
    first, second = revision_ref(agent, 1, DOCUMENT), revision_ref(agent, 2, SECOND)
    prepared(driver, first, ctx)
    assert driver.activate_revision(first, ctx).ready
    assert driver.prepare_revision(second, ctx).ready
    gateway = names.gateway_name(agent.id)
    kube.proxy.drop_after_commit(method="PATCH", path=f"/deployments/{gateway}$")
    with kube.proxy.counting() as calls:
        assert driver.activate_revision(second, ctx).ready
    assert kube.proxy.pending_rules() == 0
    patches = [p for m, p in calls.seen if m == "PATCH" and p.endswith(f"/deployments/{gateway}")]
    assert len(patches) == 2, "the lost answer's patch was sent once more (and refused), then nothing"
    assert serving(kube, agent, kube_namespace) == second.id
    annotations = kube.apps.read_namespaced_deployment(gateway, kube_namespace).metadata.annotations
    assert annotations[PREVIOUS_REVISION_ID] == first.id
    assert [pod.metadata.labels[names.REVISION_LABEL] for pod in driver.gateway_pods(second)] == [second.id]


def test_throttling_that_never_lets_up_is_unavailable_not_an_unknown_outcome(kube_faults, driver):
    """Every create answered 429 was refused unseen: nothing can have been written, so the
    worker may retry later as for any unavailable API, with nothing to observe first."""
    kube = kube_faults
    namespace = ready_namespace(driver)
    kube_namespace = names.tenant_namespace(namespace.id)
    agent = new_agent(namespace.id)
    kube.proxy.fail_next(10, status=429, method="POST", path=f"/namespaces/{kube_namespace}/secrets$")
    with pytest.raises(ComputeError) as throttled:
        driver.provision_runtime_credentials(agent)
    assert not isinstance(throttled.value, ComputeUnknownOutcome)
    assert (throttled.value.code, throttled.value.retryable) == ("KUBERNETES_API_UNAVAILABLE", True)
    kube.proxy.clear()
    assert not driver.runtime_credentials_status(agent)
    driver.provision_runtime_credentials(agent)
    assert driver.runtime_credentials_status(agent)
