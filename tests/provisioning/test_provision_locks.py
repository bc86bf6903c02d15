"""Provisionings in one Namespace run their fenced steps side by side (PostgreSQL: real row
locks). The steps hold the Namespace and the Secrets they bind with shared locks, so two of
them never wait for each other (nor deadlock on the Secrets at COMMIT), while whatever would
delete or change those rows waits for both."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction

from occ.models import AgentProvisioningWork, AgentRevision, ControllerWork, Namespace, Secret
from occ.models.work import revision_reconcile_key
from provisioning import queue
from provisioning.jobs import provision
from tests.factories import SecretFactory
from tests.provisioning.jobs.test_concurrent_deploys import in_threads, work_until_done
from tests.provisioning.provisioning_support import admit, plan_for

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

MEET_SECONDS = 10


def admitted_pair(namespace: Namespace, actor: Any) -> list[AgentProvisioningWork]:
    """Two provisionings that bind the same model key and the same tool token."""
    harness = SecretFactory(namespace=namespace, name="model-key")
    tool = SecretFactory(namespace=namespace, name="tool-token")
    return [admit(namespace, actor, plan_for(namespace, name=name, harness=harness, bound={"TOOL_TOKEN": tool}))
            for name in ("first", "second")]


def meeting_inside(monkeypatch: pytest.MonkeyPatch, attribute: str, *, after: bool,
                   while_both_inside: Callable[[], None] = lambda: None) -> list[str]:
    """Make the service ``provision.<attribute>`` (called inside a fenced step) wait until
    the other worker is inside the same step too. Returns what happened, in order."""
    original = getattr(provision, attribute)
    meeting = threading.Barrier(2, action=while_both_inside)
    events: list[str] = []

    def meet() -> None:
        meeting.wait(MEET_SECONDS)  # BrokenBarrierError if the other one cannot get in
        events.append("met")

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not after:
            meet()
        result = original(*args, **kwargs)
        if after:
            meet()
        return result

    monkeypatch.setattr(provision, attribute, wrapped)
    return events


def refused_at_once(sql: str, params: list[Any]) -> bool:
    """Whether an exclusive lock is refused now (``NOWAIT``), from a connection of its own."""
    outcome: list[bool] = []

    def attempt() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql + " FOR UPDATE NOWAIT", params)
            outcome.append(False)
        except OperationalError:
            outcome.append(True)
        finally:
            connection.close()

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join(MEET_SECONDS)
    return outcome == [True]


def test_two_configure_steps_hold_the_namespace_and_secrets_together_and_exclude_their_deletion(
        admin_actor, ready_namespace, fake_compute, monkeypatch):
    rows = admitted_pair(ready_namespace, admin_actor)
    bound = Secret.objects.get(namespace=ready_namespace, name="tool-token")  # configuration_create locks it
    refused: dict[str, bool] = {}

    def while_both_inside() -> None:  # both steps hold their locks right now
        refused["namespace"] = refused_at_once("SELECT id FROM occ_namespace WHERE id = %s", [ready_namespace.id])
        refused["secret"] = refused_at_once("SELECT id FROM occ_secret WHERE id = %s", [bound.id])

    # The grant runs after configuration_create locked the bound Secrets.
    met = meeting_inside(monkeypatch, "agent_secret_access_grant", after=False, while_both_inside=while_both_inside)
    outcomes = in_threads(*[lambda row=row: queue.run_work(row.work_id) for row in rows], timeout=MEET_SECONDS + 20)

    assert met == ["met", "met"], "both configure steps were inside at once"
    assert refused == {"namespace": True, "secret": True}, "deleting the Namespace or a Secret had to wait"
    assert [getattr(outcome, "reason_code", outcome) for outcome in outcomes] == ["PROVISIONING_SUCCEEDED"] * 2
    assert [w.attempt_count for w in ControllerWork.objects.filter(pk__in=[r.work_id for r in rows])] == [1, 1], \
        "no attempt was lost to a deadlock"


def test_two_handoffs_admit_revisions_of_the_same_secrets_at_once(admin_actor, ready_namespace, fake_compute,
                                                                 monkeypatch):
    rows = admitted_pair(ready_namespace, admin_actor)
    # When the deploy returns it has share-locked both Secrets; each step commits only after
    # the other one got that far too (whichever is faster waits inside its handoff).
    met = meeting_inside(monkeypatch, "agent_deploy_for_provisioning", after=True)

    outcomes = in_threads(*[lambda row=row: queue.run_work(row.work_id) for row in rows], timeout=MEET_SECONDS + 20)

    assert met == ["met", "met"]
    assert [getattr(outcome, "reason_code", outcome) for outcome in outcomes] == ["PROVISIONING_SUCCEEDED"] * 2
    revisions = list(AgentRevision.objects.filter(agent_id__in=[r.agent_id for r in rows]))
    assert sorted(rev.number for rev in revisions) == [1, 1]
    keys = [revision_reconcile_key(rev.id) for rev in revisions]
    deadline = time.monotonic() + 60
    assert in_threads(lambda: work_until_done(keys, deadline), lambda: work_until_done(keys[::-1], deadline)) == [
        None, None]
    assert set(ControllerWork.objects.filter(pk__in=keys).values_list("reason_code", flat=True)) == {
        "REVISION_ACTIVATED"}


def test_share_locked_keeps_the_ordering_and_answers_an_empty_filter(ready_namespace):
    from occ.services.locks import share_locked

    names = ["b-key", "a-key", "c-key"]
    for name in names:
        SecretFactory(namespace=ready_namespace, name=name)
    with transaction.atomic():
        locked = share_locked(Secret.objects.filter(namespace=ready_namespace).order_by("name"))
        assert [secret.name for secret in locked] == sorted(names)
        assert share_locked(Secret.objects.filter(id__in=[])) == []
        assert refused_at_once("SELECT id FROM occ_secret WHERE id = %s", [locked[0].id])
