"""Queue fixtures: work rows of every shape, and a test job registry in place of job_for."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from occ import nudges
from occ.models import ControllerWork, Namespace, NamespaceStatus, WorkState
from provisioning import queue
from provisioning.outcomes import Complete, Outcome

_sequence = itertools.count(1)


@pytest.fixture
def namespace(db) -> Namespace:
    return Namespace.objects.create(name=f"queue-{next(_sequence)}", status=NamespaceStatus.READY)


def make_work(namespace: Namespace, *, key: str | None = None, agent_id: str | None = None,
              namespace_target: str | None = None, **fields: Any) -> ControllerWork:
    """A queued row, due now. Exact-Agent lifecycle work unless a namespace target is given."""
    now = timezone.now()
    n = next(_sequence)
    if namespace_target is not None:
        shape: dict[str, Any] = {"job": "namespace", "namespace_target": namespace_target}
        key = key or f"namespace:{namespace.id}:{namespace_target}:{n}"
    else:
        agent_id = agent_id or f"agt_test{n:05d}"
        shape = {"job": "agent_stop", "agent_id": agent_id, "agent_target": "stopped"}
        key = key or f"agent:{agent_id}:stopped:{n}"
    values: dict[str, Any] = {
        "idempotency_key": key, "namespace": namespace, "actor_id": "usr_test", "state": WorkState.QUEUED,
        "available_at": now - timedelta(milliseconds=1), "max_attempts": 5, "created_at": now, "updated_at": now,
    } | shape | fields
    return ControllerWork.objects.create(**values)


def reload(work: ControllerWork) -> ControllerWork:
    return ControllerWork.objects.get(pk=work.pk)


@dataclass
class JobRegistry:
    """Test jobs by work key; unknown keys complete with TEST_DONE. Records every call."""

    jobs: dict[str, Callable[[queue.Claim], Outcome]] = field(default_factory=dict)
    calls: list[tuple[str, int, str]] = field(default_factory=list)

    def __call__(self, work: ControllerWork) -> Callable[[queue.Claim], Outcome]:
        job = self.jobs.get(work.idempotency_key, lambda claim: Complete("TEST_DONE"))

        def recorded(claim: queue.Claim) -> Outcome:
            self.calls.append((claim.key, claim.work.attempt_count, claim.token))
            return job(claim)

        return recorded

    def set(self, work: ControllerWork | str, job: Callable[[queue.Claim], Outcome]) -> None:
        self.jobs[work if isinstance(work, str) else work.pk] = job


@pytest.fixture
def jobs(monkeypatch) -> JobRegistry:
    """Replace provisioning.jobs.job_for (the jobs engineer's) with test jobs."""
    registry = JobRegistry()
    monkeypatch.setattr(queue, "resolve_job", registry)
    return registry


class SentNudges(list[str]):
    """Keys nudged now; ``later`` holds (key, countdown seconds) of nudges counted down."""

    def __init__(self) -> None:
        super().__init__()
        self.later: list[tuple[str, float]] = []

    def capture(self, key: str, *, countdown: float | None = None) -> bool:
        if countdown:
            self.later.append((key, countdown))
        else:
            self.append(key)
        return True


@pytest.fixture
def sent_nudges(monkeypatch) -> SentNudges:
    """Capture nudges instead of publishing them to a broker."""
    sent = SentNudges()
    monkeypatch.setattr(nudges, "nudge", sent.capture)
    return sent
