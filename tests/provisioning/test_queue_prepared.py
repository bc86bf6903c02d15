"""The queue's statements as PostgreSQL prepared statements (``OCC_DATABASE_PREPARED_STATEMENTS``).

psycopg prepares a statement once it has run ``prepare_threshold`` times on a connection;
from then on PostgreSQL reuses its plan with new parameters. The claim and the fenced
completion must behave the same when they run prepared: the fence must still refuse a wrong
token or another key.
"""

from __future__ import annotations

import copy
import time

import pytest
from django.db import connection

from occ.models import WorkState
from provisioning import queue
from provisioning.outcomes import ClaimLost, Complete
from tests.provisioning.conftest import make_work, reload

pytestmark = [pytest.mark.postgres_only]


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.fixture
def preparing_connection(db):
    connection.ensure_connection()
    if connection.settings_dict["OPTIONS"].get("server_side_binding") is not True or (
        connection.connection.prepare_threshold is None
    ):
        pytest.skip("OCC_DATABASE_PREPARED_STATEMENTS is false in this run: nothing is prepared")
    return connection.connection.prepare_threshold


def test_claims_and_completions_run_prepared_and_keep_the_fence(preparing_connection, namespace):
    for _ in range(preparing_connection + 2):  # past the threshold: the last runs are prepared
        make_work(namespace)
        claim = queue.claim()
        assert claim is not None
        assert queue.apply_outcome(claim, Complete("TEST_DONE")) == Complete("TEST_DONE")
        assert reload(claim.work).state == WorkState.SUCCEEDED

    statements = prepared_statements()
    assert any("FOR UPDATE SKIP LOCKED" in s for s in statements), statements
    assert any(s.startswith("UPDATE") and '"completed_at"' in s and '"lease_expires_at" >' in s
               for s in statements), statements

    work = make_work(namespace)
    claim = queue.claim()
    assert claim is not None
    assert claim.key == work.pk
    for holder in ({"claim_token": "not-the-token"}, {"idempotency_key": "agent:another:stopped:1"}):
        with pytest.raises(ClaimLost):
            queue.apply_outcome(held_as(claim, **holder), Complete("TEST_DONE"))
    assert reload(work).state == WorkState.CLAIMED
    assert queue.apply_outcome(claim, Complete("TEST_DONE")) == Complete("TEST_DONE")
    assert reload(work).state == WorkState.SUCCEEDED
    assert queue.claim() is None


def held_as(claim: queue.Claim, **row: object) -> queue.Claim:
    """The claim as a worker holding another token or key would hold it."""
    work = copy.copy(claim.work)
    for attribute, value in row.items():
        setattr(work, attribute, value)
    return queue.Claim(work, lease_seconds=claim.lease_seconds, confirmed_at=time.monotonic())


def test_prepared_statements_are_planned_with_their_values(preparing_connection):
    """A generic plan cannot use the work table's partial indexes (``state`` is a parameter):
    the claim would read the whole table. Each run is planned with its own values."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_custom_plan"
