"""What ``occ`` prints: Rich tables for people, one JSON document for scripts.

Data goes to stdout only when a command succeeds; progress, notes and errors go to stderr
(as JSON with ``--json``), so ``occ … --json | jq`` always reads a whole document.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from occ_cli.client import CliError

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


# The narrowest a folding column is made before the table gives way to one block per row.
FOLDED_COLUMN_WIDTH = 8


def print_table(columns: Sequence[tuple[str, str]], rows: Iterable[dict[str, Any]], *,
                title: str | None = None) -> None:
    """``columns``: (heading, key) pairs; a key may be dotted (``runtime.state``). An id is
    never wrapped or cut in its middle (it is copied whole into the next command); other
    columns fold. When the terminal is too narrow for every id whole beside the other columns
    folded (three ids do not fit in 80 columns), each row is printed as a block of fields."""
    rows = list(rows)
    values = [[cell(lookup(row, key)) for _heading, key in columns] for row in rows]
    if table_width(columns, values) > stdout.width:
        print_blocks(columns, values, title=title)
        return
    table = Table(title=title, title_justify="left", header_style="bold")
    for heading, key in columns:
        table.add_column(heading, overflow="fold", no_wrap=is_id(key), min_width=None)
    for row_values in values:
        table.add_row(*row_values)
    stdout.print(table)


def is_id(key: str) -> bool:
    return key == "id" or key.endswith("Id")


def table_width(columns: Sequence[tuple[str, str]], values: Sequence[Sequence[str]]) -> int:
    """The fewest columns the boxed table needs: every id whole, the other columns folded to
    ``FOLDED_COLUMN_WIDTH`` (or their heading, or their longest value, if either is shorter
    or the heading longer); each column costs its two padding spaces and a border."""
    width = 1
    for index, (heading, key) in enumerate(columns):
        longest = max((len(row[index]) for row in values), default=0)
        content = max(len(heading), longest if is_id(key) else min(longest, FOLDED_COLUMN_WIDTH))
        width += content + 3
    return width


def print_blocks(columns: Sequence[tuple[str, str]], values: Sequence[Sequence[str]], *,
                 title: str | None) -> None:
    if title:
        stdout.print(title, style="italic", highlight=False, markup=False)
    for number, row_values in enumerate(values):
        if number:
            stdout.print()
        print_fields(list(zip((heading for heading, _key in columns), row_values, strict=True)))


def print_fields(fields: Sequence[tuple[str, Any]], *, title: str | None = None) -> None:
    table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for name, value in fields:
        table.add_row(name, cell(value))
    stdout.print(table)


def lookup(row: dict[str, Any], dotted: str) -> Any:
    value: Any = row
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def note(message: str) -> None:
    stderr.print(message, highlight=False, markup=False)


def report_error(error: CliError, *, as_json: bool) -> None:
    if as_json:
        sys.stderr.write(json.dumps(error.as_json(), ensure_ascii=False) + "\n")
        return
    heading = f"error: {error.code}: {error.message}" if error.code else f"error: {error.message}"
    stderr.print(heading, style="red", highlight=False, markup=False)
    for detail in error.details:
        pointer = detail.get("pointer") or detail.get("path") or ""
        text = detail.get("message") or detail.get("code") or ""
        stderr.print(f"  {pointer or '(body)'}: {text}", highlight=False, markup=False)
