"""``occ``'s tables: an id is never cut or wrapped in its middle, at any terminal width."""

from __future__ import annotations

import io

import pytest
from occ_cli import output
from rich.console import Console

AGENT = "agt_0b7e6a43-3c1e-4c3b-9a1e-5d1f2b3c4d5e"
CONFIGURATION = "cfg_5a1f2b3c-4d5e-4c3b-9a1e-0b7e6a433c1e"
REVISION = "rev_9a1e5d1f-2b3c-4d5e-8b7e-6a433c1e4c3b"
COLUMNS = [("ID", "id"), ("NAME", "name"), ("CONFIGURATION", "configurationId"), ("STATE", "state"),
           ("REVISION", "activeRevisionId")]
ROW = {"id": AGENT, "name": "support-bot-with-a-long-name", "configurationId": CONFIGURATION, "state": "running",
       "activeRevisionId": REVISION}


def printed(monkeypatch, width: int, columns=COLUMNS, rows=(ROW,)) -> str:
    buffer = io.StringIO()
    monkeypatch.setattr(output, "stdout", Console(file=buffer, width=width, no_color=True, soft_wrap=True))
    output.print_table(columns, [dict(row) for row in rows], title="Agents")
    return buffer.getvalue()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_three_ids_that_do_not_fit_print_one_block_per_row_with_every_id_whole(monkeypatch, width):
    text = printed(monkeypatch, width, rows=(ROW, ROW | {"name": "second"}))

    lines = text.splitlines()
    assert lines[0] == "Agents"
    for value in (AGENT, CONFIGURATION, REVISION):
        assert sum(value in line for line in lines) == 2, text
    assert [line.split()[0] for line in lines if line.startswith("NAME")] == ["NAME", "NAME"]
    assert "support-bot-with-a-long-name" in text
    assert "second" in text
    assert "┃" not in text, "no boxed table that would cut the ids"


def test_a_table_that_fits_stays_a_table_with_its_ids_whole_and_the_rest_folded(monkeypatch):
    columns = [("ID", "id"), ("NAME", "name"), ("STATE", "state")]
    row = {"id": AGENT, "name": "support-bot-with-a-rather-long-descriptive-name", "state": "running"}

    text = printed(monkeypatch, 80, columns, (row,))

    assert "┃ ID" in text
    assert AGENT in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "support-bot-with-a-rather-long-descriptive-name" not in text.replace("\n", ""), "the name folded"


def test_the_width_a_table_needs_counts_ids_whole_and_folds_the_rest():
    values = [[AGENT, "x" * 30, "running"]]

    needed = output.table_width([("ID", "id"), ("NAME", "name"), ("STATE", "state")], values)

    assert needed == 1 + (len(AGENT) + 3) + (output.FOLDED_COLUMN_WIDTH + 3) + (len("running") + 3)
