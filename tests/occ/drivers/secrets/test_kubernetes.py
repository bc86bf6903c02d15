"""The Kubernetes SecretDriver against the real test cluster, as the worker's least-privilege
identity, through the fault proxy."""

from __future__ import annotations

import base64

import pytest

from occ.drivers.kube import names
from occ.drivers.kube.api import Connection, Settings
from occ.drivers.kube.secrets import KubernetesSecretDriver
from occ.drivers.secrets import SecretDriverError, SecretValueMissing
from occ.ids import IdPrefix, new_id

pytestmark = pytest.mark.kubernetes

CANARY = "canary-sk-4f1d2c9e-never-outside-a-secret"


@pytest.fixture
def driver(kube_faults):
    connection = Connection(Settings(kubeconfig_path=str(kube_faults.worker_kubeconfig), read_timeout=10,
                                     backoff_seconds=0.05, max_backoff_seconds=0.5))
    yield KubernetesSecretDriver(connection)
    connection.close()


def _secrets(kube, namespace):
    selector = f"{names.MANAGED_BY_KEY}={names.MANAGED_BY}"
    return kube.core.list_namespaced_secret(namespace, label_selector=selector).items


def test_a_value_lives_in_one_opaque_secret_of_the_tenant_namespace(kube_faults, driver, tenant):
    namespace_id, kube_namespace = tenant
    secret_id = new_id(IdPrefix.SECRET)
    backend = driver.backend_name(secret_id, namespace_id=namespace_id)
    assert backend == f"{kube_namespace}/{namespace_id}/{secret_id}"

    driver.put(backend, CANARY)
    assert driver.with_value(backend, lambda value: value) == CANARY
    stored = kube_faults.core.read_namespaced_secret(names.occ_secret_name(secret_id), kube_namespace)
    assert stored.type == "Opaque"
    assert base64.b64decode(stored.data["value"]).decode() == CANARY
    assert set(stored.data) == {"value"}
    assert stored.metadata.labels == {names.MANAGED_BY_KEY: names.MANAGED_BY, names.NAMESPACE_LABEL: namespace_id,
                                      names.SECRET_LABEL: secret_id}
    metadata = str(stored.metadata.labels) + str(stored.metadata.annotations)
    assert CANARY not in metadata
    for config_map in kube_faults.core.list_namespaced_config_map(kube_namespace).items:
        assert CANARY not in str(config_map.data)

    uid = stored.metadata.uid
    driver.put(backend, CANARY + "-2")  # a new value replaces the old one in the same object
    assert driver.with_value(backend, lambda value: value) == CANARY + "-2"
    assert kube_faults.core.read_namespaced_secret(names.occ_secret_name(secret_id), kube_namespace).metadata.uid == uid

    driver.delete(backend)
    driver.delete(backend)  # missing is success
    with pytest.raises(SecretValueMissing):
        driver.with_value(backend, lambda value: value)
    assert _secrets(kube_faults, kube_namespace) == []


def test_commit_then_drop_on_the_create_leaves_exactly_one_secret(kube_faults, driver, tenant):
    namespace_id, kube_namespace = tenant
    backend = driver.backend_name(new_id(IdPrefix.SECRET), namespace_id=namespace_id)
    kube_faults.proxy.drop_after_commit(method="POST", path=f"/namespaces/{kube_namespace}/secrets$")
    with kube_faults.proxy.counting() as calls:
        driver.put(backend, CANARY)
    assert kube_faults.proxy.pending_rules() == 0, "the drop fired"
    posts = [path for method, path in calls.seen if method == "POST"]
    assert len(posts) == 1, "the lost create was settled by reading back, not sent again"
    assert len(_secrets(kube_faults, kube_namespace)) == 1
    assert driver.with_value(backend, lambda value: value) == CANARY


def test_server_errors_and_throttling_are_retried_with_backoff(kube_faults, driver, tenant):
    namespace_id, _ = tenant
    backend = driver.backend_name(new_id(IdPrefix.SECRET), namespace_id=namespace_id)
    kube_faults.proxy.fail_next(1, status=429, method="POST", path="/secrets$")
    driver.put(backend, CANARY)
    kube_faults.proxy.fail_next(2, status=503, method="GET", path="/secrets/")
    kube_faults.proxy.fail_next(1, status=500, method="GET", path="/secrets/")
    assert driver.with_value(backend, lambda value: value) == CANARY
    assert kube_faults.proxy.pending_rules() == 0
    kube_faults.proxy.fail_next(50, status=503, method="GET", path="/secrets/")
    with pytest.raises(SecretDriverError) as unavailable:
        driver.with_value(backend, lambda value: value)
    assert CANARY not in str(unavailable.value)


def test_a_secret_without_our_labels_is_never_read_overwritten_or_deleted(kube_faults, driver, tenant):
    namespace_id, kube_namespace = tenant
    secret_id = new_id(IdPrefix.SECRET)
    backend = driver.backend_name(secret_id, namespace_id=namespace_id)
    foreign = base64.b64encode(b"someone-else").decode()
    kube_faults.core.create_namespaced_secret(kube_namespace, {
        "metadata": {"name": names.occ_secret_name(secret_id)}, "data": {"value": foreign}})
    with pytest.raises(SecretDriverError, match="not OCC's"):
        driver.put(backend, CANARY)
    with pytest.raises(SecretDriverError, match="not OCC's"):
        driver.with_value(backend, lambda value: value)
    with pytest.raises(SecretDriverError, match="not OCC's"):
        driver.delete(backend)
    kept = kube_faults.core.read_namespaced_secret(names.occ_secret_name(secret_id), kube_namespace)
    assert kept.data == {"value": foreign}


def test_backend_names_come_from_ids_and_name_an_adopted_namespace(driver):
    namespace_id, secret_id = new_id(IdPrefix.NAMESPACE), new_id(IdPrefix.SECRET)
    assert driver.backend_name(secret_id, namespace_id=namespace_id, existing_namespace="support-prod") == (
        f"support-prod/{namespace_id}/{secret_id}")
    with pytest.raises(ValueError, match="OCC ids"):
        driver.backend_name("../x", namespace_id=namespace_id)
    with pytest.raises(SecretDriverError):
        driver.put("default/kube-system/x", "v")

