"""The queue on Django's connections: claims and completions follow reconnects and threads,
show up in logged queries (three statements a job), and the work table carries only the
indexes a claim and a completion need."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import close_old_connections, connection, connections
from django.test.utils import CaptureQueriesContext

from occ.models import WorkState
from provisioning import queue
from provisioning.outcomes import Complete
from tests.provisioning.conftest import make_work, reload


def claim_and_complete(namespace) -> None:
    work = make_work(namespace)
    claim = queue.claim(work.pk)
    assert claim is not None
    assert queue.apply_outcome(claim, Complete("TEST_DONE")) == Complete("TEST_DONE")
    assert reload(work).state == WorkState.SUCCEEDED


@pytest.mark.postgres_only  # an in-memory SQLite test database is never really closed
@pytest.mark.django_db(transaction=True)
def test_claims_go_on_after_a_reconnect(namespace):
    claim_and_complete(namespace)
    connection.close()
    assert connection.connection is None
    claim_and_complete(namespace)  # reconnects


@pytest.mark.postgres_only  # the server ends the session; SQLite has none
@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_dropped_between_tasks_is_replaced_before_the_claim(namespace):
    """Between tasks Django resets its health check (``close_old_connections``); the next
    claim must not go out on the dead connection."""
    claim_and_complete(namespace)
    assert connection.health_check_enabled  # CONN_HEALTH_CHECKS: project.settings turns it on for PostgreSQL
    work = make_work(namespace)
    params = connection.settings_dict
    with psycopg.connect(dbname=params["NAME"], host=params["HOST"], port=params["PORT"] or None,
                         user=params["USER"], password=params["PASSWORD"] or None, autocommit=True) as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])
    close_old_connections()  # the end of one task / the start of the next

    claim = queue.claim(work.pk)  # the first statement on this connection since the drop

    assert claim is not None
    assert queue.apply_outcome(claim, Complete("TEST_DONE")) == Complete("TEST_DONE")
    assert reload(work).state == WorkState.SUCCEEDED


def test_a_job_without_effects_costs_a_claim_and_one_completion_statement(namespace):
    """The claim locks the row and updates it; a Complete without effects is one fenced update."""
    with CaptureQueriesContext(connection) as captured:
        claim_and_complete(namespace)
    # The test's own transaction makes the claim a savepoint; a worker's claim is not.
    statements = [query["sql"] for query in captured.captured_queries if "SAVEPOINT" not in query["sql"]]
    locks = [sql for sql in statements if sql.startswith("SELECT") and '"state" = \'queued\'' in sql]
    updates = [sql for sql in statements if sql.startswith("UPDATE")]
    claims = [sql for sql in updates if '"state" = \'claimed\',' in sql]
    completions = [sql for sql in updates if '"state" = \'succeeded\',' in sql]
    assert (len(locks), len(claims), len(completions)) == (1, 1, 1), statements
    if connection.vendor == "postgresql":
        assert "FOR UPDATE SKIP LOCKED" in locks[0]
    # make_work's insert and reload's read: nothing else of the queue's.
    assert len(statements) == 5, statements


@pytest.mark.django_db(transaction=True)
def test_each_thread_claims_on_its_own_connection(namespace):
    claim_and_complete(namespace)
    seen: list[object] = []

    def other_thread() -> None:
        try:
            claim_and_complete(namespace)
            seen.append(connection.connection)
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(30)
    assert len(seen) == 1
    assert seen[0] is not connection.connection
    claim_and_complete(namespace)


@pytest.mark.postgres_only
def test_the_work_table_has_no_pattern_ops_index_and_its_due_index_holds_queued_rows_only(db):
    """Every index entry costs each claim and completion (migration 0003): no LIKE index, and
    the scan of due work indexes queued rows only."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'occ_controllerwork'")
        definitions = [row[0] for row in cursor.fetchall()]
    assert not [d for d in definitions if "pattern_ops" in d], definitions
    due = [d for d in definitions if "(available_at)" in d]
    assert due, definitions
    assert all("WHERE ((state)::text = 'queued'::text)" in d for d in due), definitions
