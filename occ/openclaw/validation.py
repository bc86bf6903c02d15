"""Pure validators for Configuration documents (spec §1.5).

They touch no database: the Configuration services, the provisioning admission (which
carries an inline configuration) and deploy call them, passing the JSON pointer where the
document sits in their own request body. Each ``check_*`` raises ``InvalidRequest`` listing
every problem it found, each with its pointer, so a form can mark all of them at once.

``check_configuration_values`` applies OCC's own rules (shape, prototype keys, depth, model
providers, the gateway keys the compute driver owns) and then the pinned OpenClaw runtime's
own config schema (``occ.openclaw.schema``), to the document as the user wrote it: the driver
only adds the keys it owns (``occ.openclaw.render``), so what the user wrote is what the
runtime reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from occ.errors import Detail, DetailCode, InvalidRequest
from occ.openclaw.schema import schema_problems

# Deepest allowed nesting of a ``values`` document; ``values`` itself is level 1.
MAX_VALUES_DEPTH = 24
# Keys that mean something to JavaScript object prototypes; the runtime is Node.
FORBIDDEN_KEYS = frozenset({"__proto__", "prototype", "constructor"})

# The wire APIs an OpenClaw model provider may speak (``models.providers.<id>.api``).
MODEL_PROVIDER_APIS = ("openai-responses", "openai-completions", "anthropic-messages", "ollama")

# Gateway settings the compute driver writes itself: how the gateway listens and who may reach it.
DRIVER_OWNED_GATEWAY_KEYS = ("mode", "bind", "port", "auth", "trustedProxies")

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")
RESERVED_ENV_PREFIXES = ("OPENCLAW_", "CODEX_", "OPENAI_", "ANTHROPIC_", "OCC_", "KUBERNETES_")
RESERVED_ENV_NAMES = frozenset({"PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"})

_ENV_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_MAX_DETAILS = 32


@dataclass(frozen=True)
class Problem:
    path: str
    code: str
    message: str


def pointer(*parts: str | int) -> str:
    """A JSON pointer (RFC 6901) from raw reference tokens."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _raise(problems: list[Problem]) -> None:
    if not problems:
        return
    message = problems[0].message if len(problems) == 1 else (
        f"The configuration has {len(problems)} problems; see details. First: {problems[0].message}")
    raise InvalidRequest(message[:256], details=[Detail(p.code, p.path) for p in problems[:_MAX_DETAILS]])


# --- kind and values ------------------------------------------------------------------------

def check_configuration_values(values: object, *, path: str = "/values") -> None:
    """The native OpenClaw document: an object, not too deep, no prototype keys, valid model
    providers, and none of the gateway settings the compute driver owns."""
    _raise(configuration_values_problems(values, path=path))


def configuration_values_problems(values: object, *, path: str = "/values") -> list[Problem]:
    """Every problem ``check_configuration_values`` refuses, each with its own message (the
    console's editor places each one in the text)."""
    if not isinstance(values, Mapping):
        return [Problem(path, DetailCode.INVALID_TYPE, "values must be a JSON object.")]
    problems = list(_shape_problems(values, path, depth=1))
    if not problems:
        # Only a document of sane shape is worth reading for its meaning.
        problems.extend(_model_provider_problems(values, path))
        problems.extend(_gateway_problems(values, path))
        problems.extend(_runtime_schema_problems(values, path, known={p.path for p in problems}))
    return problems


def _runtime_schema_problems(values: Mapping[str, Any], path: str, *, known: set[str]) -> Iterator[Problem]:
    """What the pinned runtime would refuse; a key OCC's own rules already named is not repeated."""
    for problem in schema_problems(values):
        here = path + pointer(*problem.location)
        if here not in known:
            dotted = ".".join(str(part) for part in problem.location) or "the document"
            yield Problem(here, problem.code, f"OpenClaw refuses {dotted}: {problem.message}")


def _shape_problems(node: object, path: str, *, depth: int) -> Iterator[Problem]:
    if not isinstance(node, Mapping | list):
        return
    if depth > MAX_VALUES_DEPTH:
        # Stop here: nothing below is read, so a hostile document costs no more than this.
        yield Problem(path, DetailCode.TOO_DEEP, f"values may nest at most {MAX_VALUES_DEPTH} levels.")
        return
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _shape_problems(item, path + pointer(index), depth=depth + 1)
        return
    for key, item in node.items():
        here = path + pointer(key)
        if key in FORBIDDEN_KEYS:
            yield Problem(here, DetailCode.INVALID_VALUE, f'The key "{key}" is not allowed in a configuration.')
            continue
        yield from _shape_problems(item, here, depth=depth + 1)


def _model_provider_problems(values: Mapping[str, Any], path: str) -> Iterator[Problem]:
    if "models" not in values:
        return
    models = values["models"]
    models_path = path + pointer("models")
    if not isinstance(models, Mapping):
        yield Problem(models_path, DetailCode.INVALID_TYPE, "models must be an object.")
        return
    if "providers" not in models:
        return
    providers = models["providers"]
    providers_path = models_path + pointer("providers")
    if not isinstance(providers, Mapping):
        yield Problem(providers_path, DetailCode.INVALID_TYPE, "models.providers must be an object.")
        return
    for provider_id, provider in providers.items():
        provider_path = providers_path + pointer(provider_id)
        if not isinstance(provider, Mapping):
            yield Problem(provider_path, DetailCode.INVALID_TYPE, "A model provider must be an object.")
            continue
        if "baseUrl" in provider:
            yield from _base_url_problems(provider["baseUrl"], provider_path + pointer("baseUrl"))
        if "api" in provider:
            yield from _api_problems(provider["api"], provider_path + pointer("api"))


def _base_url_problems(value: object, path: str) -> Iterator[Problem]:
    if not isinstance(value, str):
        yield Problem(path, DetailCode.INVALID_TYPE, "A model provider baseUrl must be a string.")
        return
    # Blank values and ${VAR} references are resolved by the runtime, not here.
    if not value.strip() or _ENV_REFERENCE.search(value):
        return
    if not is_absolute_http_url(value):
        yield Problem(path, DetailCode.INVALID_FORMAT,
                      "A model provider baseUrl must be an absolute http:// or https:// URL.")


def is_absolute_http_url(value: str) -> bool:
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        return False
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _api_problems(value: object, path: str) -> Iterator[Problem]:
    if not isinstance(value, str):
        yield Problem(path, DetailCode.INVALID_TYPE, "A model provider api must be a string.")
    elif value not in MODEL_PROVIDER_APIS:
        yield Problem(path, DetailCode.INVALID_VALUE,
                      "A model provider api must be one of: " + ", ".join(MODEL_PROVIDER_APIS) + ".")


def _gateway_problems(values: Mapping[str, Any], path: str) -> Iterator[Problem]:
    if "gateway" not in values:
        return
    gateway = values["gateway"]
    gateway_path = path + pointer("gateway")
    if not isinstance(gateway, Mapping):
        yield Problem(gateway_path, DetailCode.INVALID_TYPE, "gateway must be an object.")
        return
    for key in DRIVER_OWNED_GATEWAY_KEYS:
        if key in gateway:
            yield Problem(gateway_path + pointer(key), DetailCode.INVALID_VALUE,
                          f"gateway.{key} is set by OCC when the Agent is deployed; remove it.")


# --- the environment the runtime reads Secrets from ---------------------------------------------
# (The shape of a secret binding is occ.commands.configurations.SecretBinding.)

def reserved_env_name_problem(name: str) -> str | None:
    """Why ``name`` may not receive a Secret, or None. Compared in any letter case."""
    upper = name.upper()
    if upper in RESERVED_ENV_NAMES or upper.startswith(RESERVED_ENV_PREFIXES):
        return ("This environment variable is reserved for OCC and the runtime. "
                "Model API keys belong in the Agent's harnessAuth, not in secretBindings.")
    return None


def check_env_name(name: str, *, path: str) -> None:
    problem = reserved_env_name_problem(name)
    if problem is not None:
        raise InvalidRequest.at(path, DetailCode.INVALID_VALUE, problem)
    if not ENV_NAME.fullmatch(name):
        raise InvalidRequest.at(path, DetailCode.INVALID_FORMAT,
                                "A binding name must be an environment variable name: "
                                "A-Z, 0-9 and _, not starting with a digit, at most 128 characters.")
