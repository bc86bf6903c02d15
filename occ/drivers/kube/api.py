"""One connection to one Kubernetes cluster, shared by the Kubernetes compute and secret drivers.

A ``Connection`` owns its own ``kubernetes.client.ApiClient`` (from a kubeconfig path and
context, or the in-cluster ServiceAccount; never the process-wide default configuration), with
bounded timeouts and urllib3's own retries off. Retrying is decided here, per kind of call:

- reads (get, list) back off and retry on 429 and 5xx and on a lost connection;
- writes that say what the object must be (patch, delete) retry the same way: sending them
  again converges on the same state;
- a create is sent again only after a 429 (the server refused it unseen; 429s to the end are
  KubeUnavailable, like a read that kept failing). Any other failure
  whose outcome is unknown (a 5xx, a dropped connection, a timeout) is settled by reading the
  object back and checking its ownership labels (``create_or_adopt``); it is never resent
  blindly.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import urllib3
from kubernetes import client, config
from kubernetes.client.rest import ApiException

logger = logging.getLogger(__name__)
T = TypeVar("T")

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
# Every patch is a JSON merge patch (RFC 7386): lists are replaced whole, null removes a key, and
# a metadata.resourceVersion in it is a precondition. (The client would pick JSON Patch for a dict.)
MERGE_PATCH = "application/merge-patch+json"
LOST = (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)


@dataclass(frozen=True)
class Settings:
    """How to reach the cluster. ``auth`` is ``kubeconfig`` (with ``kubeconfig_path`` and an
    optional ``context``; no ambient fallback) or ``inCluster``. ``gateway_route`` is how a
    gateway Service is reached: ``serviceProxy`` (the API server's service proxy, with this
    connection's credentials) or ``serviceDns`` (its cluster DNS name, from inside the cluster)."""

    auth: str = "kubeconfig"
    kubeconfig_path: str = ""
    context: str = ""
    gateway_route: str = "serviceProxy"
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    attempts: int = 5
    backoff_seconds: float = 0.2
    max_backoff_seconds: float = 3.0


class KubeUnavailable(Exception):
    """The API server could not be reached or kept failing (after backoff)."""

    def __init__(self, code: str, status: int | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.status = status


class KubeRefused(Exception):
    """The API server refused the call for good (403, 422, ...). ``code`` is a safe token."""

    def __init__(self, code: str, status: int | None = None, reason: str = "") -> None:
        super().__init__(code)
        self.code = code
        self.status = status
        self.reason = reason


class OutcomeUnknown(Exception):
    """A write may or may not have taken effect and reading back could not tell."""


class NotOwned(Exception):
    """An object with the expected name exists but its ownership labels are not ours."""


def labels_match(found: Mapping[str, str] | None, expected: Mapping[str, str]) -> bool:
    found = found or {}
    return all(found.get(key) == value for key, value in expected.items())


class Connection:
    def __init__(self, settings: Settings, *, api_client: client.ApiClient | None = None) -> None:
        self.settings = settings
        self.api_client = api_client or self._client(settings)
        self.core = client.CoreV1Api(self.api_client)
        self.apps = client.AppsV1Api(self.api_client)
        self.networking = client.NetworkingV1Api(self.api_client)
        self.timeout = (settings.connect_timeout, settings.read_timeout)

    @staticmethod
    def _client(settings: Settings) -> client.ApiClient:
        configuration = client.Configuration()
        if settings.auth == "inCluster":
            config.load_incluster_config(client_configuration=configuration)
        elif settings.auth == "kubeconfig":
            if not settings.kubeconfig_path:
                raise KubeRefused("KUBECONFIG_NOT_CONFIGURED")
            config.load_kube_config(config_file=settings.kubeconfig_path, context=settings.context or None,
                                    client_configuration=configuration, persist_config=False)
        else:
            raise KubeRefused("KUBERNETES_AUTH_MODE_UNKNOWN")
        configuration.retries = False  # retrying is ours (see the module docstring)
        return client.ApiClient(configuration)

    def close(self) -> None:
        self.api_client.close()

    # --- calling ---------------------------------------------------------------------------------
    def _pause(self, attempt: int, exc: ApiException | None) -> None:
        delay = min(self.settings.max_backoff_seconds, self.settings.backoff_seconds * 2 ** attempt)
        if exc is not None and exc.headers:
            retry_after = exc.headers.get("Retry-After")
            if retry_after and retry_after.isdigit():
                delay = min(self.settings.max_backoff_seconds, max(delay, float(retry_after)))
        time.sleep(delay * (0.5 + random.random() / 2))  # noqa: S311 - jitter, not a secret

    def call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A read, patch or delete: sent again after 429/5xx or a lost connection, with backoff.
        A 404 is raised as ``ApiException`` for the caller to interpret."""
        kwargs.setdefault("_request_timeout", self.timeout)
        last: ApiException | None = None
        for attempt in range(self.settings.attempts):
            try:
                return method(*args, **kwargs)
            except ApiException as exc:
                if exc.status not in RETRYABLE_STATUS:
                    raise
                last = exc
            except LOST:
                last = None
            if attempt + 1 < self.settings.attempts:
                self._pause(attempt, last)
        raise KubeUnavailable("KUBERNETES_API_UNAVAILABLE", last.status if last else None)

    def patch(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A merge patch: sent again after 429/5xx or a lost connection, like a read."""
        return self.call(method, *args, _content_type=MERGE_PATCH, **kwargs)

    def read(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """A read whose 404 means absent."""
        try:
            return self.call(method, *args, **kwargs)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def delete(self, method: Callable[..., Any], *args: Any, uid: str | None = None, **kwargs: Any) -> bool:
        """Delete (background propagation, optionally with a UID precondition). False when it
        was already gone. 1.20 answers some deletes with a Status the client cannot load as the
        object, so the body is not deserialized."""
        body = client.V1DeleteOptions(propagation_policy="Background",
                                      preconditions=client.V1Preconditions(uid=uid) if uid else None)
        try:
            self.call(method, *args, body=body, _preload_content=False, **kwargs)
        except ApiException as exc:
            if exc.status == 404:
                return False
            if exc.status == 409 and uid:  # the UID precondition failed: a new object took the name
                return False
            raise
        return True

    def create_or_adopt(self, *, create: Callable[..., T], read: Callable[[], T | None], body: Any,
                        owner: Mapping[str, str], args: tuple[Any, ...] = (), read_first: bool = True
                        ) -> tuple[T, bool]:
        """Create ``body`` unless an object of that name exists; returns (object, created).

        An existing object is adopted only when its labels carry ``owner``; otherwise NotOwned.
        ``read_first`` looks before creating (a reconcile of what exists writes nothing); without
        it the create goes first and an AlreadyExists answer is read (new objects, one call each).
        After an unknown outcome (5xx, dropped connection, timeout) the object is read back: found
        with our labels, it is ours; absent, the create is sent again (observed, not blind); after
        ``attempts`` rounds without an answer, OutcomeUnknown. Rounds that were all refused unseen
        (429) wrote nothing: KubeUnavailable, as for a read."""
        if read_first:
            existing = self.read_owned(read, owner)
            if existing is not None:
                return existing, False
        unknown = False
        throttled: ApiException | None = None
        for attempt in range(self.settings.attempts):
            try:
                created = create(*args, body, _request_timeout=self.timeout)
                return created, True
            except ApiException as exc:
                if exc.status == 409:
                    found = self.read_owned(read, owner)
                    if found is not None:
                        return found, False
                    # Conflict but gone again (deleted meanwhile): observe once more.
                elif exc.status == 429:
                    throttled = exc
                    self._pause(attempt, exc)
                    continue
                elif exc.status not in RETRYABLE_STATUS:
                    raise
                else:
                    unknown = True
                    logger.info("kubernetes: create answered %s; reading back before anything else", exc.status)
            except LOST:
                unknown = True
                logger.info("kubernetes: create lost its answer; reading back before anything else")
            self._pause(attempt, None)
            found = self.read_owned(read, owner)
            if found is not None:
                return found, False
        if unknown:
            raise OutcomeUnknown()
        raise KubeUnavailable("KUBERNETES_API_UNAVAILABLE", throttled.status if throttled else None)

    @contextmanager
    def service_proxy_post(self, kube_namespace: str, service: str, port: str, path: str, *, body: Any,
                           headers: Mapping[str, str], read_timeout: float) -> Iterator[tuple[int, Iterator[bytes]]]:
        """POST ``body`` (JSON) to ``path`` on a Service's ``port`` through the API server's service
        proxy (``services/proxy``), with this connection's credentials; gives the answer's status
        and its bytes as they arrive (``read_timeout`` bounds each wait). Sent once, never retried:
        it is no object write, and whoever asked decides whether to ask again."""
        resource = f"/api/v1/namespaces/{kube_namespace}/services/{service}:{port}/proxy/{path.lstrip('/')}"
        method, url, header_params, serialized, _ = self.api_client.param_serialize(
            "POST", resource, body=body, auth_settings=["BearerToken"],
            header_params={"Content-Type": "application/json", "Accept": "text/event-stream", **headers})
        answer = self.api_client.call_api(method, url, header_params=header_params, body=serialized,
                                          _request_timeout=(self.settings.connect_timeout, read_timeout))
        raw = answer.response
        try:
            yield raw.status, raw.stream(4096)
        finally:
            if not raw.isclosed():
                # Not read to its end (a chat's reader stops at its last event, before the chunked
                # body's terminator): the rest would greet the next request on this connection
                # ("BadStatusLine('0')", found by the real gateway test), so it is closed, not reused.
                raw.close()
            raw.release_conn()

    def read_owned(self, read: Callable[[], T | None], owner: Mapping[str, str]) -> T | None:
        found = read()
        if found is None:
            return None
        labels = getattr(getattr(found, "metadata", None), "labels", None)
        if not labels_match(labels, owner):
            raise NotOwned()
        return found


_connections: dict[Settings, Connection] = {}
_lock = threading.Lock()


def connection_for(settings: Settings) -> Connection:
    """The process's one connection for these settings (drivers built per call share it)."""
    with _lock:
        connection = _connections.get(settings)
        if connection is None:
            connection = _connections[settings] = Connection(settings)
        return connection


def forget_connections() -> None:
    with _lock:
        for connection in _connections.values():
            connection.close()
        _connections.clear()
