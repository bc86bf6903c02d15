"""One JSON answer from an outside service OCC does not trust (a model provider, a plugin catalog).

Model discovery and the hosted plugin catalog ask a third party with a person's credential and
must treat the answer as hostile. The rules are the same for both, so they live here once:

- one deadline for the request, the body included: a body that drips in slowly would otherwise
  renew the read timeout forever;
- the body read as a stream and cut off at a size limit (a declared ``content-length`` over it
  is refused before reading);
- any status but 2xx is a failure; redirects are never followed (the caller's client has
  ``follow_redirects=False``), so a 3xx is a failure too;
- an answer that echoes the credential, raw or escaped inside the JSON text, is discarded.

What went wrong is an ``UpstreamFailure`` with its ``Failure`` kind, never the upstream's own
words: each caller turns a kind into its own error codes and log line. A pure leaf: it imports
nothing of OCC, so drivers and plugin drivers both use it.
"""

from __future__ import annotations

import enum
import json
import time
from typing import Any

import httpx


class Failure(enum.Enum):
    UNREACHABLE = "could not be reached"
    SLOW = "answered too slowly"
    REJECTED = "refused the credential"  # 401, 403
    RATE_LIMITED = "limited the rate"  # 429, or a 403 saying the rate limit is spent
    NOT_FOUND = "answered not found"  # 404, for a caller that tells it apart
    REFUSED = "answered with an error"  # any other status, redirects included
    TOO_LARGE = "answered more than the size limit"
    ECHOED = "echoed the credential"
    NOT_JSON = "answered something that is not JSON"


class UpstreamFailure(Exception):
    def __init__(self, kind: Failure, status: int | None = None) -> None:
        super().__init__(kind.value)
        self.kind = kind
        self.status = status


def fetch_json(client: httpx.Client, method: str, url: str, *, credential: str, deadline: float,
               max_bytes: int, headers: dict[str, str], params: Any = None, body: Any = None) -> Any:
    """The JSON document ``url`` answers, read by the rules above before ``deadline`` (a
    ``time.monotonic()`` value); ``credential`` is what the answer must not contain."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise UpstreamFailure(Failure.SLOW)
    try:
        with client.stream(method, url, headers=headers, params=params, json=body,
                           timeout=httpx.Timeout(remaining)) as response:
            _check_status(response.status_code, response.headers)
            raw = _read_bounded(response, deadline, max_bytes)
    except httpx.HTTPError:
        # `from None`: httpx's exception carries the request, its headers (the credential) included.
        raise UpstreamFailure(Failure.UNREACHABLE) from None
    return _parse(raw, credential)


def _check_status(status: int, headers: httpx.Headers) -> None:
    if 200 <= status < 300:
        return
    # A 403 that says the rate is spent (GitHub's primary and secondary limits) is a limit,
    # not a refused credential: the same credential works again later.
    if status == 403 and (headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers):
        raise UpstreamFailure(Failure.RATE_LIMITED, status)
    kind = {401: Failure.REJECTED, 403: Failure.REJECTED, 404: Failure.NOT_FOUND,
            429: Failure.RATE_LIMITED}.get(status, Failure.REFUSED)
    raise UpstreamFailure(kind, status)


def _read_bounded(response: httpx.Response, deadline: float, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise UpstreamFailure(Failure.TOO_LARGE)
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > max_bytes:
            raise UpstreamFailure(Failure.TOO_LARGE)
        if time.monotonic() > deadline:
            raise UpstreamFailure(Failure.SLOW)
    return bytes(body)


def _parse(raw: bytes, credential: str) -> Any:
    if credential.encode() in raw:
        raise UpstreamFailure(Failure.ECHOED)
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        raise UpstreamFailure(Failure.NOT_JSON) from None
    if _contains(document, credential):  # escaped in the JSON text, e.g. \u0073k-...
        raise UpstreamFailure(Failure.ECHOED)
    return document


def _contains(document: Any, needle: str) -> bool:
    pending = [document]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if needle in item:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False
