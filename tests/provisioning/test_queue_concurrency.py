"""Concurrent claims and sweeps in threads, each with its own PostgreSQL connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from occ.models import ControllerWork, Namespace, NamespaceStatus, WorkState
from provisioning import queue
from tests.provisioning.conftest import make_work

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]


def in_threads(count: int, target: Callable[[int], Any]) -> list[Any]:
    """Run ``target(i)`` in ``count`` threads released together; re-raise the first error."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[i] = target(i)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not [t for t in threads if t.is_alive()], "a thread hung"
    if errors:
        raise errors[0]
    return results


@pytest.fixture
def committed_namespace() -> Namespace:
    return Namespace.objects.create(name="concurrency", status=NamespaceStatus.READY)


def test_racing_claims_on_one_resource_claim_one_row(committed_namespace):
    for round_ in range(10):
        rows = [make_work(committed_namespace, agent_id=f"agt_race{round_}") for _ in range(4)]
        claims = in_threads(4, lambda i, rows=rows: queue.claim(rows[i].pk))
        won = [c for c in claims if c is not None]
        assert len(won) == 1, f"round {round_}: {len(won)} rows of one Agent claimed at once"
        assert ControllerWork.objects.filter(agent_id=f"agt_race{round_}", state=WorkState.CLAIMED).count() == 1


def test_racing_claims_without_a_key_take_different_rows(committed_namespace):
    for _ in range(20):
        make_work(committed_namespace)
    claims = in_threads(4, lambda i: [queue.claim() for _ in range(5)])
    keys = [c.key for batch in claims for c in batch if c is not None]
    assert sorted(keys) == sorted(set(keys))
    assert len(keys) == 20


def test_concurrent_sweepers_recover_each_row_once(committed_namespace):
    rows = [make_work(committed_namespace) for _ in range(30)]
    for row in rows:
        assert queue.claim(row.pk) is not None
    ControllerWork.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    results = in_threads(3, lambda i: queue.recover_stale())

    recovered = [key for result in results for key in result.requeued]
    assert sorted(recovered) == sorted(row.pk for row in rows), "each expired claim recovered exactly once"
    assert set(ControllerWork.objects.values_list("state", "attempt_count", "last_attempt_code")) == {
        (WorkState.QUEUED, 1, "LEASE_EXPIRED")}
