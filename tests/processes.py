"""Process-group checks shared by the tests that start OCC's own processes."""

from __future__ import annotations

from pathlib import Path


def group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. A zombie does not: it has exited and
    only waits to be reaped (here PID 1 may never reap orphans, so ``killpg(pgid, 0)``, which
    counts zombies, would report a group whose processes all ended)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
