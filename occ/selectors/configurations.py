from __future__ import annotations

from typing import Any

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import Configuration
from occ.services.checks import get_live_namespace


def configuration_get(*, actor: Actor, namespace_id: str, configuration_id: str) -> Configuration:
    """The Configuration under its exact Namespace (404 otherwise), if the actor may read it."""
    namespace = get_live_namespace(namespace_id)
    configuration = Configuration.objects.filter(namespace=namespace, id=configuration_id).first()
    if configuration is None:
        raise NotFound("The configuration does not exist.")
    authorize(actor, Action.READ, Kind.CONFIGURATION, namespace_id=namespace.id, resource_id=configuration.id)
    return configuration


def configuration_secret_bindings(configuration: Configuration) -> dict[str, dict[str, Any]]:
    """The wire form of the relational bindings: ``{ENV_NAME: {source, delivery}}``.

    Every bound Secret lives in the Configuration's Namespace, so no join is needed.
    """
    return {
        binding.env_name: {
            "source": {"kind": "secret", "namespaceId": configuration.namespace_id, "id": binding.secret_id},
            "delivery": {"type": binding.delivery},
        }
        for binding in sorted(configuration.secret_bindings.all(), key=lambda b: b.env_name)
    }
