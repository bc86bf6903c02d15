"""A short ``make fuzz`` in the test suite, on the tests' database engine: schemathesis against
the real web process for a bounded time finds no 5xx (but a documented 501) and no response
outside the documented statuses, media types and schemas, errors included."""

from __future__ import annotations

import pytest

from tests.e2e.stack import stack_database
from tests.fuzz.run import fuzz

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]
SECONDS = 40


def test_schemathesis_finds_no_server_error_and_nothing_undocumented(tmp_path, django_db_blocker):
    # On PostgreSQL (CI) a database of its own: NUL and lone surrogates fail there, not on SQLite.
    with django_db_blocker.unblock(), stack_database(tmp_path, suffix="fuzz") as database:
        outcome = fuzz(SECONDS, workdir=tmp_path, database_url=database.url)
    assert outcome.requests > 50, outcome.output[-4000:]
    assert outcome.failures == 0, outcome.output[-8000:]
    assert outcome.returncode == 0, outcome.output[-8000:]
