"""``diagnose`` of the Kubernetes ComputeDriver (what the deployment's diagnostics and the gateway
selector show) against the real test cluster, as the worker's identity through the fault proxy:
each check's state follows the Deployment and the revision's Pod as the server reports them."""

from __future__ import annotations

import pytest

from occ.drivers.kube import names
from tests.kubecluster.fixtures import wait_for
from tests.kubecluster.support import DOCUMENT, SECOND, prepared, ready_namespace
from tests.occ.drivers.compute.local_support import context, new_agent, revision_ref, stored_secret
from tests.occ.drivers.compute.test_kubernetes import driver  # noqa: F401 - a fixture

pytestmark = [pytest.mark.kubernetes, pytest.mark.usefixtures("memory_secrets")]


def states(checks) -> dict[str, tuple[str, str | None]]:
    return {f"{c.component}/{c.check}": (c.state, c.code) for c in checks}


def test_diagnose_follows_the_deployment_and_the_revisions_pod(kube_faults, driver):  # noqa: F811
    kube = kube_faults
    namespace = ready_namespace(driver)
    agent = new_agent(namespace.id)
    ctx = context(agent, stored_secret("sk-model"))
    first, second = revision_ref(agent, 1, DOCUMENT), revision_ref(agent, 2, SECOND)
    assert states(driver.diagnose(first)) == {"gateway/deployment": ("failed", "GATEWAY_NOT_DEPLOYED")}

    driver.provision_runtime_credentials(agent)
    prepared(driver, first, ctx)
    assert driver.activate_revision(first, ctx).ready
    assert states(driver.diagnose(first)) == {"gateway/deployment": ("succeeded", None),
                                              "gateway/revision": ("succeeded", None),
                                              "gateway/pod-ready": ("succeeded", None)}
    assert driver.prepare_revision(second, ctx).ready  # staged: the first still serves
    assert states(driver.diagnose(second))["gateway/revision"] == ("failed", "SERVING_ANOTHER_REVISION")

    kube.kubelet.hold_unready({names.REVISION_LABEL: first.id})  # the running Pod turns un-Ready
    wait_for(lambda: states(driver.diagnose(first))["gateway/pod-ready"] == ("failed", "GATEWAY_NOT_READY"),
             timeout=60, what="the held Pod reported un-Ready")
    kube.kubelet.release()

    kube.proxy.fail_next(100, status=503)
    assert states(driver.diagnose(first)) == {"kubernetes/api": ("unknown", "KUBERNETES_API_UNAVAILABLE")}
    kube.proxy.clear()
    unknown_namespace = revision_ref(new_agent(), 1, DOCUMENT)
    assert states(driver.diagnose(unknown_namespace)) == {"kubernetes/api": ("unknown", "TENANT_NAMESPACE_MISSING")}
