"""A short ``make fuzz`` in the test suite: schemathesis against the real web process for a
bounded time finds no 5xx (but a documented 501) and no response outside the documented
statuses, media types and schemas, errors included."""

from __future__ import annotations

import pytest

from tests.fuzz.run import fuzz

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]
SECONDS = 40


def test_schemathesis_finds_no_server_error_and_nothing_undocumented(tmp_path):
    outcome = fuzz(SECONDS, workdir=tmp_path)
    assert outcome.requests > 50, outcome.output[-4000:]
    assert outcome.failures == 0, outcome.output[-8000:]
    assert outcome.returncode == 0, outcome.output[-8000:]
