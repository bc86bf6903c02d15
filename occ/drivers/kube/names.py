"""Names, labels and annotations of every object the Kubernetes drivers manage.

Names are derived from OCC's ids by hashing (``<h>`` = the first 12 hex digits of sha256); label
values carry the raw ids (ours are DNS-label safe: ``agt_<uuid4>``). Every managed object carries
``app.kubernetes.io/managed-by=openclaw-enterprise`` and ``openclaw.dev/namespace=<namespaceId>``;
the drivers adopt or delete nothing without them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY = "openclaw-enterprise"
NAMESPACE_LABEL = "openclaw.dev/namespace"
AGENT_LABEL = "openclaw.dev/agent"
REVISION_LABEL = "openclaw.dev/revision"
SECRET_LABEL = "openclaw.dev/secret"
ROLE_LABEL = "openclaw.dev/workload-role"
PROFILE_LABEL = "openclaw.dev/network-profile"
NAME_LABEL = "app.kubernetes.io/name"
NAMESPACE_ANNOTATION = "openclaw.dev/namespace-id"
AGENT_ANNOTATION = "openclaw.dev/agent-id"
REVISION_ANNOTATION = "openclaw.dev/revision-id"
DEPLOYMENT_REVISION = "openclaw.dev/agent-revision"
DEPLOYMENT_REVISION_ID = "openclaw.dev/agent-revision-id"
LIFECYCLE_ANNOTATION = "openclaw.dev/namespace-lifecycle"
BROAD_EGRESS = "broad-egress-v1"
PSA_LABELS = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}


def sha_hex(value: str, length: int = 12) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:length]


def tenant_namespace(namespace_id: str) -> str:
    return "oce-" + sha_hex(namespace_id, 15)


def owner_labels(namespace_id: str, *, agent_id: str | None = None, revision_id: str | None = None
                 ) -> dict[str, str]:
    labels = {MANAGED_BY_KEY: MANAGED_BY, NAMESPACE_LABEL: namespace_id}
    if agent_id:
        labels[AGENT_LABEL] = agent_id
    if revision_id:
        labels[REVISION_LABEL] = revision_id
    return labels


def owner_annotations(namespace_id: str, *, agent_id: str | None = None, revision_id: str | None = None
                      ) -> dict[str, str]:
    annotations = {NAMESPACE_ANNOTATION: namespace_id}
    if agent_id:
        annotations[AGENT_ANNOTATION] = agent_id
    if revision_id:
        annotations[REVISION_ANNOTATION] = revision_id
    return annotations


def owner_selector(labels: dict[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


# --- per Agent and revision ----------------------------------------------------------------------


def gateway_name(agent_id: str) -> str:
    return f"gateway-{sha_hex(agent_id)}"


def inactive_selector_value(agent_id: str) -> str:
    return f"{gateway_name(agent_id)}-inactive"


def config_map_name(agent_id: str, revision_id: str) -> str:
    return f"gateway-{sha_hex(agent_id)}-rev-{sha_hex(revision_id)}"


def plugin_config_map_name(agent_id: str, revision_id: str) -> str:
    """The revision's plugin install spec (non-secret), mounted by the gateway Pod's init step."""
    return f"{config_map_name(agent_id, revision_id)}-plugins"


def service_account_name(agent_id: str) -> str:
    return f"agent-{sha_hex(agent_id)}"


def state_claim_name(agent_id: str) -> str:
    return f"gateway-state-{sha_hex(agent_id)}"


def runtime_policy_name(agent_id: str) -> str:
    return f"allow-agent-runtime-{sha_hex(agent_id)}"


def transport_secret_name(agent_id: str) -> str:
    return f"openclaw-agent-transport-{sha_hex(agent_id)}"


def revision_secret_name(agent_id: str, revision_id: str) -> str:
    return f"revision-secrets-{sha_hex(agent_id)}-{sha_hex(revision_id)}"


def occ_secret_name(secret_id: str) -> str:
    """The Kubernetes Secret holding one OCC Secret's value (key ``value``)."""
    return "occ-" + secret_id.replace("_", "-")


def labels_match(found: Mapping[str, str] | None, expected: Mapping[str, str]) -> bool:
    """Whether ``found`` carries every label of ``expected`` with the same value."""
    found = found or {}
    return all(found.get(key) == value for key, value in expected.items())


def labels_match_namespace(found: Mapping[str, str] | None, namespace_id: str) -> bool:
    return labels_match(found, owner_labels(namespace_id))
