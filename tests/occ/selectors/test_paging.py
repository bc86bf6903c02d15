"""The keyset cursors: one framing for the moment cursors (audit log, API lists) and the text
cursors (the console's Agents, by name); anything that is not one of ours decodes to None."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from occ.selectors.paging import decode_cursor, decode_text_cursor, encode_keys, encode_text_keys


def test_a_moment_cursor_round_trips():
    moment = datetime(2026, 12, 7, 13, 0, 0, 123456, tzinfo=UTC)
    assert decode_cursor(encode_keys(moment, "ag_1")) == (moment, "ag_1")


@pytest.mark.parametrize("text", ["support bot", "a|b|c", "ünïcödé 名前", "x" * 200])
def test_a_text_cursor_round_trips_whatever_the_name_holds(text):
    cursor = encode_text_keys(text, "ag_1")
    assert "=" not in cursor
    assert "/" not in cursor
    assert "+" not in cursor
    assert decode_text_cursor(cursor) == (text, "ag_1")


def framed(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    pytest.param("garbage!", id="not-base64"),
    pytest.param(framed(b"no-separator"), id="no-id"),
    pytest.param(framed(b"|ag_1"), id="no-key"),
    pytest.param(framed(b"name|"), id="empty-id"),
    pytest.param(framed(b"name|ag\x001"), id="nul-in-id"),
    pytest.param(framed(b"na\x00me|ag_1"), id="nul-in-key"),
    pytest.param(framed(b"\xff\xfe|ag_1"), id="not-utf8"),
])
def test_a_text_cursor_that_is_not_ours_is_none(cursor):
    assert decode_text_cursor(cursor) is None


@pytest.mark.parametrize("cursor", [
    pytest.param(encode_text_keys("support bot", "ag_1"), id="a-name"),
    pytest.param(encode_keys(datetime(2026, 1, 1), "ag_1"), id="no-time-zone"),
    pytest.param(framed(b"2026-02-30T00:00:00+00:00|ag_1"), id="no-such-day"),
])
def test_a_moment_cursor_that_is_not_ours_is_none(cursor):
    assert decode_cursor(cursor) is None
