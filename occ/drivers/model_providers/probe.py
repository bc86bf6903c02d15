"""Is the Agent's model endpoint answering? One bounded request that tells the ways it can fail.

A gateway whose model endpoint is down keeps retrying for a minute or more before it gives up,
and then only says "the model returned an error". Chat asks the endpoint itself at the same
time (``occ.services.agent_chat``): a refused connection is known in milliseconds, a rejected
key in one round trip. The request is ``GET <base>/models`` (OpenAI-compatible) or
``GET <base>/v1/models`` (Anthropic), the cheapest call both kinds of provider answer; its body
is never read, redirects are never followed, and only a verdict comes back, never upstream
text. ``None`` means nothing is known to be wrong (it answered, or answered in a way that
proves nothing, such as a 404 from an endpoint without a model list).

The key is sent only to the endpoint the Agent's own configuration sends it to.
"""

from __future__ import annotations

import enum
import errno
from dataclasses import dataclass

import httpx

from occ.openclaw.document import primary_endpoint, primary_provider

ANTHROPIC_VERSION = "2023-06-01"
CONNECT_TIMEOUT_SECONDS = 5.0


class EndpointProblem(enum.Enum):
    REFUSED = "refused"  # something answers at the address, but nothing listens on the port
    UNREACHABLE = "unreachable"  # the name does not resolve, no route, TLS failed
    TIMED_OUT = "timed_out"  # no answer in time
    KEY_REJECTED = "key_rejected"  # 401 or 403


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the runtime sends its model requests: the provider's API kind and its base URL
    (for an OpenAI-compatible API the URL the runtime appends ``/chat/completions`` to)."""

    anthropic: bool
    base_url: str

    @property
    def models_url(self) -> str:
        return f"{self.base_url}/v1/models" if self.anthropic else f"{self.base_url}/models"


def model_endpoint(document: object) -> ModelEndpoint | None:
    """The primary model's endpoint when the native document names it: a provider of
    ``models.providers`` with its own ``baseUrl`` (an OpenAI-compatible server, a local model,
    a proxy: the endpoints that are down when a person's own server is). None otherwise: the
    public providers' endpoints are not probed from OCC."""
    found = primary_endpoint(document)
    if found is None or not found[0].startswith(("http://", "https://")):
        return None
    base, api = found[0].rstrip("/"), found[1]
    anthropic = api == "anthropic-messages" if api is not None else primary_provider(document) == "anthropic"
    if anthropic:
        base = base.removesuffix("/v1")
    return ModelEndpoint(anthropic=anthropic, base_url=base)


def _refused(exc: BaseException) -> bool:
    """Whether a connection error was a refused connection (ECONNREFUSED anywhere in the chain)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or getattr(current, "errno", None) == errno.ECONNREFUSED:
            return True
        current = current.__cause__ or current.__context__
    return "connection refused" in str(exc).lower()


def probe_model_endpoint(endpoint: ModelEndpoint, api_key: str | None, *, timeout: float) -> EndpointProblem | None:
    """What is wrong with ``endpoint`` for ``api_key``, or None when nothing is known to be."""
    headers = {"accept": "application/json", "user-agent": "occ-model-probe"}
    if endpoint.anthropic:
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if api_key:
            headers["x-api-key"] = api_key
    elif api_key:
        headers["authorization"] = f"Bearer {api_key}"
    limits = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_SECONDS))
    try:
        with httpx.Client(timeout=limits, follow_redirects=False) as client, \
                client.stream("GET", endpoint.models_url, headers=headers) as response:
            status = response.status_code
    except httpx.TimeoutException:
        return EndpointProblem.TIMED_OUT
    except httpx.ConnectError as exc:
        return EndpointProblem.REFUSED if _refused(exc) else EndpointProblem.UNREACHABLE
    except httpx.HTTPError:
        return EndpointProblem.UNREACHABLE
    if status in (401, 403) and api_key:
        return EndpointProblem.KEY_REJECTED
    return None
