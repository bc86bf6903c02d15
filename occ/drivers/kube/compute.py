"""The ``kubernetes`` ComputeDriver: each Agent's embedded OpenClaw gateway as a Deployment in its
Namespace's tenant namespace.

Per Namespace (``ensure_namespace``): the tenant namespace ``oce-<sha256(nsId)[:15]>`` with the
restricted Pod Security labels (or an operator's ``existingNamespace``, verified and claimed,
never deleted), ResourceQuota ``openclaw-quota``, LimitRange ``openclaw-limits`` and the
NetworkPolicies ``default-deny``, ``allow-dns`` and ``allow-gateway-clients``. Ready only when
observed ready: the namespace Active (not Terminating) and the quota computed by the controller
manager for its current limits (``quota_enforced``: before that the quota does not bind). Limits
and policies have no status; they hold from their creation.

Per Agent and revision: the ConfigMaps, ServiceAccount, state claim, Deployment, Service,
NetworkPolicy and Secrets that ``manifests`` builds (pure; names and labels in ``names``). This
module talks to the API server: it writes them, reads them back, observes and waits.

Semantics (embedded): the first prepare writes the runtime NetworkPolicy (model egress) before
the Deployment, creates the Deployment and waits (a watch of the revision's Pods, at most
``prepare_wait``) until its Pod is Ready behind the inactive selector, else reports not ready;
a replacement prepare stages the ConfigMap and related objects and reports ready at once;
``activate_revision`` rewrites the Deployment's template (with its resourceVersion: a conflict
re-reads and tries again), applies the runtime NetworkPolicy, switches the Service and waits for
the exact revision's Pod, and if that Pod never becomes Ready puts the predecessor back and
fails; ``retire_revision`` deletes a predecessor's ConfigMap and projection, never the gateway;
stop scales to zero behind the inactive selector; ``observe_runtime`` and ``read_logs`` read the
Deployment, its Pod and the Pod log API (``observe``); ``delete_runtime_credentials`` removes every
object labelled with the Agent, each by UID; ``chat`` reaches the gateway Service (the API
server's service proxy, or its cluster DNS name) as the gateway's trusted proxy.

Nothing is adopted, changed or deleted without the ownership labels. A create whose answer was
lost is settled by reading back (``api.Connection.create_or_adopt``), never resent blindly.

Why one module of ~1,000 lines: it is the driver class (the ComputeDriver contract, one method
per operation) and ``_Plan``, the steps of one revision those methods share; the two use each
other (the driver builds plans, a plan reads through the driver's connection and tenant lookup)
and share ``_translated``, ``_serving`` and ``_with_value``.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import urllib3
from django.conf import settings
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from occ.documents import PluginWarning, RevisionSpec
from occ.drivers.compute import local_chat
from occ.drivers.compute.base import (
    CHAT_GATEWAY_NOT_RUNNING,
    CHAT_MODEL_REFUSED,
    CHAT_TIMEOUT,
    GATEWAY_PASSWORD_PURPOSE,
    LOG_MAX_BYTES,
    LOG_MAX_LINES,
    AgentRef,
    ChatMessage,
    ComputeDriver,
    ComputeError,
    ComputeUnknownOutcome,
    CredentialObservation,
    DiagnosticCheck,
    LogPage,
    NamespaceRef,
    NamespaceResult,
    Readiness,
    RevisionContext,
    RevisionRef,
    RuntimeObservation,
    SecretReference,
    now_text,
)
from occ.drivers.compute.logs import Redactor, with_redactor
from occ.drivers.kube import configured_connection, manifests, names, observe, plugin_init
from occ.drivers.kube.api import (
    LOST,
    RETRYABLE_STATUS,
    Connection,
    KubeRefused,
    KubeUnavailable,
    NotOwned,
    OutcomeUnknown,
)
from occ.drivers.kube.manifests import (
    ALLOW_CLIENTS,
    CONFIG_DIR,
    CONFIG_KEY,
    EFFECTIVE_CONFIG,
    LIMITS,
    NAMESPACE_POLICIES,
    PASSWORD_KEY,
    PREVIOUS_REVISION,
    PREVIOUS_REVISION_ID,
    QUOTA,
    RevisionManifest,
)
from occ.drivers.secrets import SecretDriverError, SecretValueMissing, get_secret_driver
from occ.openclaw.document import model_key_env
from occ.openclaw.render import TRUSTED_PROXY_IDENTITY, TRUSTED_PROXY_USER_HEADER

logger = logging.getLogger(__name__)
T = TypeVar("T")

SUPPORTED_HARNESS_METHODS = frozenset({"api_key"})
CONFLICT_ATTEMPTS = 5
PREPARE_WAIT_SECONDS = 30.0


def quota_enforced(quota: client.V1ResourceQuota) -> bool:
    """Whether the quota controller has computed this quota as it is written: every limit of
    ``spec.hard`` in ``status.hard`` at the same value, with its ``status.used``. Until then the
    API server's quota admission does not bind (it checks only what ``status.hard`` names), so a
    namespace whose quota is not computed would admit Pods past its limit."""
    wanted = (quota.spec.hard if quota.spec else None) or {}
    hard = (quota.status.hard if quota.status else None) or {}
    used = (quota.status.used if quota.status else None) or {}
    return bool(wanted) and all(hard.get(name) == value and name in used for name, value in wanted.items())


@contextmanager
def _translated() -> Iterator[None]:
    """Kubernetes failures as ComputeErrors with safe codes (never a message from the server)."""
    try:
        yield
    except ComputeError:
        raise
    except OutcomeUnknown:
        raise ComputeUnknownOutcome("KUBERNETES_OUTCOME_UNKNOWN") from None
    except NotOwned:
        raise ComputeError("KUBERNETES_OBJECT_NOT_OWNED", retryable=False) from None
    except KubeUnavailable:
        raise ComputeError("KUBERNETES_API_UNAVAILABLE", retryable=True) from None
    except KubeRefused as exc:
        raise ComputeError(exc.code, retryable=False) from None
    except ApiException as exc:
        if exc.status in (401, 403):
            raise ComputeError("KUBERNETES_FORBIDDEN", retryable=False) from None
        if exc.status == 409:
            raise ComputeError("KUBERNETES_CONFLICT", retryable=True) from None
        if exc.status == 404:
            raise ComputeError("KUBERNETES_NOT_FOUND", retryable=True) from None
        raise ComputeError("KUBERNETES_REQUEST_REFUSED", retryable=False) from None


class KubernetesComputeDriver(ComputeDriver):
    driver_id = "kubernetes"
    implementation = "kubernetes"
    runtime_credential_purposes = (GATEWAY_PASSWORD_PURPOSE,)

    def __init__(self, *, connection: Connection | None = None, image: str | None = None,
                 gateway_port: int | None = None, trusted_proxy_cidrs: list[str] | None = None,
                 storage_class: str | None = None, client_namespace: str | None = None,
                 client_pod_labels: Mapping[str, str] | None = None, ready_timeout: float | None = None,
                 prepare_wait: float | None = None, ready_poll: float = 0.5, quota_pods: str = "10",
                 control_plane_cidrs: list[str] | None = None, client_address: str | None = None) -> None:
        self.connection = connection or configured_connection()
        self.image = image or settings.OCC_KUBERNETES_GATEWAY_IMAGE
        self.port = int(gateway_port or settings.OCC_KUBERNETES_GATEWAY_PORT)
        self.trusted_proxy_cidrs = list(trusted_proxy_cidrs or settings.OCC_KUBERNETES_TRUSTED_PROXY_CIDRS)
        self.storage_class = storage_class if storage_class is not None else settings.OCC_KUBERNETES_STORAGE_CLASS
        self.client_namespace = client_namespace or settings.OCC_KUBERNETES_CLIENT_NAMESPACE
        self.client_pod_labels = dict(client_pod_labels or settings.OCC_KUBERNETES_CLIENT_POD_LABELS)
        self.control_plane_cidrs = list(settings.OCC_KUBERNETES_CONTROL_PLANE_CIDRS if control_plane_cidrs is None
                                        else control_plane_cidrs)
        self.ready_timeout = float(ready_timeout or settings.OCC_KUBERNETES_READY_TIMEOUT_SECONDS)
        # A first prepare waits this long for the gateway's Pod (behind the inactive selector)
        # before it reports not ready (the worker then defers and asks again).
        self.prepare_wait = min(self.ready_timeout, PREPARE_WAIT_SECONDS) if prepare_wait is None else prepare_wait
        self.ready_poll = ready_poll
        self.client_address = client_address if client_address is not None else settings.OCC_KUBERNETES_CLIENT_ADDRESS
        self.quota_pods = quota_pods
        self._tenants: dict[str, str] = {}
        self._tenants_lock = threading.Lock()

    @property
    def core(self) -> client.CoreV1Api:
        return self.connection.core

    @property
    def apps(self) -> client.AppsV1Api:
        return self.connection.apps

    @property
    def networking(self) -> client.NetworkingV1Api:
        return self.connection.networking

    # --- the tenant namespace ------------------------------------------------------------------
    def _remember(self, namespace_id: str, kube_namespace: str) -> None:
        with self._tenants_lock:
            self._tenants[namespace_id] = kube_namespace

    def tenant(self, namespace_id: str) -> str:
        """The Kubernetes namespace of an OCC Namespace: the derived one, or the adopted one
        that carries its label (looked up once per process)."""
        with self._tenants_lock:
            known = self._tenants.get(namespace_id)
        if known:
            return known
        derived = names.tenant_namespace(namespace_id)
        found = self.connection.read(self.core.read_namespace, derived)
        if found is not None and names.labels_match_namespace(found.metadata.labels, namespace_id):
            self._remember(namespace_id, derived)
            return derived
        selector = names.owner_selector(names.owner_labels(namespace_id))
        listed = self.connection.call(self.core.list_namespace, label_selector=selector).items
        if len(listed) == 1:
            self._remember(namespace_id, listed[0].metadata.name)
            return str(listed[0].metadata.name)
        raise ComputeError("TENANT_NAMESPACE_MISSING", retryable=True)

    def ensure_namespace(self, namespace: NamespaceRef) -> NamespaceResult:
        with _translated():
            owner = names.owner_labels(namespace.id)
            if namespace.existing_namespace:
                kube_namespace = namespace.existing_namespace
                pending = self._adopt_namespace(namespace, kube_namespace)
            else:
                kube_namespace = names.tenant_namespace(namespace.id)
                pending = self._create_namespace(namespace, kube_namespace)
            if pending:
                return NamespaceResult(namespace_id=namespace.id, done=False, pending_reason=pending)
            self._remember(namespace.id, kube_namespace)
            annotations = names.owner_annotations(namespace.id)
            quota, _ = self.connection.create_or_adopt(
                create=self.core.create_namespaced_resource_quota, args=(kube_namespace,), owner=owner,
                read=lambda: self.connection.read(self.core.read_namespaced_resource_quota, QUOTA, kube_namespace),
                body=manifests.resource_quota_body(owner, annotations, pods=self.quota_pods))
            self.connection.create_or_adopt(
                create=self.core.create_namespaced_limit_range, args=(kube_namespace,), owner=owner,
                read=lambda: self.connection.read(self.core.read_namespaced_limit_range, LIMITS, kube_namespace),
                body=manifests.limit_range_body(owner, annotations))
            for policy in self._namespace_policies(owner, annotations):
                found, created = self.connection.create_or_adopt(
                    create=self.networking.create_namespaced_network_policy, args=(kube_namespace,), owner=owner,
                    read=functools.partial(self.connection.read, self.networking.read_namespaced_network_policy,
                                           policy.metadata.name, kube_namespace),
                    body=policy)
                if not created and policy.metadata.name == ALLOW_CLIENTS:
                    self._keep_clients_current(kube_namespace, found, policy)
            if not quota_enforced(quota):
                quota = self.connection.read(self.core.read_namespaced_resource_quota, QUOTA, kube_namespace)
                if quota is None or not quota_enforced(quota):
                    return NamespaceResult(namespace_id=namespace.id, done=False, pending_reason="QUOTA_PENDING")
        return NamespaceResult(namespace_id=namespace.id, done=True)

    def _create_namespace(self, namespace: NamespaceRef, kube_namespace: str) -> str | None:
        owner = names.owner_labels(namespace.id)
        body = manifests.namespace_body(kube_namespace, namespace.id)
        found, _ = self.connection.create_or_adopt(
            create=self.core.create_namespace, body=body, owner=owner,
            read=lambda: self.connection.read(self.core.read_namespace, kube_namespace))
        if not names.labels_match(found.metadata.labels, names.PSA_LABELS):
            self.connection.patch(self.core.patch_namespace, kube_namespace,
                                 {"metadata": {"labels": names.PSA_LABELS}})
        if (found.status and found.status.phase) != "Active":
            return "NAMESPACE_NOT_ACTIVE"
        return None

    def _adopt_namespace(self, namespace: NamespaceRef, kube_namespace: str) -> str | None:
        """An operator's namespace: it must exist, be Active, say it is managed outside
        (``openclaw.dev/namespace-lifecycle=external``), enforce restricted Pod Security and be
        claimed by no other Namespace. Claiming adds the ownership labels; nothing else changes."""
        found = self.connection.read(self.core.read_namespace, kube_namespace)
        if found is None:
            raise ComputeError("EXISTING_NAMESPACE_MISSING", retryable=False)
        labels = found.metadata.labels or {}
        annotations = found.metadata.annotations or {}
        if annotations.get(names.LIFECYCLE_ANNOTATION) != "external" or not names.labels_match(
                labels, names.PSA_LABELS):
            raise ComputeError("EXISTING_NAMESPACE_NOT_ADOPTABLE", retryable=False)
        claimant = labels.get(names.NAMESPACE_LABEL)
        if claimant not in (None, namespace.id):
            raise ComputeError("EXISTING_NAMESPACE_CLAIMED", retryable=False)
        foreign = [p.metadata.name for p in self.connection.call(
            self.networking.list_namespaced_network_policy, kube_namespace).items
            if not names.labels_match(p.metadata.labels, names.owner_labels(namespace.id))]
        if foreign:
            raise ComputeError("EXISTING_NAMESPACE_FOREIGN_POLICIES", retryable=False)
        if claimant is None:
            self.connection.patch(self.core.patch_namespace, kube_namespace, {"metadata": {
                "labels": names.owner_labels(namespace.id), "annotations": names.owner_annotations(namespace.id)}})
        if (found.status and found.status.phase) != "Active":
            return "NAMESPACE_NOT_ACTIVE"
        return None

    def _keep_clients_current(self, kube_namespace: str, found: client.V1NetworkPolicy,
                              wanted: client.V1NetworkPolicy) -> None:
        """The gateway-client policy follows the settings (clients, port, the control plane's
        CIDRs): an existing one whose ingress differs is patched, whole (a merge patch replaces
        the list)."""
        serialize = self.connection.api_client.sanitize_for_serialization
        ingress = serialize(wanted.spec.ingress)
        if serialize(found.spec.ingress) != ingress:
            self.connection.patch(self.networking.patch_namespaced_network_policy, ALLOW_CLIENTS, kube_namespace,
                                  {"spec": {"ingress": ingress}})

    def _namespace_policies(self, owner: dict[str, str], annotations: dict[str, str]
                            ) -> list[client.V1NetworkPolicy]:
        """The namespace's policies, its gateways reachable by this driver's clients: OCC's gateway
        clients (the web Pods), and with the ``serviceProxy`` route the API server."""
        clients = manifests.gateway_clients(
            client_namespace=self.client_namespace, client_pod_labels=self.client_pod_labels,
            control_plane_cidrs=self.control_plane_cidrs,
            through_api_server=self.connection.settings.gateway_route == "serviceProxy")
        return manifests.namespace_policies(owner, annotations, clients=clients, gateway_port=self.port)

    def delete_namespace(self, namespace: NamespaceRef) -> NamespaceResult:
        """A driver-created namespace is deleted with a UID precondition (done once it is gone);
        an adopted one keeps living: only our quota, limits and policies and our claim go."""
        owner = names.owner_labels(namespace.id)
        with _translated():
            if namespace.existing_namespace:
                kube_namespace = namespace.existing_namespace
                found = self.connection.read(self.core.read_namespace, kube_namespace)
                if found is None or not names.labels_match(found.metadata.labels, owner):
                    return NamespaceResult(namespace_id=namespace.id, done=True)
                self._delete_owned(self.core.read_namespaced_resource_quota,
                                   self.core.delete_namespaced_resource_quota, QUOTA, kube_namespace, owner)
                self._delete_owned(self.core.read_namespaced_limit_range, self.core.delete_namespaced_limit_range,
                                   LIMITS, kube_namespace, owner)
                for policy in NAMESPACE_POLICIES:
                    self._delete_owned(self.networking.read_namespaced_network_policy,
                                       self.networking.delete_namespaced_network_policy, policy, kube_namespace,
                                       owner)
                self.connection.patch(self.core.patch_namespace, kube_namespace, {"metadata": {
                    "labels": dict.fromkeys(owner), "annotations": dict.fromkeys(names.owner_annotations(
                        namespace.id))}})
                return NamespaceResult(namespace_id=namespace.id, done=True)
            kube_namespace = names.tenant_namespace(namespace.id)
            found = self.connection.read(self.core.read_namespace, kube_namespace)
            if found is None:
                with self._tenants_lock:
                    self._tenants.pop(namespace.id, None)
                return NamespaceResult(namespace_id=namespace.id, done=True)
            if not names.labels_match(found.metadata.labels, owner):
                raise ComputeError("KUBERNETES_OBJECT_NOT_OWNED", retryable=False)
            if found.metadata.deletion_timestamp is None:
                self.connection.delete(self.core.delete_namespace, kube_namespace, uid=found.metadata.uid)
            return NamespaceResult(namespace_id=namespace.id, done=False, pending_reason="NAMESPACE_TERMINATING")

    def _delete_owned(self, read: Callable[..., Any], delete: Callable[..., Any], name: str, kube_namespace: str,
                      owner: Mapping[str, str]) -> bool:
        found = self.connection.read(read, name, kube_namespace)
        if found is None or not names.labels_match(found.metadata.labels, owner):
            return False
        return self.connection.delete(delete, name, kube_namespace, uid=found.metadata.uid)

    # --- admission -------------------------------------------------------------------------------
    def validate_harness_auth(self, *, method: str | None, spec: RevisionSpec) -> None:
        if method not in SUPPORTED_HARNESS_METHODS:
            raise ComputeError("HARNESS_AUTH_UNSUPPORTED", retryable=False)
        if model_key_env(spec.configuration) is None:
            raise ComputeError("HARNESS_AUTH_PROVIDER_UNSUPPORTED", retryable=False)

    # --- runtime credentials ---------------------------------------------------------------------
    def _transport(self, agent_id: str, namespace_id: str) -> tuple[str, str, dict[str, str]]:
        return (names.transport_secret_name(agent_id), self.tenant(namespace_id),
                names.owner_labels(namespace_id, agent_id=agent_id))

    def runtime_credentials_status(self, agent: AgentRef) -> bool:
        with _translated():
            name, kube_namespace, owner = self._transport(agent.id, agent.namespace_id)
            found = self.connection.read_owned(
                lambda: self.connection.read(self.core.read_namespaced_secret, name, kube_namespace), owner)
        return found is not None and PASSWORD_KEY in (found.data or {})

    def provision_runtime_credentials(self, agent: AgentRef) -> None:
        """Copy the gateway password OCC generated (``agent.runtime_credentials``) into the
        Agent's transport Secret, once: an existing Secret is never overwritten."""
        password = agent.runtime_credentials.get(GATEWAY_PASSWORD_PURPOSE)
        if password is None:
            raise ComputeError("RUNTIME_CREDENTIALS_MISSING", retryable=True)
        with _translated():
            name, kube_namespace, owner = self._transport(agent.id, agent.namespace_id)

            def create(value: str) -> None:
                # Created first; one that exists already (ours) is adopted as it is, never overwritten.
                body = manifests.transport_secret_body(name, owner, names.owner_annotations(
                    agent.namespace_id, agent_id=agent.id), value)
                self.connection.create_or_adopt(
                    create=self.core.create_namespaced_secret, args=(kube_namespace,), body=body, owner=owner,
                    read_first=False,
                    read=lambda: self.connection.read(self.core.read_namespaced_secret, name, kube_namespace))

            _with_value(password, create)

    def observe_runtime_credentials(self, agent: AgentRef) -> CredentialObservation:
        with _translated():
            name, kube_namespace, _ = self._transport(agent.id, agent.namespace_id)
            found = self.connection.read(self.core.read_namespaced_secret, name, kube_namespace)
        if found is None:
            return CredentialObservation(found=False)
        labels = found.metadata.labels or {}
        if not names.labels_match(labels, names.owner_labels(agent.namespace_id)):
            return CredentialObservation(found=True, owner=None)
        return CredentialObservation(found=True, owner=labels.get(names.AGENT_LABEL))

    def delete_runtime_credentials(self, agent: AgentRef) -> None:
        """The Agent's teardown: every object labelled with the Agent (and managed by us) in its
        tenant namespace, each deleted by UID. Missing objects are success."""
        with _translated():
            try:
                kube_namespace = self.tenant(agent.namespace_id)
            except ComputeError:
                return  # no tenant namespace: nothing of the Agent can exist
            selector = names.owner_selector(names.owner_labels(agent.namespace_id, agent_id=agent.id))
            kinds: list[tuple[Callable[..., Any], Callable[..., Any]]] = [
                (self.apps.list_namespaced_deployment, self.apps.delete_namespaced_deployment),
                (self.core.list_namespaced_service, self.core.delete_namespaced_service),
                (self.networking.list_namespaced_network_policy, self.networking.delete_namespaced_network_policy),
                (self.core.list_namespaced_config_map, self.core.delete_namespaced_config_map),
                (self.core.list_namespaced_secret, self.core.delete_namespaced_secret),
                (self.core.list_namespaced_persistent_volume_claim,
                 self.core.delete_namespaced_persistent_volume_claim),
                (self.core.list_namespaced_service_account, self.core.delete_namespaced_service_account),
            ]
            for list_call, delete_call in kinds:
                for item in self.connection.call(list_call, kube_namespace, label_selector=selector).items:
                    self.connection.delete(delete_call, item.metadata.name, kube_namespace, uid=item.metadata.uid)

    # --- revisions -------------------------------------------------------------------------------
    def _readiness(self, revision: RevisionRef, *, ready: bool, pending: str | None = None,
                   plan: _Plan | None = None) -> Readiness:
        """``plan``: the plan whose wait found the revision's Pod Ready (its plugin warnings)."""
        return Readiness(namespace_id=revision.namespace_id, agent_id=revision.agent_id, revision_id=revision.id,
                         ready=ready, pending_reason=None if ready else (pending or "GATEWAY_STARTING"),
                         warnings=plan.plugin_warnings() if ready and plan is not None else ())

    def prepare_revision(self, revision: RevisionRef, context: RevisionContext) -> Readiness:
        with _translated():
            plan = _Plan(self, revision, context)
            plan.require_tenant()
            deployment = plan.read_deployment()
            plan.fresh = deployment is None
            plan.stage()
            if deployment is None:
                plan.ensure_runtime_policy()  # model egress, before the gateway's first start
                plan.create_deployment()
                plan.ensure_service(active=False)
                return self._readiness(revision, ready=plan.wait_ready(self.prepare_wait), plan=plan)
            serving = _serving(deployment)
            if serving is not None and serving[1] != revision.id:
                if serving[0] >= revision.number:
                    raise ComputeError("STALE_REVISION", retryable=False)
                plan.ensure_service(active=False)  # kept as it is when it exists
                return self._readiness(revision, ready=True)  # staged; activation replaces the gateway
            plan.check_config_unchanged(deployment)
            if (deployment.spec.replicas or 0) < 1:
                plan.scale(1)
            plan.ensure_service(active=False)
            return self._readiness(revision, ready=plan.wait_ready(self.prepare_wait), plan=plan)

    def activate_revision(self, revision: RevisionRef, context: RevisionContext) -> Readiness:
        with _translated():
            plan = _Plan(self, revision, context)
            plan.require_tenant()
            deployment = plan.read_deployment()
            previous: tuple[int, str] | None = None
            if deployment is None:
                plan.stage()
                plan.create_deployment()
            else:
                serving = _serving(deployment)
                if serving is not None and serving[1] != revision.id:
                    if serving[0] >= revision.number:
                        raise ComputeError("STALE_REVISION", retryable=False)
                    plan.stage()
                    previous = serving
                    plan.replace_template(expected=serving[1])
                else:
                    plan.check_config_unchanged(deployment)
                    if (deployment.spec.replicas or 0) < 1:
                        plan.scale(1)
            plan.ensure_runtime_policy()
            plan.ensure_service(active=True)
            if plan.wait_ready(self.ready_timeout):
                return self._readiness(revision, ready=True, plan=plan)
            if previous is None:
                previous = plan.previous_from_annotations()
            if previous is not None:
                plan.roll_back(previous)
            raise ComputeError("GATEWAY_CONVERGENCE_TIMEOUT", retryable=False)

    def deactivate_revision(self, revision: RevisionRef) -> None:
        self.stop_revision(revision)

    def stop_revision(self, revision: RevisionRef) -> None:
        """Scale the gateway to zero and take it off the Service, only if it serves this revision."""
        with _translated():
            plan = _Plan(self, revision, None)
            try:
                plan.kube_namespace = self.tenant(revision.namespace_id)
            except ComputeError:
                return
            deployment = plan.read_deployment()
            if deployment is None or (_serving(deployment) or (0, ""))[1] != revision.id:
                return
            plan.ensure_service(active=False, force=True)
            if (deployment.spec.replicas or 0) != 0:
                plan.scale(0)

    def retire_revision(self, revision: RevisionRef) -> None:
        """Delete this revision's ConfigMap and projected Secret. The gateway stays unless it
        still serves this very revision (Agent deletion); then it is stopped first."""
        with _translated():
            plan = _Plan(self, revision, None)
            try:
                plan.kube_namespace = self.tenant(revision.namespace_id)
            except ComputeError:
                return
            deployment = plan.read_deployment()
            if deployment is not None and (_serving(deployment) or (0, ""))[1] == revision.id:
                plan.ensure_service(active=False, force=True)
                if (deployment.spec.replicas or 0) != 0:
                    plan.scale(0)
            owner = plan.revision_owner
            self._delete_owned(self.core.read_namespaced_config_map, self.core.delete_namespaced_config_map,
                               plan.config_map, plan.kube_namespace, owner)
            self._delete_owned(self.core.read_namespaced_config_map, self.core.delete_namespaced_config_map,
                               plan.plugin_config_map, plan.kube_namespace, owner)
            self._delete_owned(self.core.read_namespaced_secret, self.core.delete_namespaced_secret,
                               plan.revision_secret, plan.kube_namespace, owner)

    # --- observation -----------------------------------------------------------------------------
    def get_gateway_endpoint(self, revision: RevisionRef) -> str | None:
        try:
            kube_namespace = self.tenant(revision.namespace_id)
        except (ComputeError, KubeUnavailable, ApiException):
            return None
        return f"http://{names.gateway_name(revision.agent_id)}.{kube_namespace}.svc:{self.port}"

    def diagnose(self, revision: RevisionRef) -> list[DiagnosticCheck]:
        now = now_text()
        try:
            with _translated():
                plan = _Plan(self, revision, None)
                plan.kube_namespace = self.tenant(revision.namespace_id)
                deployment = plan.read_deployment()
                if deployment is None:
                    return [DiagnosticCheck("gateway", "deployment", "failed", now, "GATEWAY_NOT_DEPLOYED")]
                checks = [DiagnosticCheck("gateway", "deployment", "succeeded", now)]
                serving = (_serving(deployment) or (0, ""))[1] == revision.id
                checks.append(DiagnosticCheck("gateway", "revision", "succeeded" if serving else "failed", now,
                                              None if serving else "SERVING_ANOTHER_REVISION"))
                ready = serving and plan.revision_ready()
                checks.append(DiagnosticCheck("gateway", "pod-ready", "succeeded" if ready else "failed", now,
                                              None if ready else "GATEWAY_NOT_READY"))
                return checks
        except ComputeError as exc:
            return [DiagnosticCheck("kubernetes", "api", "unknown", now, exc.code)]

    # --- the console's Runtime panel and Logs tab ------------------------------------------------
    def _agent_gateway(self, agent: AgentRef) -> tuple[str, client.V1Deployment | None, client.V1Pod | None]:
        """(tenant namespace, the Agent's Deployment, the gateway Pod to look at): read only."""
        kube_namespace = self.tenant(agent.namespace_id)
        owner = names.owner_labels(agent.namespace_id, agent_id=agent.id)
        deployment = self.connection.read_owned(lambda: self.connection.read(
            self.apps.read_namespaced_deployment, names.gateway_name(agent.id), kube_namespace), owner)
        pods = self.connection.call(self.core.list_namespaced_pod, kube_namespace, label_selector=names.owner_selector(
            {**owner, names.ROLE_LABEL: "gateway"})).items
        serving = _serving(deployment) if deployment is not None else None
        return kube_namespace, deployment, observe.pick_pod(pods, serving[1] if serving else None,
                                                            names.REVISION_LABEL)

    def observe_runtime(self, agent: AgentRef) -> RuntimeObservation:
        """From the Deployment (replicas, the revision it serves) and its Pod (conditions,
        container status, restart count); memory and CPU unknown (see ``observe``)."""
        now = datetime.now(UTC)
        with _translated():
            try:
                _, deployment, pod = self._agent_gateway(agent)
            except ComputeError as exc:
                if exc.code == "TENANT_NAMESPACE_MISSING":
                    return RuntimeObservation(state="stopped", observed_at=now)
                raise
        if deployment is None:
            return RuntimeObservation(state="stopped", observed_at=now)
        serving = _serving(deployment)
        return observe.runtime_state(now=now, replicas=int(deployment.spec.replicas or 0),
                                     revision_id=serving[1] if serving else None, pod=pod,
                                     revision_label=names.REVISION_LABEL)

    def read_logs(self, agent: AgentRef, *, secrets: Sequence[SecretReference], cursor: str | None = None,
                  max_lines: int = LOG_MAX_LINES, max_bytes: int = LOG_MAX_BYTES) -> LogPage:
        """The gateway container's log through the Pod log API, redacted of every value in
        ``secrets``. When one of them can no longer be read, nothing is returned (every line is
        withheld): the Pod was started with values this call cannot redact."""
        max_lines, max_bytes = max(1, int(max_lines)), max(1024, int(max_bytes))
        position = observe.parse_cursor(cursor)
        with _translated():
            try:
                kube_namespace, _, pod = self._agent_gateway(agent)
            except ComputeError as exc:
                if exc.code != "TENANT_NAMESPACE_MISSING":
                    raise
                pod = None
            if pod is None:
                reset = cursor is not None and (position is None or position.pod_uid != "")
                return LogPage(lines=(), cursor=observe.make_cursor(observe.Cursor("", 0, 0)), reset=reset)
            uid = str(pod.metadata.uid)
            reset = cursor is not None and (position is None or position.pod_uid not in ("", uid))
            if reset or (position is not None and position.pod_uid == "" and position.stamp):
                position = None
            if position is not None and position.pod_uid == "":
                position = observe.Cursor(uid, 0, 0)
            options = observe.request_options(position, max_lines=max_lines, max_bytes=max_bytes)
            try:
                response = self.connection.call(
                    self.core.read_namespaced_pod_log, pod.metadata.name, kube_namespace, container=observe.CONTAINER,
                    timestamps=True, _preload_content=False, **options)
                data = response.data
                response.release_conn()
            except ApiException as exc:
                if exc.status not in (400, 404):
                    raise
                data = b""  # the container has not started (or is gone): nothing printed yet

        def build(redactor: Redactor, missing: frozenset[str]) -> LogPage:
            return observe.page(pod_uid=uid, data=data, position=position, reset=reset, max_lines=max_lines,
                                requested_tail=options["tail_lines"], redactor=redactor, withhold=bool(missing))

        return with_redactor(secrets, build)

    # --- talking to the gateway --------------------------------------------------------------------
    def chat(self, *, namespace_id: str, agent_id: str, revision_id: str, gateway_password: SecretReference | None,
             messages: Sequence[ChatMessage], timeout: float, client_address: str | None = None) -> Iterator[str]:
        """The gateway Service's chat endpoint, when the gateway Deployment serves ``revision_id``:
        through the API server's service proxy (``gateway_route`` ``serviceProxy``, the
        connection's credentials) or straight to the Service's cluster DNS name (``serviceDns``).

        OCC speaks as the gateway's trusted proxy (``x-occ-identity``), the only way in from off
        the Pod: a gateway in a cluster authenticates trusted-proxy (``render_cluster_config``),
        its password serves loopback inside the Pod only, and the API server drops the
        Authorization header before it proxies. ``gateway_password`` is therefore not sent.

        A trusted proxy must also name the client it speaks for, or the gateway refuses it (403
        ``proxy_attribution_required``): OCC's own hop (the web Pod, or this process as the API
        server's proxy names it in ``X-Forwarded-For``) is a trusted proxy or loopback, which the
        gateway skips. So OCC names the client in ``X-Real-IP`` (``attributed_client``)."""
        gateway = names.gateway_name(agent_id)
        try:
            with _translated():
                kube_namespace = self.tenant(namespace_id)
                deployment = self.connection.read_owned(lambda: self.connection.read(
                    self.apps.read_namespaced_deployment, gateway, kube_namespace),
                    names.owner_labels(namespace_id, agent_id=agent_id))
        except ComputeError as exc:
            raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False,
                               message="the cluster could not say which gateway serves") from exc
        if (deployment is None or (_serving(deployment) or (0, ""))[1] != revision_id
                or (deployment.spec.replicas or 0) < 1):
            raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False, message="no gateway serves this revision")
        headers = {TRUSTED_PROXY_USER_HEADER: TRUSTED_PROXY_IDENTITY}
        named = attributed_client(client_address, self.client_address)
        if named is not None:
            headers[REAL_IP_HEADER] = named
        if self.connection.settings.gateway_route == "serviceDns":
            yield from local_chat.stream_chat_at(
                f"http://{gateway}.{kube_namespace}.svc:{self.port}{local_chat.CHAT_PATH}", headers=headers,
                messages=messages, timeout=timeout)
            return
        yield from self._chat_through_proxy(kube_namespace, gateway, headers, messages, timeout)

    def _chat_through_proxy(self, kube_namespace: str, gateway: str, headers: dict[str, str],
                            messages: Sequence[ChatMessage], timeout: float) -> Iterator[str]:
        try:
            with self.connection.service_proxy_post(kube_namespace, gateway, "http", local_chat.CHAT_PATH,
                                                    body=local_chat.chat_body(messages), headers=headers,
                                                    read_timeout=timeout) as (status, chunks):
                if status != 200:
                    raise _chat_refusal(status, _head(chunks), kube_namespace)
                yield from local_chat.reply_deltas(local_chat.sse_events(chunks))
        except urllib3.exceptions.TimeoutError as exc:
            raise ComputeError(CHAT_TIMEOUT, retryable=False, message="the gateway did not answer in time") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False,
                               message="the API server could not be reached") from exc

    def gateway_pods(self, revision: RevisionRef) -> list[client.V1Pod]:
        """The live Pods of the revision's gateway that mount its ConfigMap (the TUI's choice)."""
        with _translated():
            plan = _Plan(self, revision, None)
            plan.kube_namespace = self.tenant(revision.namespace_id)
            return plan.revision_pods()


REAL_IP_HEADER = "X-Real-IP"  # read by the gateway when gateway.allowRealIpFallback (render_cluster_config)
PROXY_ATTRIBUTION_REQUIRED = "proxy_attribution_required"  # the gateway's reason when it cannot name the client


def attributed_client(person: str | None, own: str | None) -> str | None:
    """The client a gateway is to attribute OCC's request to: the person's address when it is an
    address the gateway accepts (not loopback, not unspecified), else OCC's own
    (``OCC_KUBERNETES_CLIENT_ADDRESS``, for a person on OCC's host or behind a port-forward),
    else None. The gateway keys its rate limits by this address; it grants nothing by it."""
    for candidate in (person, own):
        try:
            address = ipaddress.ip_address((candidate or "").strip())
        except ValueError:
            continue
        if not (address.is_loopback or address.is_unspecified):
            return str(address)
    return None


def _head(chunks: Iterator[bytes], limit: int = 64 * 1024) -> bytes:
    """The start of an error answer (enough to tell who answered), never more than ``limit``."""
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= limit:
            break
    return head[:limit]


def _chat_refusal(status: int, body: bytes, kube_namespace: str) -> ComputeError:
    """What a non-200 answer through the service proxy means. The API server speaks in a v1
    ``Status`` (no Ready endpoint, the Pod's address not answering, OCC's identity refused);
    anything else is the gateway's own answer, read as the local driver reads it."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("kind") == "Status" and answer.get("apiVersion") == "v1":
        if status in (401, 403):
            logger.warning("kubernetes: OCC's identity may not use services/proxy in %s", kube_namespace)
            return ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False,
                                message="OCC may not reach the gateway through the API server")
        return ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False, message="the gateway is not answering")
    if status == 403 and PROXY_ATTRIBUTION_REQUIRED.encode() in body:
        logger.warning("kubernetes: a gateway in %s could not tell which client OCC speaks for; set "
                       "OCC_KUBERNETES_CLIENT_ADDRESS to this process's address on the cluster network", kube_namespace)
        return ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False,
                            message="the gateway could not tell which client OCC speaks for")
    if status in (401, 403):
        return ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False, message="the gateway refused OCC's credentials")
    return ComputeError(CHAT_MODEL_REFUSED, retryable=False, message=f"the gateway answered {status}")


def _serving(deployment: client.V1Deployment) -> tuple[int, str] | None:
    annotations = deployment.metadata.annotations or {}
    number, revision_id = annotations.get(names.DEPLOYMENT_REVISION), annotations.get(names.DEPLOYMENT_REVISION_ID)
    if not revision_id or not number or not number.isdigit():
        return None
    return int(number), revision_id


def _with_value(reference: SecretReference, consumer: Callable[[str], T]) -> T:
    try:
        return get_secret_driver(reference.driver_id).with_value(reference.backend_name, consumer)
    except SecretValueMissing:
        raise ComputeError("SECRET_VALUE_MISSING", retryable=False) from None
    except SecretDriverError:
        raise ComputeError("SECRET_STORE_UNAVAILABLE", retryable=True) from None


class _Plan(RevisionManifest):
    """The steps on the objects of one revision of one Agent (``RevisionManifest``)."""

    def __init__(self, driver: KubernetesComputeDriver, revision: RevisionRef, context: RevisionContext | None):
        super().__init__(driver, revision, context)
        self.driver: KubernetesComputeDriver = driver
        self.connection = driver.connection
        # No gateway Deployment yet (a first prepare): objects are created first and read only
        # when they exist already, so provisioning costs one call per object.
        self.fresh = False
        # The resourceVersion of the Deployment this plan created (None when it found one).
        self.created_version: str | None = None
        self.ready_pod: client.V1Pod | None = None  # the revision's Ready Pod, once a wait found it

    # --- reading -------------------------------------------------------------------------------
    def require_tenant(self) -> None:
        self.kube_namespace = self.driver.tenant(self.revision.namespace_id)

    def read_deployment(self) -> client.V1Deployment | None:
        return self.connection.read_owned(lambda: self.connection.read(
            self.driver.apps.read_namespaced_deployment, self.gateway, self.kube_namespace), self.agent_owner)

    def _ensure(self, create: Callable[..., Any], read: Callable[..., Any], name: str, body: Any,
                owner: Mapping[str, str]) -> tuple[Any, bool]:
        return self.connection.create_or_adopt(
            create=create, args=(self.kube_namespace,), body=body, owner=owner, read_first=not self.fresh,
            read=lambda: self.connection.read(read, name, self.kube_namespace))

    # --- staging -------------------------------------------------------------------------------
    def plugin_warnings(self) -> tuple[PluginWarning, ...]:
        """The warnings of the Pod the last wait found Ready (``plugin_init.warnings``)."""
        if self.plugins is None or self.ready_pod is None:
            return ()
        outcomes = plugin_init.outcome(self.ready_pod, self.plugins[1])
        return plugin_init.warnings(self.plugins[1], outcomes) if outcomes is not None else ()

    def stage(self) -> None:
        """The revision's ConfigMap, the Agent's ServiceAccount and state claim, and the
        revision's projected Secret when a value lives outside this namespace."""
        core = self.driver.core
        text = self.rendered()
        config_map, created = self._ensure(
            core.create_namespaced_config_map, core.read_namespaced_config_map, self.config_map,
            self.config_map_body(text), self.revision_owner)
        if not created and (config_map.data or {}).get(CONFIG_KEY) != text:
            raise ComputeError("IMMUTABLE_REVISION_CONFIGURATION_CHANGED", retryable=False,
                               message="Immutable AgentRevision gateway configuration cannot change.")
        plugin_data = self.plugin_data()
        if plugin_data is not None:
            found, created = self._ensure(
                core.create_namespaced_config_map, core.read_namespaced_config_map, self.plugin_config_map,
                self.plugin_config_map_body(plugin_data), self.revision_owner)
            if not created and (found.data or {}) != plugin_data:
                raise ComputeError("IMMUTABLE_REVISION_CONFIGURATION_CHANGED", retryable=False)
        self._ensure(core.create_namespaced_service_account, core.read_namespaced_service_account,
                     names.service_account_name(self.revision.agent_id), self.service_account_body(),
                     self.agent_owner)
        self._ensure(core.create_namespaced_persistent_volume_claim, core.read_namespaced_persistent_volume_claim,
                     names.state_claim_name(self.revision.agent_id), self.state_claim_body(), self.agent_owner)
        projected = self.projected_items()
        if projected:
            self._stage_projection(projected)

    def _stage_projection(self, items: list[tuple[str, SecretReference]]) -> None:
        core = self.driver.core
        found = None if self.fresh else self.connection.read_owned(lambda: self.connection.read(
            core.read_namespaced_secret, self.revision_secret, self.kube_namespace), self.revision_owner)
        if found is not None and set(found.data or {}) == {name for name, _ in items}:
            return

        def step(index: int, values: dict[str, str]) -> None:
            if index == len(items):
                body = self.projected_secret_body(values)
                if found is None:
                    existing, created = self._ensure(core.create_namespaced_secret, core.read_namespaced_secret,
                                                     self.revision_secret, body, self.revision_owner)
                    if not created and existing.data != body.data:
                        self.connection.patch(core.patch_namespaced_secret, self.revision_secret,
                                              self.kube_namespace, {"data": body.data})
                else:
                    self.connection.patch(core.patch_namespaced_secret, self.revision_secret, self.kube_namespace,
                                         {"data": body.data})
                return
            name, reference = items[index]
            _with_value(reference, lambda value: step(index + 1, {**values, name: value}))

        step(0, {})

    # --- the gateway ---------------------------------------------------------------------------
    def create_deployment(self) -> None:
        apps = self.driver.apps
        found, created = self._ensure(apps.create_namespaced_deployment, apps.read_namespaced_deployment,
                                      self.gateway, self.deployment_body(), self.agent_owner)
        if created:
            # No Pod of a Deployment is older than its create answer: the wait watches from it.
            self.created_version = found.metadata.resource_version

    def check_config_unchanged(self, deployment: client.V1Deployment) -> None:
        volumes = deployment.spec.template.spec.volumes or []
        mounted = next((v.config_map.name for v in volumes if v.config_map is not None and v.name == "config"), None)
        if mounted is not None and mounted != self.config_map:
            raise ComputeError("IMMUTABLE_REVISION_CONFIGURATION_CHANGED", retryable=False)

    def _patch_deployment(self, change: Callable[[client.V1Deployment], dict[str, Any] | None]) -> None:
        """Read, decide, patch with the resourceVersion read: a conflict (someone else wrote in
        between) reads again and decides again, a bounded number of times."""
        apps = self.driver.apps
        for _ in range(CONFLICT_ATTEMPTS):
            current = self.read_deployment()
            if current is None:
                raise ComputeError("GATEWAY_DEPLOYMENT_MISSING", retryable=True)
            patch = change(current)
            if patch is None:
                return
            patch.setdefault("metadata", {})["resourceVersion"] = current.metadata.resource_version
            try:
                self.connection.patch(apps.patch_namespaced_deployment, self.gateway, self.kube_namespace, patch)
                return
            except ApiException as exc:
                if exc.status != 409:
                    raise
                logger.info("kubernetes: %s changed under us (stale resourceVersion); reading again", self.gateway)
        raise ComputeError("KUBERNETES_CONFLICT", retryable=True)

    def replace_template(self, *, expected: str) -> None:
        template = self.driver.connection.api_client.sanitize_for_serialization(self.pod_template())
        # A merge patch keeps what it does not name: a revision without plugins drops the init step.
        template["spec"].setdefault("initContainers", None)
        previous = None

        def change(current: client.V1Deployment) -> dict[str, Any] | None:
            nonlocal previous
            serving = _serving(current)
            if serving is not None and serving[1] == self.revision.id:
                return None  # done already (by us, before a conflict or a lost answer)
            if serving is None or serving[1] != expected:
                raise ComputeError("STALE_REVISION", retryable=False)
            previous = serving
            annotations = {**self.deployment_annotations(), PREVIOUS_REVISION: str(serving[0]),
                           PREVIOUS_REVISION_ID: serving[1]}
            # A merge patch replaces lists whole: the container, env and volumes are exactly ours.
            return {"metadata": {"annotations": annotations},
                    "spec": {"replicas": 1, "template": template}}

        self._patch_deployment(change)

    def previous_from_annotations(self) -> tuple[int, str] | None:
        current = self.read_deployment()
        annotations = (current.metadata.annotations or {}) if current is not None else {}
        number, revision_id = annotations.get(PREVIOUS_REVISION), annotations.get(PREVIOUS_REVISION_ID)
        if not number or not revision_id or not number.isdigit():
            return None
        return int(number), revision_id

    def roll_back(self, previous: tuple[int, str]) -> None:
        """Put the predecessor's template back (its ConfigMap is still staged): the revision that
        never became Ready does not take the gateway down with it."""
        number, revision_id = previous
        previous_plan = _Plan(self.driver, RevisionRef(
            id=revision_id, namespace_id=self.revision.namespace_id, agent_id=self.revision.agent_id, number=number,
            spec=RevisionSpec()), None)
        previous_plan.kube_namespace = self.kube_namespace
        config_map = self.connection.read(self.driver.core.read_namespaced_config_map, previous_plan.config_map,
                                          self.kube_namespace)
        current = self.read_deployment()
        if config_map is None or current is None:
            return
        # The predecessor's environment is the one its Pods had: the env of the current template
        # with the revision's own projection swapped for the predecessor's.
        template = self.driver.connection.api_client.sanitize_for_serialization(current.spec.template)
        template["metadata"]["labels"][names.REVISION_LABEL] = revision_id
        template["metadata"]["annotations"][names.REVISION_ANNOTATION] = revision_id
        previous_plugins = self.connection.read(self.driver.core.read_namespaced_config_map,
                                                previous_plan.plugin_config_map, self.kube_namespace)
        volumes = []
        for volume in template["spec"]["volumes"]:
            if volume["name"] == "config":
                volume["configMap"]["name"] = previous_plan.config_map
            elif volume["name"] == "plugins":
                if previous_plugins is None:
                    continue
                volume["configMap"]["name"] = previous_plan.plugin_config_map
            volumes.append(volume)
        template["spec"]["volumes"] = volumes
        if previous_plugins is None:
            template["spec"]["initContainers"] = None
        elif not template["spec"].get("initContainers"):
            # The predecessor installs plugins and this revision does not: its init step again.
            gateway = self.pod_template().spec.containers[0]
            template["spec"]["initContainers"] = self.driver.connection.api_client.sanitize_for_serialization(
                [self.plugin_init_container(gateway)])
            template["spec"]["volumes"].append({"name": "plugins", "configMap": {
                "name": previous_plan.plugin_config_map}})
        for container in template["spec"]["containers"]:
            for variable in container.get("env") or []:
                ref = (variable.get("valueFrom") or {}).get("secretKeyRef")
                if ref and ref.get("name") == self.revision_secret:
                    ref["name"] = previous_plan.revision_secret
                if variable.get("name") == "OPENCLAW_CONFIG_PATH":
                    # With plugins the gateway reads the config its init step wrote.
                    variable["value"] = (EFFECTIVE_CONFIG if previous_plugins is not None
                                         else f"{CONFIG_DIR}/{CONFIG_KEY}")
        annotations = {**self.agent_annotations, names.DEPLOYMENT_REVISION: str(number),
                       names.DEPLOYMENT_REVISION_ID: revision_id, PREVIOUS_REVISION: None,
                       PREVIOUS_REVISION_ID: None}

        def change(deployment: client.V1Deployment) -> dict[str, Any] | None:
            serving = _serving(deployment)
            if serving is None or serving[1] != self.revision.id:
                return None
            return {"metadata": {"annotations": annotations}, "spec": {"template": template}}

        self._patch_deployment(change)
        logger.warning("kubernetes: %s never became ready on revision %s; revision %s put back",
                       self.gateway, self.revision.id, revision_id)

    def scale(self, replicas: int) -> None:
        self._patch_deployment(lambda current: None if (current.spec.replicas or 0) == replicas
                               else {"spec": {"replicas": replicas}})

    def ensure_service(self, *, active: bool, force: bool = False) -> None:
        """The gateway Service: created on the inactive selector; switched to the gateway's
        Pods only by activation (``active``), back by stop (``force``)."""
        core = self.driver.core
        wanted = self.gateway if active else names.inactive_selector_value(self.revision.agent_id)
        service, _ = self._ensure(core.create_namespaced_service, core.read_namespaced_service, self.gateway,
                                  self.service_body(wanted), self.agent_owner)
        if (active or force) and (service.spec.selector or {}).get(names.NAME_LABEL) != wanted:
            self.connection.patch(core.patch_namespaced_service, self.gateway, self.kube_namespace,
                                 {"spec": {"selector": {names.NAME_LABEL: wanted}}})

    def ensure_runtime_policy(self) -> None:
        networking = self.driver.networking
        self._ensure(networking.create_namespaced_network_policy, networking.read_namespaced_network_policy,
                     names.runtime_policy_name(self.revision.agent_id), self.runtime_policy_body(), self.agent_owner)

    # --- readiness -----------------------------------------------------------------------------
    def _pod_selector(self) -> str:
        return names.owner_selector({**self.revision_owner, names.ROLE_LABEL: "gateway"})

    def _live_revision_pods(self, pods: Iterable[client.V1Pod]) -> list[client.V1Pod]:
        return [pod for pod in pods if pod.metadata.deletion_timestamp is None and any(
            v.config_map is not None and v.name == "config" and v.config_map.name == self.config_map
            for v in (pod.spec.volumes or []))]

    def revision_pods(self) -> list[client.V1Pod]:
        pods = self.connection.call(self.driver.core.list_namespaced_pod, self.kube_namespace,
                                    label_selector=self._pod_selector()).items
        return self._live_revision_pods(pods)

    def _one_ready(self, pods: list[client.V1Pod]) -> bool:
        """Exactly one live Pod of this revision, mounting its ConfigMap, Ready; with plugins,
        its init step's outcome for this very spec read back (missing or another spec's cannot
        establish readiness). That Pod is kept in ``ready_pod``."""
        if len(pods) != 1:
            return False
        conditions = {c.type: c.status for c in (pods[0].status.conditions or [])}
        if conditions.get("Ready") != "True":
            return False
        if self.plugins is not None and plugin_init.outcome(pods[0], self.plugins[1]) is None:
            return False
        self.ready_pod = pods[0]
        return True

    def revision_ready(self) -> bool:
        return self._one_ready(self.revision_pods())

    def wait_ready(self, timeout: float) -> bool:
        """Whether the revision's Pod is Ready (``revision_ready``) within ``timeout``: one list of
        the revision's gateway Pods, then a watch from that list's resourceVersion, each change
        looked at as it arrives (no polling). A Deployment this plan has just created has no Pod
        yet: its create answer stands for that list (the watch starts from its resourceVersion),
        so a first wait costs no read before the watch, and none at all with ``timeout`` 0. A
        watch that ends, expires (410), fails with a 5xx or loses its connection lists again
        (after ``ready_poll`` when it failed); a refusal (403) is raised."""
        core = self.driver.core
        deadline = time.monotonic() + timeout
        since, self.created_version = self.created_version, None
        while True:
            pods: dict[str, client.V1Pod] = {}
            if since is None:
                listed = self.connection.call(core.list_namespaced_pod, self.kube_namespace,
                                              label_selector=self._pod_selector())
                pods = {pod.metadata.name: pod for pod in listed.items}
                since = listed.metadata.resource_version
                if self._one_ready(self._live_revision_pods(pods.values())):
                    return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            watched_from, since = since, None
            try:
                for event in watch.Watch().stream(
                        core.list_namespaced_pod, self.kube_namespace, label_selector=self._pod_selector(),
                        resource_version=watched_from, timeout_seconds=max(1, int(remaining)),
                        _request_timeout=(self.connection.settings.connect_timeout, remaining + 5)):
                    pod = event["object"]
                    if event["type"] == "DELETED":
                        pods.pop(pod.metadata.name, None)
                    elif event["type"] in ("ADDED", "MODIFIED"):
                        pods[pod.metadata.name] = pod
                    if self._one_ready(self._live_revision_pods(pods.values())):
                        return True
                    if time.monotonic() >= deadline:
                        return False
            except ApiException as exc:
                if exc.status != 410 and exc.status not in RETRYABLE_STATUS:
                    raise  # refused (403: the RBAC lacks watch), not a watch that ran out
                logger.info("kubernetes: the watch of %s's Pods ended (%s); listing again", self.gateway, exc.status)
                time.sleep(self.driver.ready_poll)
            except LOST:
                logger.info("kubernetes: the watch of %s's Pods broke off; listing again", self.gateway)
                time.sleep(self.driver.ready_poll)
            if time.monotonic() >= deadline:
                return False
