"""Two deploys admitted at the same moment, worked by two workers at the same moment, end
with the newest revision active and the older one superseded (PostgreSQL: real row locks)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections

from occ.models import Agent, ControllerWork, WorkState
from occ.models.work import revision_reconcile_key
from occ.services.deploy import agent_deploy
from provisioning import queue
from tests.fakes.compute import deployable_agent

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]


def in_threads(*calls: Callable[[], Any], timeout: float = 30) -> list[Any]:
    """Run the calls together, each on its own thread and database connection."""
    results: list[Any] = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def run(index: int, call: Callable[[], Any]) -> None:
        try:
            start.wait(timeout)
            results[index] = call()
        except Exception as exc:  # reported to the test below
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
        assert not thread.is_alive(), "a thread did not finish"
    return results


def work_until_done(keys: list[str], deadline: float) -> None:
    """One worker: run whatever of ``keys`` is claimable until all are terminal."""
    while time.monotonic() < deadline:
        pending = list(ControllerWork.objects.filter(pk__in=keys).exclude(
            state__in=[WorkState.SUCCEEDED, WorkState.FAILED_PERMANENT]).values_list("pk", flat=True))
        if not pending:
            return
        for key in pending:
            queue.run_work(key)
        time.sleep(0.01)
    raise AssertionError("work did not finish in time")


def test_concurrent_deploys_end_with_the_newest_active(admin_actor, ready_namespace, fake_compute, settings):
    # Quick retries keep the test short; on a loaded machine the two workers may collide more
    # often, so each row gets attempts to spare and the workers a generous deadline: the
    # outcome (newest active, older superseded) is what is asserted, never the time.
    settings.OCC_WORKER_DEFER_SECONDS = 0
    settings.OCC_WORKER_RETRY_MAX_SECONDS = 0.2
    settings.OCC_WORK_MAX_ATTEMPTS = 20
    agent = deployable_agent(ready_namespace, bound=1)

    def deploy():
        return agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)

    revisions = in_threads(deploy, deploy)
    assert not [r for r in revisions if isinstance(r, Exception)], revisions
    older, newer = sorted(revisions, key=lambda r: r.number)
    assert (older.number, newer.number) == (1, 2), "the Agent lock hands out the next number once"

    keys = [revision_reconcile_key(older.id), revision_reconcile_key(newer.id)]
    deadline = time.monotonic() + 120
    failures = in_threads(lambda: work_until_done(keys, deadline), lambda: work_until_done(keys[::-1], deadline),
                          timeout=150)
    assert failures == [None, None]

    assert Agent.objects.get(id=agent.id).active_revision_id == newer.id
    assert ControllerWork.objects.get(pk=keys[0]).reason_code == "REVISION_SUPERSEDED"
    assert ControllerWork.objects.get(pk=keys[1]).reason_code == "REVISION_ACTIVATED"
    assert fake_compute.serving(agent.id) == newer.id
    assert older.id not in fake_compute.calls_to("activate_revision")
