"""The runtime config a compute driver writes: the user's document with the driver-owned keys
forced (how the gateway listens and who may reach it, where it logs and works, no login-shell
environment, trusted channel plugins, the custom provider's key reference).

The user's document never holds those gateway keys (``validation.DRIVER_OWNED_GATEWAY_KEYS``),
so every key the user wrote reaches the runtime unchanged, and validating the document as the
user wrote it is validating what the runtime reads of it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from occ.openclaw.document import CUSTOM_PROVIDER_KEY_ENV, custom_providers, primary_provider

# Channel plugins openclaw must be told to trust before it starts a configured channel.
TRUSTED_CHANNEL_PLUGINS = ("slack",)


def _object(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


# The agent harness OCC's gateways run every model on unless the document names one: the runtime's
# own embedded one. Left implicit, the runtime picks a harness plugin for some built-in providers
# (openai's models run on "codex") and, that plugin not being bundled, installs it from the npm
# registry at start: a gateway with no way out (a Pod; an offline host) then fails to start
# ("gateway requires state migration", exit 78), and one with a way out fetches code at run time.
EMBEDDED_HARNESS = "openclaw"
PLUGIN_HARNESS_PROVIDERS = frozenset({"openai"})


def _pin_embedded_harness(config: dict[str, Any]) -> None:
    """``agents.defaults.models.<ref>.agentRuntime.id`` = ``EMBEDDED_HARNESS`` for the primary and
    fallback models of a ``PLUGIN_HARNESS_PROVIDERS`` provider, where the document names no
    harness for that model itself; what the document wrote is kept."""
    agents = config.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    model = defaults.get("model") if isinstance(defaults, dict) else None
    refs: list[object] = [model]
    if isinstance(model, dict):
        refs = [model.get("primary"), *(model.get("fallbacks") or [])]
    for ref in refs:
        if not isinstance(ref, str) or "/" not in ref or ref.split("/", 1)[0] not in PLUGIN_HARNESS_PROVIDERS:
            continue
        entry = _object(_object(_object(config, "agents"), "defaults"), "models")
        chosen = _object(entry, ref)
        if not isinstance(chosen.get("agentRuntime"), dict):
            chosen["agentRuntime"] = {"id": EMBEDDED_HARNESS}


def env_secret_ref(name: str) -> dict[str, str]:
    """A SecretRef the runtime resolves from its environment variable ``name``."""
    return {"source": "env", "provider": "default", "id": name}


def _trust_enabled_channel_plugins(config: dict[str, Any]) -> None:
    """openclaw leaves a bundled channel plugin off unless it is trusted explicitly
    (``plugins.entries.<id>.enabled``), even when the channel is configured. A channel OCC
    checked credentials for (``TRUSTED_CHANNEL_PLUGINS``) and the document enables is trusted
    here; an explicit ``enabled`` in the document, either way, is kept."""
    channels = config.get("channels")
    if not isinstance(channels, dict):
        return
    for channel in TRUSTED_CHANNEL_PLUGINS:
        settings_ = channels.get(channel)
        if not isinstance(settings_, dict) or settings_.get("enabled") is False:
            continue
        entry = _object(_object(_object(config, "plugins"), "entries"), channel)
        entry.setdefault("enabled", True)


def render_runtime_config(document: Mapping[str, Any], *, port: int, password_env: str, workspace: str,
                          log_file: str, deliver_model_key: bool) -> dict[str, Any]:
    """The gateway's ``openclaw.json``: loopback on ``port``, password auth from the environment
    variable ``password_env``, the OpenAI-compatible HTTP endpoint on, ``log_file`` and
    ``workspace``; with ``deliver_model_key`` a custom primary provider reads
    ``${OCC_MODEL_API_KEY}``. No secret value is ever written here."""
    config = copy.deepcopy(dict(document))
    gateway = _object(config, "gateway")
    gateway.update({"mode": "local", "bind": "loopback", "port": port,
                    "auth": {"mode": "password", "password": env_secret_ref(password_env)}})
    gateway.pop("customBindHost", None)
    _object(_object(_object(gateway, "http"), "endpoints"), "chatCompletions")["enabled"] = True
    _object(config, "logging")["file"] = log_file
    _object(_object(config, "agents"), "defaults")["workspace"] = workspace
    _object(_object(config, "env"), "shellEnv")["enabled"] = False
    _trust_enabled_channel_plugins(config)
    _pin_embedded_harness(config)
    provider = primary_provider(config)
    if deliver_model_key and provider in custom_providers(config):
        _object(_object(config, "models"), "providers")[provider]["apiKey"] = "${" + CUSTOM_PROVIDER_KEY_ENV + "}"
    return config


# The identity OCC's own trusted proxy asserts (``x-occ-identity``) when it reaches a gateway.
TRUSTED_PROXY_USER_HEADER = "x-occ-identity"
# The one identity OCC's proxy speaks as (the console's Chat, workspace files).
TRUSTED_PROXY_IDENTITY = "occ-workspace-files"
TRUSTED_PROXY_IDENTITY_SCOPES = {TRUSTED_PROXY_IDENTITY: ["operator.admin"]}


def render_cluster_config(document: Mapping[str, Any], *, port: int, trusted_proxy_cidrs: list[str],
                          password_env: str, workspace: str, deliver_model_key: bool) -> dict[str, Any]:
    """The ``openclaw.json`` of a gateway in a cluster (the Kubernetes driver): listening on the
    Pod's network on ``port``, trusted-proxy auth for OCC's proxy (``trusted_proxy_cidrs``, the
    identity in ``x-occ-identity``, loopback not trusted), the password from ``password_env`` for
    loopback operator access (the TUI inside the Pod), logs on stdout for the Pod log API. As in
    ``render_runtime_config``, no secret value is ever written here."""
    config = copy.deepcopy(dict(document))
    gateway = _object(config, "gateway")
    gateway.update({
        "mode": "local", "bind": "lan", "port": port, "trustedProxies": list(trusted_proxy_cidrs),
        "allowRealIpFallback": True,
        "auth": {"mode": "trusted-proxy", "password": env_secret_ref(password_env),
                 "trustedProxy": {"userHeader": TRUSTED_PROXY_USER_HEADER, "allowLoopback": False},
                 "identityScopes": copy.deepcopy(TRUSTED_PROXY_IDENTITY_SCOPES)},
    })
    gateway.pop("customBindHost", None)
    _object(_object(_object(gateway, "http"), "endpoints"), "chatCompletions")["enabled"] = True
    _object(_object(config, "agents"), "defaults")["workspace"] = workspace
    _object(_object(config, "env"), "shellEnv")["enabled"] = False
    _trust_enabled_channel_plugins(config)
    _pin_embedded_harness(config)
    provider = primary_provider(config)
    if deliver_model_key and provider in custom_providers(config):
        _object(_object(config, "models"), "providers")[provider]["apiKey"] = "${" + CUSTOM_PROVIDER_KEY_ENV + "}"
    return config
