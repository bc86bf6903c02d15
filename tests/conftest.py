"""Shared fixtures: a bootstrapped Installation, actors, and a JSON API client."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from occ.iam.actor import Actor, Source
from occ.models import ControllerWork, Namespace, NamespaceStatus
from occ.services.bootstrap import BootstrapResult, installation_bootstrap
from tests.kubecluster.fixtures import kube, kube_faults, real_node, real_nodes  # noqa: F401 - the session's test cluster
from tests.kubecluster.node import NodeUnavailable
from tests.kubecluster.node import programs as node_programs
from tests.kubecluster.support import kube_compute  # noqa: F401 - OCC_COMPUTE_DRIVER=kubernetes on it

ADMIN_PASSWORD = "correct-horse-battery-staple"


def service_missing(reason: str) -> None:
    """Skip a test whose outside service is absent; in CI (OCC_REQUIRE_SERVICES=1) fail it."""
    if os.environ.get("OCC_REQUIRE_SERVICES") == "1":
        pytest.fail(f"required service missing in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def pytest_runtest_setup(item):
    if item.get_closest_marker("postgres_only") and not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        service_missing("needs PostgreSQL: set DATABASE_URL=postgres://...")
    if item.get_closest_marker("kubelet"):
        # Before the session's cluster starts: what the real node needs is on this machine.
        try:
            node_programs()
        except NodeUnavailable as exc:
            service_missing(f"the real node is unavailable: {exc}")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Real hashing costs ~1 s per user on these machines; tests do not need its strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fake_compute_in_memory(settings):
    """In this process the fake's world is per test; its durable default (a file under the
    data directory) is for real worker processes, which the fault tests start."""
    settings.OCC_FAKE_COMPUTE_STATE = "memory"


@pytest.fixture
def bootstrap(db) -> BootstrapResult:
    return installation_bootstrap(name="Test OCC", admin_username="admin", admin_password=ADMIN_PASSWORD)


@pytest.fixture
def admin_key(bootstrap) -> str:
    assert bootstrap.key_token
    return bootstrap.key_token


@pytest.fixture
def admin_actor(bootstrap) -> Actor:
    return Actor(principal=bootstrap.key.principal, source=Source.API)


@pytest.fixture
def ready_namespace(bootstrap) -> Namespace:
    """The default Namespace, made ready directly (the worker does this for real)."""
    namespace = Namespace.objects.get(name="default")
    mark_namespace_ready(namespace)
    return namespace


def mark_namespace_ready(namespace: Namespace) -> None:
    """Do what the controller worker will do: finish the ready work and flip the status."""
    now = timezone.now()
    ControllerWork.objects.filter(namespace=namespace, namespace_target="ready").update(
        state="succeeded", completed_at=now, reason_code="NAMESPACE_READY", updated_at=now)
    namespace.status = NamespaceStatus.READY
    namespace.save(update_fields=["status"])


@dataclass
class ApiResponse:
    status: int
    headers: Any
    body: Any

    @property
    def data(self) -> Any:
        return self.body["data"]

    @property
    def error_code(self) -> str | None:
        return (self.body or {}).get("error", {}).get("code")


class ApiClient:
    """Speaks the JSON API through Django's test client, with an x-api-key by default."""

    def __init__(self, key: str | None = None) -> None:
        self.client = Client()
        self.key = key

    def request(self, method: str, path: str, body: Any = None, *, key: str | bool | None = True,
                raw: bytes | None = None, content_type: str = "application/json",
                headers: dict[str, str] | None = None) -> ApiResponse:
        extra: dict[str, str] = dict(headers or {})
        use_key = self.key if key is True else key
        if use_key:
            extra["x-api-key"] = use_key
        data = raw if raw is not None else (json.dumps(body) if body is not None else "")
        response = self.client.generic(method, path, data=data, content_type=content_type, headers=extra)
        parsed = json.loads(response.content) if response.content else None
        return ApiResponse(response.status_code, response.headers, parsed)

    def get(self, path: str, **kw) -> ApiResponse:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw) -> ApiResponse:
        return self.request("POST", path, body, **kw)

    def patch(self, path: str, body: Any = None, **kw) -> ApiResponse:
        return self.request("PATCH", path, body, **kw)

    def delete(self, path: str, **kw) -> ApiResponse:
        return self.request("DELETE", path, **kw)


def walk_pages(api: ApiClient, path: str, key: str, limit: int, *, id_key: str = "id") -> tuple[list[str], list[int]]:
    """The ids (``id_key`` of each item) of every item of a keyset-paged list, following
    ``nextCursor``, and each page's size; ``path`` may carry the list's own filters."""
    seen: list[str] = []
    sizes: list[int] = []
    cursor = ""
    joiner = "&" if "?" in path else "?"
    while True:
        response = api.get(f"{path}{joiner}limit={limit}" + (f"&cursor={cursor}" if cursor else ""))
        assert response.status == 200, response.body
        seen += [row[id_key] for row in response.data[key]]
        sizes.append(len(response.data[key]))
        cursor = response.data["nextCursor"]
        if cursor is None:
            return seen, sizes


@pytest.fixture
def api(admin_key) -> ApiClient:
    return ApiClient(admin_key)


@pytest.fixture
def anon_api(db) -> ApiClient:
    return ApiClient(None)


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


# The fake ComputeDriver fixture (``fake_compute``), available to every test.
from tests.fakes.compute import fake_compute  # noqa: E402, F401
