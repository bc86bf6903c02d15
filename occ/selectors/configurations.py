from __future__ import annotations

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


def configuration_secret_ids(configuration: Configuration) -> dict[str, str]:
    """The Configuration's bindings: ``{ENV_NAME: Secret id}``, by name."""
    return {binding.env_name: binding.secret_id
            for binding in sorted(configuration.secret_bindings.all(), key=lambda b: b.env_name)}
