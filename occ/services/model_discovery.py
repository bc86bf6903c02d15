"""Model discovery for the Create Agent form: which models a key can use, asked of the provider.

The key is typed (``apiKey``) or read from a Secret of the same Namespace (``secretRef``).
Nothing is stored. A Secret's value is read only after the caller's ``secret:operate`` on
that exact Secret is checked, and each read is recorded first as one ``access`` audit event
(the Secret's id, never its value), then handed to the discovery for the duration of the
call (the SecretDriver's ``with_value``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.db import transaction

from occ.drivers.model_providers import (
    DiscoveredModel,
    DiscoveryTarget,
    ModelDiscoveryCredentialsRejected,
    discover_models,
    discovery_target,
    is_usable_api_key,
)
from occ.errors import DetailCode, InvalidRequest
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.ids import IdPrefix, is_valid_id
from occ.models import AuditKind, Secret
from occ.selectors.secrets import get_user_secret
from occ.services.audit import audit_record
from occ.services.checks import get_live_namespace
from occ.services.secrets import secret_value_use

SECRET_USE_ACTION = "openclaw.secrets.value.use"


@dataclass(frozen=True)
class ModelList:
    provider: str
    models: list[DiscoveredModel]


def check_api_key(api_key: str) -> str:
    if not is_usable_api_key(api_key):
        # The message never repeats the key.
        raise InvalidRequest.at("/apiKey", DetailCode.INVALID_FORMAT,
                                "The API key must be 8 to 4,096 printable ASCII characters without spaces.")
    return api_key


def check_secret_ref(secret_ref: Mapping[str, str] | None, *, namespace_id: str) -> str:
    """The id of the referenced Secret, which must be in this Namespace."""
    if secret_ref is None:
        raise InvalidRequest.at("/secretRef", DetailCode.REQUIRED, "Send apiKey or secretRef.")
    if secret_ref.get("namespaceId") != namespace_id:
        raise InvalidRequest.at("/secretRef/namespaceId", DetailCode.INVALID_VALUE,
                                "The Secret must belong to this Namespace.")
    secret_id = secret_ref.get("id", "")
    if not is_valid_id(secret_id, IdPrefix.SECRET):
        raise InvalidRequest.at("/secretRef/id", DetailCode.INVALID_FORMAT, "id must be a Secret id (sec_...).")
    return secret_id


def models_discover(*, actor: Actor, namespace_id: str, provider: str, api_key: str | None = None,
                    secret_ref: Mapping[str, str] | None = None, base_url: str | None = None) -> ModelList:
    """List the models a key can use: a typed ``api_key``, or the value of the Secret that
    ``secret_ref`` names (exactly one). Needs ``agent:create`` on the Namespace and, for a
    Secret, ``secret:operate`` on it; both are checked before anything is read or sent."""
    if (api_key is None) == (secret_ref is None):
        raise InvalidRequest.at("", DetailCode.REQUIRED, "Send exactly one of apiKey and secretRef.")
    if api_key is not None:
        check_api_key(api_key)
        namespace = get_live_namespace(namespace_id)
        authorize(actor, Action.CREATE, Kind.AGENT, namespace_id=namespace.id)
        target = discovery_target(provider, base_url)
        return ModelList(provider=target.provider, models=discover_models(target, api_key))
    secret_id = check_secret_ref(secret_ref, namespace_id=namespace_id)
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.CREATE, Kind.AGENT, namespace_id=namespace.id)
    secret = get_user_secret(namespace, secret_id)
    authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
    target = discovery_target(provider, base_url)
    return ModelList(provider=target.provider, models=_discover_with_secret(actor, secret, target))


def _discover_with_secret(actor: Actor, secret: Secret, target: DiscoveryTarget) -> list[DiscoveredModel]:
    with transaction.atomic():
        audit_record(actor=actor, kind=AuditKind.ACCESS, action=SECRET_USE_ACTION, namespace_id=secret.namespace_id,
                     resource_kind=Kind.SECRET, resource_id=secret.id,
                     details={"name": secret.name, "purpose": "model_discovery", "provider": target.provider})

    def discover(value: str) -> list[DiscoveredModel]:
        api_key = value.strip()  # a trailing newline is a common paste artefact
        if not is_usable_api_key(api_key):
            raise ModelDiscoveryCredentialsRejected(
                "The Secret's value is not an API key (8 to 4,096 printable ASCII characters without spaces). "
                "Check the Secret, or enter the model ID manually.")
        return discover_models(target, api_key)

    return secret_value_use(secret=secret, consumer=discover)
