"""GET /namespaces/{ns}/secrets in keyset pages on ``(created_at, id)``, oldest first, through
the real HTTP stack (the rule's own tests are the Agents list's: test_agent_pages)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS
from occ.models import Namespace, NamespaceStatus, Secret
from occ.services.secrets import runtime_credential_ensure
from tests.conftest import ApiClient, walk_pages
from tests.factories import AgentFactory, NamespaceFactory, SecretFactory, grant, key_for, service_principal

pytestmark = pytest.mark.django_db


@pytest.fixture
def ns() -> Namespace:
    return NamespaceFactory(status=NamespaceStatus.READY)


def _secrets(ns: Namespace, count: int) -> list[Secret]:
    """``count`` Secrets, oldest first; two share one moment (the id breaks the tie)."""
    start = timezone.now() - timedelta(days=1)
    for index in range(count):
        secret = SecretFactory(namespace=ns)
        Secret.objects.filter(id=secret.id).update(created_at=start + timedelta(minutes=min(index, 4)))
    return sorted(Secret.objects.filter(namespace=ns), key=lambda s: (s.created_at, s.id))


def admin() -> ApiClient:
    principal = service_principal("admin")
    grant(principal, *ADMINISTRATOR_PERMISSIONS)
    return ApiClient(key_for(principal))


def test_pages_walk_every_secret_once_and_leave_runtime_credentials_out(ns):
    expected = _secrets(ns, 7)
    runtime_credential_ensure(agent=AgentFactory(namespace=ns), purpose="gateway-password",
                              value_factory=lambda: "generated")
    seen, sizes = walk_pages(admin(), f"/namespaces/{ns.id}/secrets", "secrets", 3)
    assert seen == [secret.id for secret in expected]
    assert sizes == [3, 3, 1]


def test_a_secret_created_between_pages_comes_last(ns):
    expected = _secrets(ns, 3)
    api = admin()
    first = api.get(f"/namespaces/{ns.id}/secrets?limit=2").data
    late = SecretFactory(namespace=ns)
    second = api.get(f"/namespaces/{ns.id}/secrets?limit=2&cursor={first['nextCursor']}").data
    assert [row["id"] for row in first["secrets"] + second["secrets"]] == [s.id for s in expected] + [late.id]
    assert second["nextCursor"] is None


def test_only_secrets_read_exactly_are_listed_and_pages_stay_full(ns):
    readable = _secrets(ns, 7)[1::2]
    reader = service_principal("reader")
    grant(reader, "read:namespace", namespace=ns)
    for secret in readable:
        grant(reader, "read:secret", namespace=ns, resource_kind="secret", resource_id=secret.id)
    seen, sizes = walk_pages(ApiClient(key_for(reader)), f"/namespaces/{ns.id}/secrets", "secrets", 2)
    assert seen == [secret.id for secret in readable]
    assert sizes == [2, 1]


@pytest.mark.parametrize("query", ["cursor=not-a-cursor", "limit=0", "limit=101", "cursr=x", "limit=1&limit=2"])
def test_bad_paging_is_a_400(ns, query):
    response = admin().get(f"/namespaces/{ns.id}/secrets?{query}")
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
