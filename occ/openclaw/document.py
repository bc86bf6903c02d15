"""Reading and starting the native OpenClaw document (``openclaw.json`` as a user writes it).

The primary model is ``agents.defaults.model``: either "provider/model" or an object whose
``primary`` is. Its provider decides where the harness model key goes: the runtime reads
``OPENAI_API_KEY``/``ANTHROPIC_API_KEY`` for its built-in providers, and a custom provider
(``models.providers.<id>``) gets the key as ``${OCC_MODEL_API_KEY}`` in its ``apiKey``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# With no primary model configured the runtime uses an OpenAI model.
DEFAULT_PROVIDER = "openai"
BUILTIN_PROVIDER_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
CUSTOM_PROVIDER_KEY_ENV = "OCC_MODEL_API_KEY"
# The id of an OpenAI-compatible endpoint in ``models.providers`` (and its model reference prefix).
COMPATIBLE_PROVIDER_ID = "compatible"
COMPATIBLE_API = "openai-completions"


def primary_model(document: object) -> object:
    """``agents.defaults.model`` (or its ``primary``) as written: any JSON value, or None."""
    agents = document.get("agents") if isinstance(document, Mapping) else None
    defaults = agents.get("defaults") if isinstance(agents, Mapping) else None
    model = defaults.get("model") if isinstance(defaults, Mapping) else None
    return model.get("primary") if isinstance(model, Mapping) else model


def primary_model_ref(document: object) -> str | None:
    """The primary model reference ("provider/model"), or None when none is written."""
    model = primary_model(document)
    return model if isinstance(model, str) and model else None


def primary_provider(document: object) -> str:
    """The provider id of the primary model; the runtime's default when none is named."""
    model = primary_model(document)
    if isinstance(model, str) and "/" in model:
        return model.split("/", 1)[0]
    return DEFAULT_PROVIDER


def custom_providers(document: object) -> Mapping[str, Any]:
    """``models.providers``: the providers the document defines itself."""
    models = document.get("models") if isinstance(document, Mapping) else None
    providers = models.get("providers") if isinstance(models, Mapping) else None
    return providers if isinstance(providers, Mapping) else {}


def primary_endpoint(document: object) -> tuple[str, str | None] | None:
    """The primary model's ``baseUrl`` and ``api`` when the document defines its provider
    itself (``models.providers.<id>``) with a base URL; None for the runtime's built-ins."""
    defined = custom_providers(document).get(primary_provider(document))
    if not isinstance(defined, Mapping):
        return None
    base, api = defined.get("baseUrl"), defined.get("api")
    if not isinstance(base, str) or not base.strip():
        return None
    return base.strip(), api if isinstance(api, str) else None


def model_key_env(document: object) -> str | None:
    """Where the harness model key goes for this document, or None when we cannot deliver it."""
    provider = primary_provider(document)
    if provider in custom_providers(document):
        return CUSTOM_PROVIDER_KEY_ENV
    return BUILTIN_PROVIDER_KEY_ENV.get(provider)


def agent_template(*, provider: str, model: str, base_url: str = "") -> dict[str, Any]:
    """A new Agent's document for ``provider`` ("openai", "anthropic" or ``COMPATIBLE_PROVIDER_ID``)
    and ``model``. No credential ever: the model key reaches the gateway from the harness Secret."""
    defaults: dict[str, Any] = {"skipBootstrap": True}
    if model:
        defaults["model"] = {"primary": f"{provider}/{model}"}
    values: dict[str, Any] = {"agents": {"defaults": defaults}}
    if provider == COMPATIBLE_PROVIDER_ID:
        values["models"] = {"mode": "merge", "providers": {COMPATIBLE_PROVIDER_ID: {
            "baseUrl": base_url, "api": COMPATIBLE_API,
            "models": [{"id": model, "name": model}] if model else [],
        }}}
    return values
