"""The worker's jobs on the Kubernetes ComputeDriver against the real test cluster (tests/kubecluster):
the revision, stop and delete work as the worker runs them (the real queue, the fenced outcomes),
the driver as the worker's least-privilege identity bound by ``deploy/kubernetes/worker-rbac.yaml``.

What the fake driver cannot show: a plugin install the runtime refused in the gateway Pod's init
step reaches the deployment's outcome and the activation's audit event as the local driver's
warning does; a revision whose Pod never becomes Ready leaves the Agent's
active pointer on it (published before activation) while the Deployment was put back on its
predecessor, and stopping the Agent must still scale that Deployment to zero.
"""

from __future__ import annotations

import pytest

from occ.commands.namespaces import NamespaceCreate
from occ.drivers.compute.base import NamespaceRef
from occ.drivers.kube import names
from occ.drivers.secrets import get_secret_driver
from occ.errors import Conflict
from occ.models import Agent, AuditEvent, Namespace, NamespaceStatus, WorkState
from occ.models.work import namespace_ready_key
from occ.services.agent_lifecycle import agent_delete, agent_stop
from occ.services.namespaces import namespace_create
from tests.fakes.compute import deployable_agent, run_work
from tests.kubecluster.fixtures import wait_for
from tests.kubecluster.support import run_until_settled
from tests.occ.drivers.compute.test_kubernetes import (  # noqa: F401 - plugin_catalog is a fixture
    PLUGIN_SELECTIONS,
    init_finishes,
    plugin_catalog,
)
from tests.provisioning.jobs.conftest import code_of, deploy, key_of, work
from tests.provisioning.jobs.test_agent_lifecycle_jobs import delete_key, stop_key

# Real commits: the claim's heartbeat renews the lease on a connection of its own.
pytestmark = [pytest.mark.kubernetes, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def kube_agent(ready_namespace, kube_compute):
    """An Agent in a Namespace whose tenant namespace the driver has made ready."""
    ref = NamespaceRef(id=ready_namespace.id, name=ready_namespace.name)
    wait_for(lambda: kube_compute.ensure_namespace(ref).done, timeout=60, what="the tenant namespace ready")
    agent = deployable_agent(ready_namespace)
    harness = agent.harness_secret
    get_secret_driver(harness.driver_id).put(harness.backend_name, "sk-model-key-for-the-kube-jobs")
    return agent


def deploy_until_settled(actor, agent, *, timeout: float = 120):
    """Deploy and run the revision work until it is no longer queued (pending prepares defer)."""
    revision = deploy(actor, agent)
    run_until_settled(key_of(revision), timeout=timeout)
    return revision


def deployment(kube, agent):
    return kube.apps.read_namespaced_deployment(names.gateway_name(agent.id), names.tenant_namespace(
        agent.namespace_id))


def serving(kube, agent) -> str:
    return deployment(kube, agent).metadata.annotations[names.DEPLOYMENT_REVISION_ID]


def selector(kube, agent) -> str:
    service = kube.core.read_namespaced_service(names.gateway_name(agent.id), names.tenant_namespace(
        agent.namespace_id))
    return service.spec.selector[names.NAME_LABEL]


def test_stop_after_a_third_revision_failed_to_converge_scales_the_gateway_to_zero(admin_actor, kube_faults,
                                                                                   kube_agent):
    kube, agent = kube_faults, kube_agent
    deploy_until_settled(admin_actor, agent)
    second = deploy_until_settled(admin_actor, agent)
    assert work(key_of(second)).reason_code == "REVISION_ACTIVATED"
    assert serving(kube, agent) == second.id

    third = deploy(admin_actor, agent)
    kube.kubelet.hold_unready({names.REVISION_LABEL: third.id})
    outcome = run_work(key_of(third))
    assert code_of(outcome) == ("Fail", "GATEWAY_CONVERGENCE_TIMEOUT")
    assert serving(kube, agent) == second.id, "the predecessor was put back"
    assert Agent.objects.get(id=agent.id).active_revision_id == third.id, "published before activation"

    agent_stop(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    assert code_of(run_work(stop_key(agent))) == ("Complete", "AGENT_STOPPED")

    gateway = deployment(kube, agent)
    assert gateway.spec.replicas == 0
    assert selector(kube, agent) == names.inactive_selector_value(agent.id)
    wait_for(lambda: not kube.core.list_namespaced_pod(
        names.tenant_namespace(agent.namespace_id),
        label_selector=f"{names.AGENT_LABEL}={agent.id}").items, timeout=60, what="the gateway Pod gone")
    assert Agent.objects.get(id=agent.id).active_revision_id is None

    agent_delete(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    assert code_of(run_work(delete_key(agent)))[0] == "Complete"
    assert not kube.apps.list_namespaced_deployment(names.tenant_namespace(agent.namespace_id),
                                                   label_selector=f"{names.AGENT_LABEL}={agent.id}").items


def test_namespace_ready_work_defers_while_the_quota_is_not_computed_and_completes_once_it_is(
        settings, admin_actor, kube_faults, kube_compute):
    """The controller manager held still (its quota controller computes nothing): the driver says
    QUOTA_PENDING, the work defers, the Namespace stays provisioning and refuses deploys; once the
    quota is computed the next run completes it (tests/occ/drivers/kube/test_namespace_readiness.py
    has the driver's side)."""
    settings.OCC_WORKER_DEFER_SECONDS = 0.5
    namespace = namespace_create(actor=admin_actor, command=NamespaceCreate(name="held-quota"))
    key = namespace_ready_key(namespace.id)
    with kube_faults.cluster.controllers_paused():
        for _ in range(2):  # asked again once due: the same answer
            outcome = wait_for(lambda: run_work(key), timeout=30, interval=0.2, what="the ready work due")
            assert code_of(outcome) == ("Defer", "QUOTA_PENDING")
            row = work(key)
            assert (row.state, row.attempt_count) == (WorkState.QUEUED, 0), "deferred, not an attempt spent"
            assert row.available_at > row.last_attempt_at, "due again later"
            assert Namespace.objects.get(id=namespace.id).status == NamespaceStatus.PROVISIONING
        agent = deployable_agent(Namespace.objects.get(id=namespace.id))
        with pytest.raises(Conflict) as refused:
            deploy(admin_actor, agent)
        assert refused.value.code == "NAMESPACE_NOT_READY"
        assert not kube_faults.apps.list_namespaced_deployment(names.tenant_namespace(namespace.id)).items

    def ready():
        run_work(key)
        return work(key).state == WorkState.SUCCEEDED

    wait_for(ready, timeout=90, interval=0.5, what="the ready work completed once the quota is computed")
    assert work(key).reason_code == "NAMESPACE_READY"
    assert Namespace.objects.get(id=namespace.id).status == NamespaceStatus.READY


def test_a_refused_plugin_install_on_kubernetes_is_the_deployments_warning(admin_actor, kube_faults, kube_agent,
                                                                           plugin_catalog):  # noqa: F811
    """Where the user sees it: the revision work's result (the deployment's warnings, which the
    deployments API and the console's activity read) and the activation's audit event."""
    kube, agent = kube_faults, kube_agent
    agent.plugins = PLUGIN_SELECTIONS["plugins"]
    agent.save(update_fields=["plugins"])
    revision = deploy(admin_actor, agent)
    init_finishes(kube, revision, ["refused"])
    run_until_settled(key_of(revision), timeout=120)
    row = work(key_of(revision))
    refused = [{"code": "PLUGIN_INSTALL_FAILED", "pluginId": "occ-plugin:stubby"}]
    assert (row.state, row.reason_code) == (WorkState.SUCCEEDED, "REVISION_ACTIVATED")
    assert row.result_data == {"warnings": refused}
    assert serving(kube, agent) == revision.id
    assert selector(kube, agent) == names.gateway_name(agent.id)
    (event,) = AuditEvent.objects.filter(action="openclaw.agents.revision.activate", resource_id=agent.id)
    assert event.details["warnings"] == refused
