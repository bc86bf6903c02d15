"""What OCC sends to a Kubernetes API server, checked against clusters newer than the test
cluster (1.20.2, the newest API server that can be had here): every object the Kubernetes drivers
write (built by ``occ.drivers.kube.manifests`` and the SecretDriver's ``secret_body``, serialised
as the client sends them) and every document in deploy/kubernetes validates, strict, against the
Kubernetes 1.30 schema and the newest one ``kubernetes-validate`` ships (offline, in OCC's lock)
and against the test cluster's 1.20 (``kubernetes-validate`` 1.28 in tools/checkov); and every Pod
template (the gateway's, with and without the plugins init step, the API, worker and beat and the
init Job) passes checkov's checks of the Pod Security Standards' "restricted" profile.

NetworkPolicies are validated here, not enforced by the test cluster (its node runs no enforcing
CNI); docs/kubernetes.md says so.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import kubernetes_validate
import pytest
import yaml
from kubernetes import client
from kubernetes_validate.utils import VersionNotSupportedError, all_versions, latest_version
from packaging.version import Version

from occ.documents import RevisionSpec
from occ.drivers.compute.base import RevisionContext, RevisionRef, SecretReference
from occ.drivers.kube import manifests, names
from occ.drivers.kube.api import Connection, Settings
from occ.drivers.kube.compute import KubernetesComputeDriver
from occ.drivers.kube.secrets import BackendName, KubernetesSecretDriver, secret_body
from occ.drivers.plugins.registry import forget_plugin_drivers
from occ.ids import IdPrefix, new_id
from tests.deploy import policy

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
OLDEST_MODERN = "1.30.0"
NEWEST = latest_version()
# checkov's checks of what the restricted profile forbids or demands of a Pod (it includes the
# baseline's): no privileged container, no host PID, IPC or network namespace, no host port, no
# docker socket hostPath; no privilege escalation, non-root, every capability dropped and none
# added (NET_RAW and SYS_ADMIN named on their own), the RuntimeDefault seccomp profile. Beyond the
# profile, OCC's own promise: a read-only root file system (CKV_K8S_22).
RESTRICTED = {
    "CKV_K8S_16": "privileged", "CKV_K8S_17": "hostPID", "CKV_K8S_18": "hostIPC", "CKV_K8S_19": "hostNetwork",
    "CKV_K8S_26": "hostPort", "CKV_K8S_27": "docker socket", "CKV_K8S_20": "allowPrivilegeEscalation",
    "CKV_K8S_23": "runAsNonRoot", "CKV_K8S_37": "capabilities drop ALL", "CKV_K8S_25": "added capabilities",
    "CKV_K8S_28": "NET_RAW", "CKV_K8S_39": "SYS_ADMIN", "CKV_K8S_31": "seccomp RuntimeDefault",
    "CKV_K8S_22": "readOnlyRootFilesystem",
}
TENANT = "oce-schemas"
PLUGINS = {"driver": {"id": "openclaw", "implementation": "occ.openclaw-curated/1"}, "plugins": {
    "occ-plugin:workboard": {"enabled": True, "tools": {"workboard_list": {"enabled": True}}}}}
DOCUMENT = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}
KINDS = {  # the client's model -> what the API call names (the body itself carries neither)
    client.V1Namespace: ("v1", "Namespace"), client.V1ResourceQuota: ("v1", "ResourceQuota"),
    client.V1LimitRange: ("v1", "LimitRange"), client.V1NetworkPolicy: ("networking.k8s.io/v1", "NetworkPolicy"),
    client.V1Secret: ("v1", "Secret"), client.V1ConfigMap: ("v1", "ConfigMap"),
    client.V1ServiceAccount: ("v1", "ServiceAccount"), client.V1PersistentVolumeClaim: ("v1", "PersistentVolumeClaim"),
    client.V1Deployment: ("apps/v1", "Deployment"), client.V1Service: ("v1", "Service"),
}


def _serialised(body: Any, namespace: str | None = TENANT) -> dict[str, Any]:
    """``body`` as the client sends it, with the apiVersion, kind and namespace of its call."""
    api_version, kind = KINDS[type(body)]
    document: dict[str, Any] = client.ApiClient().sanitize_for_serialization(body)
    document = {"apiVersion": api_version, "kind": kind, **document}
    if namespace is not None and kind != "Namespace":
        document["metadata"] = {**document["metadata"], "namespace": namespace}
    return document


def _name(document: dict[str, Any]) -> str:
    return f"{document['kind']}/{document['metadata']['name']}"


def _revision_objects(driver: KubernetesComputeDriver, spec: dict[str, Any], *, with_secrets: bool
                      ) -> list[dict[str, Any]]:
    """One revision's objects, as ``prepare`` writes them (and the Service as activation selects)."""
    namespace_id, agent_id = new_id(IdPrefix.NAMESPACE), new_id(IdPrefix.AGENT)
    revision = RevisionRef(id=new_id(IdPrefix.REVISION), namespace_id=namespace_id, agent_id=agent_id, number=2,
                           spec=RevisionSpec.from_stored(spec))
    context = None
    if with_secrets:
        secrets = KubernetesSecretDriver(connection=driver.connection)
        here = secrets.backend_name(new_id(IdPrefix.SECRET), namespace_id=namespace_id, existing_namespace=TENANT)
        context = RevisionContext(harness_auth_method=None, harness_secret=None, secret_environment={
            "HERE_TOKEN": SecretReference(secret_id="sec_here", driver_id="kubernetes", backend_name=here),
            "ELSEWHERE_TOKEN": SecretReference(secret_id="sec_elsewhere", driver_id="encrypted_db",
                                               backend_name="sec_elsewhere")})
    plan = manifests.RevisionManifest(driver, revision, context)
    plan.kube_namespace = TENANT
    bodies: list[Any] = [plan.config_map_body(plan.rendered()), plan.service_account_body(), plan.state_claim_body(),
                         plan.deployment_body(), plan.service_body(plan.gateway),
                         plan.service_body(names.inactive_selector_value(agent_id)), plan.runtime_policy_body()]
    data = plan.plugin_data()
    if data is not None:
        bodies.append(plan.plugin_config_map_body(data))
    if with_secrets:
        projected = plan.projected_items()
        assert [variable for variable, _ in projected] == ["ELSEWHERE_TOKEN"]
        bodies.append(plan.projected_secret_body({variable: "a value" for variable, _ in projected}))
    return [_serialised(body) for body in bodies]


@pytest.fixture(scope="module")
def driver_objects() -> list[dict[str, Any]]:
    """Every object the Kubernetes drivers write, by its pure builder."""
    forget_plugin_drivers()
    objects: list[dict[str, Any]] = []
    for route in ("serviceProxy", "serviceDns"):
        connection = cast(Connection, SimpleNamespace(settings=Settings(gateway_route=route)))
        driver = KubernetesComputeDriver(connection=connection, image="occ/gateway:test",
                                         trusted_proxy_cidrs=["10.0.0.0/8"],
                                         storage_class="" if route == "serviceProxy" else "standard",
                                         client_namespace="occ",
                                         client_pod_labels={"app.kubernetes.io/name": "occ-api"},
                                         control_plane_cidrs=["192.0.2.10/32"])
        namespace_id = new_id(IdPrefix.NAMESPACE)
        owner, annotations = names.owner_labels(namespace_id), names.owner_annotations(namespace_id)
        objects.append(_serialised(manifests.namespace_body(f"{TENANT}-{route.lower()}", namespace_id), None))
        objects += [_serialised(manifests.resource_quota_body(owner, annotations, pods=driver.quota_pods)),
                    _serialised(manifests.limit_range_body(owner, annotations)),
                    *[_serialised(p) for p in driver._namespace_policies(owner, annotations)]]
        objects.append(_serialised(manifests.transport_secret_body(
            names.transport_secret_name(new_id(IdPrefix.AGENT)), owner, annotations, "a password")))
        target = BackendName(KubernetesSecretDriver(connection=connection).backend_name(
            new_id(IdPrefix.SECRET), namespace_id=namespace_id))
        objects.append(_serialised(secret_body(target, "YSB2YWx1ZQ=="), target.kube_namespace))
        objects += _revision_objects(driver, {"configuration": DOCUMENT}, with_secrets=route == "serviceProxy")
    objects += _revision_objects(driver, {"configuration": DOCUMENT, "plugins": PLUGINS}, with_secrets=True)
    forget_plugin_drivers()
    kinds = {document["kind"] for document in objects}
    assert kinds == {kind for _, kind in KINDS.values()}, kinds
    return objects


@pytest.fixture(scope="module")
def manifest_documents() -> list[dict[str, Any]]:
    """Every YAML document of deploy/kubernetes (kustomize's resources; kustomization.yaml is kustomize's own)."""
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    documents = [document for resource in kustomization["resources"]
                 for document in yaml.safe_load_all((MANIFESTS / resource).read_text()) if document]
    files = {path.name for path in MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files  # no manifest left out of the installation
    return documents


def _errors(documents: list[dict[str, Any]], version: str) -> dict[str, str]:
    errors = {}
    for document in documents:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            errors[_name(document)] = ".".join(str(p) for p in error.path) + ": " + error.message
        except (kubernetes_validate.SchemaNotFoundError, VersionNotSupportedError) as error:
            errors[_name(document)] = error.message
    return errors


def test_the_validator_ships_modern_schemas():
    assert Version(NEWEST) >= Version("1.30"), NEWEST
    assert Version(OLDEST_MODERN) in {Version(v) for v in all_versions()}


@pytest.mark.parametrize("version", [OLDEST_MODERN, NEWEST])
def test_every_object_the_drivers_write_validates_against_modern_kubernetes(driver_objects, version):
    assert _errors(driver_objects, version) == {}


@pytest.mark.parametrize("version", [OLDEST_MODERN, NEWEST])
def test_every_manifest_of_the_installation_validates_against_modern_kubernetes(manifest_documents, version):
    assert _errors(manifest_documents, version) == {}


def _broken(driver_objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of the gateway Deployment no API server may accept: a misspelled field, a wrong
    type, a required field missing."""
    deployment = next(d for d in driver_objects if d["kind"] == "Deployment")
    misspelled, wrong_type, missing = (copy.deepcopy(deployment) for _ in range(3))
    context = misspelled["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    context["readOnlyRootFileSystem"] = context.pop("readOnlyRootFilesystem")
    wrong_type["spec"]["replicas"] = "one"
    del missing["spec"]["selector"]
    for document, name in ((misspelled, "misspelled"), (wrong_type, "wrong-type"), (missing, "missing")):
        document["metadata"]["name"] = f"broken-{name}"
    return [misspelled, wrong_type, missing]


def test_the_schemas_refuse_a_misspelled_field_a_wrong_type_and_a_missing_one(driver_objects):
    for version in (OLDEST_MODERN, NEWEST):
        assert set(_errors(_broken(driver_objects), version)) == {
            "Deployment/broken-misspelled", "Deployment/broken-wrong-type", "Deployment/broken-missing"}


def test_every_object_and_manifest_validates_against_the_test_clusters_kubernetes(driver_objects,
                                                                                   manifest_documents):
    """The test cluster's 1.20 drops a field it does not know without a word: strict schemas catch
    one. The broken copies go through the same run and must fail."""
    documents = [*driver_objects, *manifest_documents, *_broken(driver_objects)]
    errors = policy.schema_errors_1_20(documents)
    assert {_name(d): e for d, e in zip(documents, errors, strict=True) if e is not None}.keys() == {
        "Deployment/broken-misspelled", "Deployment/broken-wrong-type", "Deployment/broken-missing"}


def _pod_templates(driver_objects: list[dict[str, Any]], manifest_documents: list[dict[str, Any]]
                   ) -> list[dict[str, Any]]:
    templates = [d for d in [*driver_objects, *manifest_documents] if d["kind"] in ("Deployment", "Job")]
    names_ = {_name(d) for d in manifest_documents if d["kind"] in ("Deployment", "Job")}
    assert names_ == {"Deployment/occ-api", "Deployment/occ-worker", "Deployment/occ-beat", "Job/occ-init"}
    gateways = [d for d in driver_objects if d["kind"] == "Deployment"]
    assert any(d["spec"]["template"]["spec"].get("initContainers") for d in gateways)  # the plugins init step
    return templates


@pytest.mark.slow
def test_every_pod_template_passes_the_restricted_profiles_checks(driver_objects, manifest_documents, tmp_path):
    """checkov, offline, on every Pod template; a privileged copy of the gateway's goes through the
    same run and must fail, so a run that checked nothing cannot pass."""
    templates = _pod_templates(driver_objects, manifest_documents)
    privileged = copy.deepcopy(next(d for d in templates if d["kind"] == "Deployment"
                                    and d["spec"]["template"]["spec"].get("initContainers")))
    privileged["metadata"]["name"] = "deliberately-privileged"
    privileged["spec"]["template"]["spec"]["initContainers"][0]["securityContext"]["privileged"] = True
    results = policy.checkov([*templates, privileged], tmp_path / "templates", sorted(RESTRICTED))

    def resource(document: dict[str, Any]) -> str:
        metadata = document["metadata"]
        return f"{document['kind']}.{metadata.get('namespace', 'default')}.{metadata['name']}"

    failed = {(r["resource"], r["check_id"]) for r in results.get("failed_checks", [])}
    assert failed == {(resource(privileged), "CKV_K8S_16")}, json.dumps(sorted(failed))
    passed = {(r["resource"], r["check_id"]) for r in results.get("passed_checks", [])}
    for template in templates:
        missing = {check for check in RESTRICTED if (resource(template), check) not in passed}
        assert not missing, (resource(template), sorted(missing))
