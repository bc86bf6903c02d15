"""The cursor the fixed statements share (``provisioning.queue._hot_cursor``) and the indexes of
the work table.

One cursor per thread and database connection serves every claim, renewal and completion.
It must follow the connection: a reconnect gets a new cursor, another thread its own, and
while queries are logged the statements go through Django's debug cursor and are recorded.
"""

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


def test_one_cursor_serves_every_statement_of_a_connection(namespace):
    claim_and_complete(namespace)
    first = queue._hot_cursor()
    claim_and_complete(namespace)
    assert queue._hot_cursor() is first


@pytest.mark.postgres_only  # an in-memory SQLite test database is never really closed
@pytest.mark.django_db(transaction=True)
def test_reconnecting_replaces_the_cursor(namespace):
    claim_and_complete(namespace)
    before = queue._hot_cursor()
    connection.close()
    assert connection.connection is None
    claim_and_complete(namespace)  # reconnects
    assert queue._hot_cursor() is not before
    assert queue._hot.driver_connection is connection.connection


@pytest.mark.postgres_only  # the server ends the session; SQLite has none
@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_dropped_between_tasks_is_replaced_before_the_claim(namespace):
    """Between tasks Django resets its health check (``close_old_connections``); the next
    claim must not go out on the dead connection the kept cursor belongs to."""
    claim_and_complete(namespace)
    assert connection.health_check_enabled  # CONN_HEALTH_CHECKS: occ.settings turns it on for PostgreSQL
    work = make_work(namespace)
    before = queue._hot_cursor()
    params = connection.settings_dict
    with psycopg.connect(dbname=params["NAME"], host=params["HOST"], port=params["PORT"] or None,
                         user=params["USER"], password=params["PASSWORD"] or None, autocommit=True) as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])
    close_old_connections()  # the end of one task / the start of the next

    claim = queue.claim(work.pk)  # the first statement on this connection since the drop

    assert claim is not None
    assert queue._hot_cursor() is not before
    assert queue.apply_outcome(claim, Complete("TEST_DONE")) == Complete("TEST_DONE")
    assert reload(work).state == WorkState.SUCCEEDED


def test_logged_queries_record_the_fixed_statements(namespace):
    claim_and_complete(namespace)  # a plain cursor is kept first
    with CaptureQueriesContext(connection) as captured:
        claim_and_complete(namespace)
    statements = [query["sql"] for query in captured.captured_queries]
    if connection.vendor == "postgresql":
        assert any("FOR UPDATE SKIP LOCKED" in sql for sql in statements), statements
    assert any("'succeeded'" in sql for sql in statements), statements
    claim_and_complete(namespace)  # logging off again: back to a plain cursor
    assert not queue._hot.logged


@pytest.mark.django_db(transaction=True)
def test_each_thread_keeps_its_own_cursor(namespace):
    claim_and_complete(namespace)
    mine = queue._hot_cursor()
    seen: list[object] = []

    def other_thread() -> None:
        try:
            claim_and_complete(namespace)
            seen.append(queue._hot_cursor())
            seen.append(queue._hot.driver_connection)
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(30)
    assert len(seen) == 2
    assert seen[0] is not mine
    assert seen[1] is not connection.connection
    assert queue._hot_cursor() is mine


@pytest.mark.postgres_only
def test_the_work_table_has_no_pattern_ops_indexes_and_a_queued_only_due_index(db):
    """Every index costs each claim and completion an entry (migration 0003)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'occ_controllerwork'")
        indexes = dict(cursor.fetchall())
    assert not [name for name, definition in indexes.items() if "pattern_ops" in definition], indexes
    assert sorted(indexes) == ["occ_controllerwork_pkey", "work_agent_idx", "work_namespace_idx",
                               "work_one_claim_per_resource", "work_queued_due_idx"]
    assert "WHERE ((state)::text = 'queued'::text)" in indexes["work_queued_due_idx"]
