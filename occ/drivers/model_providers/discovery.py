"""Model discovery: the models an API key can use, listed by the provider's own endpoint.

A key is sent only to the base URL the installation configured for its provider
(``OCC_MODEL_DISCOVERY_BASE_URLS``), never to an address a caller typed. Redirects are
refused, every response is bounded in time (``OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS``) and
size (``OCC_MODEL_DISCOVERY_MAX_RESPONSE_BYTES``, read as a stream and abandoned past the
limit), Anthropic paging is bounded, and a response that echoes the key is rejected whole.
Errors are ours: no upstream text reaches a caller or a log line, and nothing is stored.

A ChatGPT workspace's service account token (``codex_pat``, ``at-…``) lists the models Codex
offers that workspace: the token's account from ``whoami`` on the identity host
(``OCC_CODEX_AUTH_BASE_URL``; the account id always comes from there, never from a caller),
then ``{OCC_CODEX_CHATGPT_BASE_URL}/codex/models`` with ``ChatGPT-Account-ID`` (and
``X-OpenAI-Fedramp`` for a FedRAMP workspace), the same bounds, and one deadline for both calls.
Only ``visibility == "list"`` models are kept, in the upstream's ``priority`` order.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import httpx
from django.conf import settings

from occ.drivers.plugins.codex_catalog import is_usable_token as is_usable_codex_token
from occ.errors import OccError
from occ.upstream import Failure, UpstreamFailure, fetch_json

logger = logging.getLogger(__name__)

PROVIDERS = ("openai", "anthropic")
AUTH_METHODS = ("api_key", "codex_pat")
# The Codex CLI version the models endpoint is asked for (it answers the models that version
# can run); the dedicated Codex harness pins the same version.
CODEX_CLIENT_VERSION = "0.156.0"
CODEX_ACCOUNT_ID = re.compile(r"[^\s\x00-\x1f\x7f]{1,256}")
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_PAGE_SIZE = 1000
MAX_PAGES = 10
MAX_MODELS = 10_000
DISPLAY_NAME_MAX = 200
# Printable ASCII without spaces: what providers issue, and safe in a header. Eight
# characters at least, so the echo check below cannot match ordinary response text.
API_KEY = re.compile(r"[\x21-\x7e]{8,4096}")
MODEL_ID = re.compile(r"[^\s\x00-\x1f\x7f]{1,256}")
DISPLAY_NAME = re.compile(r"[^\x00-\x1f\x7f]{1,200}")
SHUTDOWN_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# OpenAI lists every model the key may call; these families cannot hold a chat (embeddings,
# moderation, speech, transcription, realtime audio, images, video, legacy completions).
OPENAI_NOT_CHAT = re.compile(
    r"(^|[-_.:])(embedding|embeddings|moderation|whisper|tts|transcribe|realtime|dall-e|image|sora"
    r"|babbage|davinci|instruct)([-_.:]|$)"
)


# --- errors (status and code per the reference's HTTP mapping) --------------------------------


class ModelDiscoveryError(OccError):
    status = 503
    code = "MODEL_DISCOVERY_UNAVAILABLE"


class ModelDiscoveryCredentialsRejected(ModelDiscoveryError):
    status = 400
    code = "MODEL_DISCOVERY_CREDENTIALS_REJECTED"
    default_message = "The provider did not accept the API key. Check the key, or enter the model ID manually."


class ModelDiscoveryRateLimited(ModelDiscoveryError):
    status = 429
    code = "MODEL_DISCOVERY_RATE_LIMITED"
    default_message = ("The provider is limiting requests for this key. Try again in a minute, "
                       "or enter the model ID manually.")


CODEX_REJECTED = ("The provider did not accept the service account token. Check the token (it starts with at-), "
                  "or enter the model ID manually.")
CODEX_NOT_A_TOKEN = ("That is not a service account token: a Codex service account token starts with at- and has "
                     "no spaces. Check the token, or enter the model ID manually.")


class ModelDiscoveryUnavailable(ModelDiscoveryError):
    status = 503
    code = "MODEL_DISCOVERY_UNAVAILABLE"
    default_message = ("The provider's model list could not be reached. Try again shortly, "
                       "or enter the model ID manually.")


class ModelDiscoveryInvalidResponse(ModelDiscoveryError):
    status = 503
    code = "MODEL_DISCOVERY_INVALID_RESPONSE"
    default_message = ("The provider answered with a model list OCC cannot use. Try again later, "
                       "or enter the model ID manually.")


class ModelDiscoveryUnsupportedProvider(ModelDiscoveryError):
    status = 400
    code = "MODEL_DISCOVERY_UNSUPPORTED_PROVIDER"
    default_message = ("Model discovery works only with OpenAI and Anthropic. For another provider, "
                       "enter the model ID manually.")


# --- what a discovery targets and returns -------------------------------------------------------


@dataclass(frozen=True)
class DiscoveryTarget:
    provider: str
    base_url: str  # from the allowlist setting, never from a request


@dataclass(frozen=True)
class DiscoveredModel:
    id: str
    display_name: str | None = None
    created_at: datetime | None = None


def _normalized(url: str) -> str:
    return url.strip().rstrip("/")


def discovery_target(provider: str, requested_base_url: str | None = None) -> DiscoveryTarget:
    """The allowlisted endpoint for ``provider``. A request may name a base URL only to say
    which public endpoint it means: anything else is refused before any connection."""
    if provider not in PROVIDERS:
        raise ModelDiscoveryUnsupportedProvider(
            "Model discovery works only with OpenAI and Anthropic. For another or an OpenAI-compatible "
            "provider, enter the model ID manually.")
    base = _normalized(settings.OCC_MODEL_DISCOVERY_BASE_URLS.get(provider) or "")
    if not base:
        raise ModelDiscoveryUnsupportedProvider(
            "Model discovery for this provider is turned off on this installation. Enter the model ID manually.")
    if requested_base_url is not None and _normalized(requested_base_url) not in (base, base + "/v1"):
        raise ModelDiscoveryUnsupportedProvider(
            "Model discovery only asks the provider's own public endpoint, never a custom or OpenAI-compatible "
            "one. Enter the model ID manually.")
    return DiscoveryTarget(provider=provider, base_url=base)


def is_usable_api_key(value: str) -> bool:
    return API_KEY.fullmatch(value) is not None


def discover_models(target: DiscoveryTarget, api_key: str) -> list[DiscoveredModel]:
    """The models ``api_key`` can use at ``target``: de-duplicated, newest first, then by id."""
    if not is_usable_api_key(api_key):
        raise ModelDiscoveryCredentialsRejected()
    timeout = float(settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS)
    headers = {"accept": "application/json", "accept-encoding": "identity", "user-agent": "occ-model-discovery"}
    with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False, headers=headers) as client:
        fetch = _Fetcher(client, api_key=api_key, deadline=time.monotonic() + timeout, provider=target.provider)
        if target.provider == "openai":
            found = _openai_models(fetch, target.base_url)
        else:
            found = _anthropic_models(fetch, target.base_url)
    return _finish(found)


def discover_codex_models(token: str) -> list[DiscoveredModel]:
    """The models Codex offers the workspace of a service account ``token`` (``codex_pat``), in
    the upstream's priority order. The token must start with ``at-``: anything else (an API key,
    an identity JWT) is refused before a connection is made."""
    if not is_usable_codex_token(token):
        raise ModelDiscoveryCredentialsRejected(CODEX_NOT_A_TOKEN)
    auth_base, chatgpt_base = _codex_base("OCC_CODEX_AUTH_BASE_URL"), _codex_base("OCC_CODEX_CHATGPT_BASE_URL")
    timeout = float(settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS)
    headers = {"accept": "application/json", "accept-encoding": "identity", "user-agent": "occ-model-discovery"}
    with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False, headers=headers) as client:
        fetch = _Fetcher(client, api_key=token, deadline=time.monotonic() + timeout, provider="openai codex_pat",
                         rejected_message=CODEX_REJECTED)
        bearer = {"authorization": f"Bearer {token}"}
        account_id, fedramp = _codex_account(
            fetch.get_json(f"{auth_base}/api/accounts/v1/user-auth-credential/whoami", headers=bearer))
        account = {**bearer, "chatgpt-account-id": account_id}
        if fedramp:
            account["x-openai-fedramp"] = "true"
        document = fetch.get_json(f"{chatgpt_base}/codex/models", headers=account,
                                  params={"client_version": CODEX_CLIENT_VERSION})
    return _codex_listed(document)


def _codex_base(name: str) -> str:
    value = _normalized(str(getattr(settings, name) or ""))
    if not value:
        raise ModelDiscoveryUnsupportedProvider(
            "Model discovery with a service account token is turned off on this installation. "
            "Enter the model ID manually.")
    return value


# --- one bounded request -----------------------------------------------------------------------


# What each way an answer can fail means to the person (occ.upstream says how it is read).
_FAILURES: dict[Failure, type[Exception]] = {
    Failure.REJECTED: ModelDiscoveryCredentialsRejected,
    Failure.RATE_LIMITED: ModelDiscoveryRateLimited,
    Failure.TOO_LARGE: ModelDiscoveryInvalidResponse,
    Failure.ECHOED: ModelDiscoveryInvalidResponse,
    Failure.NOT_JSON: ModelDiscoveryInvalidResponse,
}


@dataclass
class _Fetcher:
    """Bounded GETs with one credential, under one deadline for the whole discovery."""

    client: httpx.Client
    api_key: str
    deadline: float  # a time.monotonic() value
    provider: str
    rejected_message: str | None = None

    def get_json(self, url: str, *, headers: dict[str, str], params: dict[str, str | int] | None = None) -> Any:
        try:
            return fetch_json(self.client, "GET", url, credential=self.api_key, headers=headers, params=params,
                              deadline=self.deadline, max_bytes=int(settings.OCC_MODEL_DISCOVERY_MAX_RESPONSE_BYTES))
        except UpstreamFailure as failure:
            status = f" (HTTP {failure.status})" if failure.status else ""
            level = logging.WARNING if failure.kind is Failure.ECHOED else logging.INFO
            logger.log(level, "model discovery: %s %s%s", self.provider, failure.kind.value, status)
            error = _FAILURES.get(failure.kind, ModelDiscoveryUnavailable)
            if error is ModelDiscoveryCredentialsRejected and self.rejected_message:
                raise error(self.rejected_message) from None
            raise error() from None


# --- the providers -----------------------------------------------------------------------------


def _entries(document: Any) -> list[dict[str, Any]]:
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
        raise ModelDiscoveryInvalidResponse()
    return data


def _model_id(entry: dict[str, Any]) -> str | None:
    """The entry's id; None for one no runtime could be configured with (whitespace, controls)."""
    value = entry.get("id")
    if not isinstance(value, str):
        raise ModelDiscoveryInvalidResponse()
    return value if MODEL_ID.fullmatch(value) else None


def _shut_down(value: Any, today: date) -> bool:
    """True for a valid ``YYYY-MM-DD`` shutdown date on or before today (UTC)."""
    if not isinstance(value, str) or not SHUTDOWN_DATE.fullmatch(value):
        return False
    try:
        return date.fromisoformat(value) <= today
    except ValueError:
        return False


def _from_unix(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**33:
        return None
    return datetime.fromtimestamp(value, UTC)


def _from_rfc3339(value: Any) -> datetime | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _openai_models(fetch: _Fetcher, base_url: str) -> list[DiscoveredModel]:
    document = fetch.get_json(f"{base_url}/v1/models", headers={"authorization": f"Bearer {fetch.api_key}"})
    today = datetime.now(UTC).date()
    found = []
    for entry in _entries(document):
        model_id = _model_id(entry)
        if model_id is None or _shut_down(entry.get("shutdown_date"), today) or OPENAI_NOT_CHAT.search(model_id):
            continue
        found.append(DiscoveredModel(id=model_id, created_at=_from_unix(entry.get("created"))))
    return found


def _anthropic_models(fetch: _Fetcher, base_url: str) -> list[DiscoveredModel]:
    headers = {"x-api-key": fetch.api_key, "anthropic-version": ANTHROPIC_VERSION}
    found: list[DiscoveredModel] = []
    cursors: set[str] = set()
    params: dict[str, str | int] = {"limit": ANTHROPIC_PAGE_SIZE}
    for _page in range(MAX_PAGES):
        document = fetch.get_json(f"{base_url}/v1/models", headers=headers, params=params)
        for entry in _entries(document):
            model_id = _model_id(entry)
            if model_id is not None:
                name = entry.get("display_name")
                found.append(DiscoveredModel(
                    id=model_id, created_at=_from_rfc3339(entry.get("created_at")),
                    display_name=name if isinstance(name, str) and DISPLAY_NAME.fullmatch(name) else None))
        has_more = document.get("has_more", False)
        if not isinstance(has_more, bool):
            raise ModelDiscoveryInvalidResponse()
        if not has_more or len(found) >= MAX_MODELS:
            break
        last_id = document.get("last_id")
        if not isinstance(last_id, str) or not last_id or last_id in cursors:  # no cursor, or a loop
            raise ModelDiscoveryInvalidResponse()
        cursors.add(last_id)
        params = {"limit": ANTHROPIC_PAGE_SIZE, "after_id": last_id}
    return found


def _codex_account(document: Any) -> tuple[str, bool]:
    """The workspace account id and FedRAMP flag ``whoami`` answered (both required)."""
    account = document.get("chatgpt_account_id") if isinstance(document, dict) else None
    fedramp = document.get("chatgpt_account_is_fedramp") if isinstance(document, dict) else None
    if not isinstance(account, str) or not CODEX_ACCOUNT_ID.fullmatch(account) or not isinstance(fedramp, bool):
        raise ModelDiscoveryInvalidResponse()
    return account, fedramp


def _priority(entry: dict[str, Any]) -> float:
    value = entry.get("priority")
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ModelDiscoveryInvalidResponse()  # the order is the upstream's promise; without it, no list
    return float(value)


def _codex_listed(document: Any) -> list[DiscoveredModel]:
    """``models[]`` by ``priority`` (ties keep the upstream order), only ``visibility == "list"``;
    id = ``slug``, name = ``display_name`` (else the slug); de-duplicated, at most MAX_MODELS."""
    entries = document.get("models") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise ModelDiscoveryInvalidResponse()
    unique: dict[str, DiscoveredModel] = {}
    for entry in sorted(entries, key=_priority):
        slug = entry.get("slug")
        if not isinstance(slug, str):
            raise ModelDiscoveryInvalidResponse()
        if entry.get("visibility") != "list" or not MODEL_ID.fullmatch(slug):
            continue
        name = entry.get("display_name")
        unique.setdefault(slug, DiscoveredModel(
            id=slug, display_name=name if isinstance(name, str) and DISPLAY_NAME.fullmatch(name) else slug))
    return list(unique.values())[:MAX_MODELS]


def _finish(found: list[DiscoveredModel]) -> list[DiscoveredModel]:
    unique: dict[str, DiscoveredModel] = {}
    for model in found:
        unique.setdefault(model.id, model)
    models = sorted(list(unique.values())[:MAX_MODELS], key=lambda m: m.id)
    # Stable: newest first, equal or unknown dates keep the id order, unknown dates last.
    models.sort(key=lambda m: m.created_at.timestamp() if m.created_at else float("-inf"), reverse=True)
    return models
