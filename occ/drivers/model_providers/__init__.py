"""Model providers: discovering which models an API key or a service account token can use
(``discovery``)."""

from occ.drivers.model_providers.discovery import (
    AUTH_METHODS,
    PROVIDERS,
    DiscoveredModel,
    DiscoveryTarget,
    ModelDiscoveryCredentialsRejected,
    ModelDiscoveryError,
    ModelDiscoveryInvalidResponse,
    ModelDiscoveryRateLimited,
    ModelDiscoveryUnavailable,
    ModelDiscoveryUnsupportedProvider,
    discover_codex_models,
    discover_models,
    discovery_target,
    is_usable_api_key,
    is_usable_codex_token,
)

__all__ = [
    "AUTH_METHODS",
    "PROVIDERS",
    "DiscoveredModel",
    "DiscoveryTarget",
    "ModelDiscoveryCredentialsRejected",
    "ModelDiscoveryError",
    "ModelDiscoveryInvalidResponse",
    "ModelDiscoveryRateLimited",
    "ModelDiscoveryUnavailable",
    "ModelDiscoveryUnsupportedProvider",
    "discover_codex_models",
    "discover_models",
    "discovery_target",
    "is_usable_api_key",
    "is_usable_codex_token",
]
