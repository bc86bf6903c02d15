"""A claim commits like every other transaction: nothing in the queue turns
``synchronous_commit`` off, for a claim of its own or one inside a caller's transaction."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from occ.models import WorkState
from provisioning import queue
from provisioning.outcomes import Complete
from tests.provisioning.conftest import make_work, reload

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


def test_a_claim_of_its_own_commits_synchronously(namespace):
    work = make_work(namespace)
    with CaptureQueriesContext(connection) as captured:
        claim = queue.claim()
    assert claim is not None
    assert claim.key == work.pk
    claims = [q["sql"] for q in captured.captured_queries if "FOR UPDATE SKIP LOCKED" in q["sql"]]
    assert len(claims) == 1
    assert not any("synchronous_commit" in query["sql"] for query in captured.captured_queries)
    assert not connection.in_atomic_block
    assert _synchronous_commit() == "on"
    assert reload(work).state == WorkState.CLAIMED
    assert queue.apply_outcome(claim, Complete("TEST_DONE")) == Complete("TEST_DONE")
    assert reload(work).state == WorkState.SUCCEEDED


def test_a_claim_inside_a_callers_transaction_leaves_its_commit_synchronous(namespace):
    work = make_work(namespace)
    with transaction.atomic():
        with CaptureQueriesContext(connection) as captured:
            claim = queue.claim()
        assert claim is not None
        assert claim.key == work.pk
        assert not any("synchronous_commit" in query["sql"] for query in captured.captured_queries)
        assert _synchronous_commit() == "on"
