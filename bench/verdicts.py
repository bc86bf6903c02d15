"""One measured figure against its target, printed the same way by every benchmark.

When ``OCC_BENCH_VERDICTS`` names a file (``bench/run.py`` sets it for each benchmark it runs),
every verdict printed and every skip is also appended to it as one JSON line, so the runner
builds a single table of every figure without parsing what the benchmarks print.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass

RECORD_ENV = "OCC_BENCH_VERDICTS"


@dataclass(frozen=True)
class Verdict:
    """One measured ratio against its target: ``value <= target`` or ``value >= target``."""

    name: str
    value: float
    target: float
    at_most: bool
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.value <= self.target if self.at_most else self.value >= self.target

    @property
    def goal(self) -> str:
        return f"{'<=' if self.at_most else '>='} {self.target:g}"

    def line(self) -> str:
        return (f"  {self.name:<40}{self.value:>8.3f}  target {self.goal}  "
                f"{'PASS' if self.passed else 'MISS'}{'  ' + self.detail if self.detail else ''}")


def print_verdicts(verdicts: Sequence[Verdict]) -> None:
    print("\nresult")
    for verdict in verdicts:
        print(verdict.line())
    _record([{"verdict": asdict(verdict)} for verdict in verdicts])


def print_skip(reason: str) -> None:
    """A benchmark that cannot run here (a missing runtime or cluster): said, and recorded."""
    print(f"SKIPPED: {reason}")
    _record([{"skipped": reason}])


def _record(lines: list[dict[str, object]]) -> None:
    path = os.environ.get(RECORD_ENV)
    if not path or not lines:
        return
    with open(path, "a", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)
