"""HTTP to OCC: where it listens, which key to send, and what its answers mean.

The CLI is a face that knows OCC only through its JSON API: every request carries
``x-api-key``; every answer is the ``{data, meta}`` envelope or ``{error: {code, message,
details}, meta}``, which becomes an :class:`ApiError` with the exit code its status means.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import ServerSentEvent, connect_sse

KEY_FILE_NAME = "bootstrap-admin-key.json"
DEFAULT_TIMEOUT_SECONDS = 30.0


class Exit(IntEnum):
    """What ``occ`` exits with (README, "The occ command line")."""

    OK = 0
    API_ERROR = 1  # OCC refused the request (400, 409, 422, 429, ...) or failed it (500)
    USAGE = 2  # a wrong option or argument, an unreadable file (Click's own code for usage errors)
    AUTH = 3  # no key, or OCC answered 401 (not authenticated) or 403 (not allowed)
    NOT_FOUND = 4  # OCC answered 404, or no resource has the name given
    UNAVAILABLE = 5  # OCC could not be reached, answered 503, or a wait ran out of time
    FAILED = 6  # the awaited work ended failed (a deployment, a provisioning job)


class CliError(Exception):
    """A failure ``occ`` reports in one plain message and an exit code."""

    def __init__(self, message: str, exit_code: Exit, *, code: str | None = None,
                 details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = code
        self.details = details or []

    def as_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code or self.exit_code.name, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error, "exitCode": int(self.exit_code)}


class ApiError(CliError):
    """OCC's error envelope, as it answered it."""

    def __init__(self, status: int, code: str, message: str, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message, exit_for_status(status), code=code, details=details)
        self.status = status


def exit_for_status(status: int) -> Exit:
    if status in (401, 403):
        return Exit.AUTH
    if status == 404:
        return Exit.NOT_FOUND
    if status in (502, 503, 504):
        return Exit.UNAVAILABLE
    return Exit.API_ERROR


def default_base_url() -> str:
    return os.environ.get("OCC_URL") or f"http://127.0.0.1:{os.environ.get('OCC_PORT') or 8000}"


def default_key_file() -> Path:
    return Path(os.environ.get("OCC_DATA_DIR") or ".occ") / KEY_FILE_NAME


def read_key_file(path: Path) -> str:
    """``data.key`` of a key file as ``occ_bootstrap`` (or ``POST /service-keys``) wrote it."""
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise CliError(f"The key file {path} does not exist. Pass --key-file, set OCC_API_KEY, or set "
                       "OCC_DATA_DIR to the data directory OCC runs with.", Exit.AUTH) from None
    except (OSError, ValueError) as exc:
        raise CliError(f"The key file {path} could not be read as JSON ({type(exc).__name__}).", Exit.AUTH) from None
    key = document.get("data", {}).get("key") if isinstance(document, dict) else None
    if not isinstance(key, str) or not key:
        raise CliError(f"The key file {path} has no data.key.", Exit.AUTH)
    return key


def resolve_key(key_file: Path | None) -> str:
    """``--key-file`` when given, else ``OCC_API_KEY``, else the bootstrap key file of ``OCC_DATA_DIR``."""
    if key_file is not None:
        return read_key_file(key_file)
    from_env = os.environ.get("OCC_API_KEY")
    if from_env:
        return from_env
    return read_key_file(default_key_file())


def _error_of(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        details = error.get("details") if isinstance(error.get("details"), list) else None
        return ApiError(response.status_code, error["code"], str(error.get("message") or ""), details)
    return ApiError(response.status_code, f"HTTP_{response.status_code}",
                    f"OCC answered {response.status_code} {response.reason_phrase} without an error body.")


@dataclass
class OccClient:
    """One connection to OCC's API with one key."""

    base_url: str
    api_key: str
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    transport: httpx.BaseTransport | None = None
    _http: httpx.Client = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._http = httpx.Client(base_url=self.base_url.rstrip("/"), timeout=self.timeout, transport=self.transport,
                                  headers={"x-api-key": self.api_key, "accept": "application/json",
                                           "user-agent": "occ-cli"})

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None,
                expect_body: bool = True) -> Any:
        """``data`` of the answer (None for 204), or raise ApiError / CliError(UNAVAILABLE)."""
        with self._transport(method, path):
            response = self._http.request(method, path, json=body, headers=headers)
        if response.status_code >= 400:
            raise _error_of(response)
        if response.status_code == 204 or not expect_body or not response.content:
            return None
        try:
            return response.json()["data"]
        except (ValueError, KeyError, TypeError):
            raise CliError(f"OCC answered {method} {path} with something that is not its envelope.",
                           Exit.API_ERROR, code="INVALID_RESPONSE") from None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def stream(self, path: str) -> Iterator[str]:
        """A GET whose answer is text (an export): its chunks as they come, or raise as ``request``."""
        with self._transport("GET", path), self._http.stream("GET", path, headers={"accept": "*/*"}) as response:
            if response.status_code >= 400:
                response.read()
                raise _error_of(response)
            yield from response.iter_text()

    def events(self, path: str, body: Any, *, read_timeout: float) -> Iterator[ServerSentEvent]:
        """A POST answered with server-sent events (a chat turn): each event as it comes, or
        raise as ``request``. ``read_timeout`` bounds the wait for the next event."""
        timeout = httpx.Timeout(self.timeout, read=read_timeout)
        with self._transport("POST", path), connect_sse(self._http, "POST", path, json=body, timeout=timeout,
                                                        headers={"accept": "text/event-stream"}) as source:
            if source.response.status_code >= 400:
                source.response.read()
                raise _error_of(source.response)
            yield from source.iter_sse()

    @contextmanager
    def _transport(self, method: str, path: str) -> Iterator[None]:
        """A timeout or an unreachable server as the CLI says it (exit UNAVAILABLE)."""
        try:
            yield
        except httpx.TimeoutException:
            raise CliError(f"OCC at {self.base_url} did not answer {method} {path} in time.", Exit.UNAVAILABLE,
                           code="TIMEOUT") from None
        except httpx.TransportError as exc:
            raise CliError(f"OCC at {self.base_url} could not be reached ({type(exc).__name__}). Is it running? "
                           "Pass --url or set OCC_URL.", Exit.UNAVAILABLE, code="UNREACHABLE") from None

    def post(self, path: str, body: Any = None, *, headers: dict[str, str] | None = None) -> Any:
        return self.request("POST", path, body=body, headers=headers)

    def patch(self, path: str, body: Any = None, *, headers: dict[str, str] | None = None) -> Any:
        return self.request("PATCH", path, body=body, headers=headers)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)
