"""Model discovery for the Create Agent form: which models a key can use, asked of the provider.

The key is typed (``apiKey``) or read from a Secret of the same Namespace (``secretRef``); it is
an API key, or with ``authMethod`` ``codex_pat`` a ChatGPT workspace's service account token.
Nothing is stored. A Secret's value is read only after the caller's ``secret:operate`` on
that exact Secret is checked, and each read is recorded first as one ``access`` audit event
(the Secret's id, never its value), then handed to the discovery for the duration of the
call (the SecretDriver's ``with_value``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from occ.commands.model_discovery import ModelDiscovery
from occ.drivers.model_providers import (
    DiscoveredModel,
    ModelDiscoveryCredentialsRejected,
    discover_codex_models,
    discover_models,
    discovery_target,
    is_usable_api_key,
    is_usable_codex_token,
)
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import AuditKind, Secret
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.secrets import get_user_secret
from occ.services.audit import audit_record
from occ.services.secrets import secret_value_use

SECRET_USE_ACTION = "openclaw.secrets.value.use"


@dataclass(frozen=True)
class ModelList:
    provider: str
    models: list[DiscoveredModel]


def models_discover(*, actor: Actor, namespace_id: str, command: ModelDiscovery) -> ModelList:
    """List the models a key can use: a typed API key, or the value of the Secret that the
    command references. Needs ``agent:create`` on the Namespace and, for a Secret,
    ``secret:operate`` on it; both are checked before anything is read or sent."""
    command.check_namespace(namespace_id)
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.CREATE, Kind.AGENT, namespace_id=namespace.id)
    discover = _discoverer(command)
    if command.api_key is not None:
        return ModelList(provider=command.provider, models=discover(command.api_key))
    assert command.secret_ref is not None  # exactly one of the two
    secret = get_user_secret(namespace, command.secret_ref.id)
    authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
    return ModelList(provider=command.provider, models=_discover_with_secret(actor, secret, command, discover))


def _discoverer(command: ModelDiscovery) -> Callable[[str], list[DiscoveredModel]]:
    """The discovery of the command's method; the target is resolved (and an unknown provider or
    a custom endpoint refused) before any credential is read."""
    if command.auth_method == "codex_pat":
        return discover_codex_models
    target = discovery_target(command.provider, command.base_url)
    return lambda api_key: discover_models(target, api_key)


def _discover_with_secret(actor: Actor, secret: Secret, command: ModelDiscovery,
                          discover: Callable[[str], list[DiscoveredModel]]) -> list[DiscoveredModel]:
    with transaction.atomic():
        audit_record(actor=actor, kind=AuditKind.ACCESS, action=SECRET_USE_ACTION, namespace_id=secret.namespace_id,
                     resource_kind=Kind.SECRET, resource_id=secret.id,
                     details={"name": secret.name, "purpose": "model_discovery", "provider": command.provider,
                              "authMethod": command.auth_method})

    def with_value(value: str) -> list[DiscoveredModel]:
        credential = value.strip()  # a trailing newline is a common paste artefact
        if command.auth_method == "codex_pat" and not is_usable_codex_token(credential):
            raise ModelDiscoveryCredentialsRejected(
                "The Secret's value is not a service account token (at- and printable ASCII without spaces). "
                "Check the Secret, or enter the model ID manually.")
        if command.auth_method == "api_key" and not is_usable_api_key(credential):
            raise ModelDiscoveryCredentialsRejected(
                "The Secret's value is not an API key (8 to 4,096 printable ASCII characters without spaces). "
                "Check the Secret, or enter the model ID manually.")
        return discover(credential)

    return secret_value_use(secret=secret, consumer=with_value)
