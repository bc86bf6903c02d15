"""Model providers: discovering which models an API key can use (``discovery``)."""

from occ.drivers.model_providers.discovery import (
    PROVIDERS,
    DiscoveredModel,
    DiscoveryTarget,
    ModelDiscoveryCredentialsRejected,
    ModelDiscoveryError,
    ModelDiscoveryInvalidResponse,
    ModelDiscoveryRateLimited,
    ModelDiscoveryUnavailable,
    ModelDiscoveryUnsupportedProvider,
    discover_models,
    discovery_target,
    is_usable_api_key,
)

__all__ = [
    "PROVIDERS",
    "DiscoveredModel",
    "DiscoveryTarget",
    "ModelDiscoveryCredentialsRejected",
    "ModelDiscoveryError",
    "ModelDiscoveryInvalidResponse",
    "ModelDiscoveryRateLimited",
    "ModelDiscoveryUnavailable",
    "ModelDiscoveryUnsupportedProvider",
    "discover_models",
    "discovery_target",
    "is_usable_api_key",
]
