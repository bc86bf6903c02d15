"""What the fleet-growth benchmarks share (bench/fleet_scale.py, bench/usage_collection.py): their
``--sizes`` and ``--calls`` arguments, OCC in this process on a fresh PostgreSQL database with the
fake ComputeDriver (its state in memory), and the slope between two sizes on a log-log scale."""

from __future__ import annotations

import argparse
import contextlib
import math
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from bench.worker_support import bench_database_url, configure_django, migrate, process_env, recreate_database


def parse_fleet_args(argv: Sequence[str] | None, *, description: str, sizes: str, sizes_help: str, calls: int,
                     calls_help: str) -> argparse.Namespace:
    """``--sizes`` (at least two, ascending, each at least 1; a list of ints once parsed) and
    ``--calls``, with the script's defaults and the names of what it counts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sizes", default=sizes, help=f"{sizes_help}, ascending (default {sizes})")
    parser.add_argument("--calls", type=int, default=calls, help=f"{calls_help} (default {calls})")
    args = parser.parse_args(argv)
    args.sizes = [int(size) for size in args.sizes.split(",")]
    if len(args.sizes) < 2 or args.sizes != sorted(set(args.sizes)) or args.sizes[0] < 1:
        parser.error("--sizes: at least two ascending sizes, each at least 1")
    return args


@contextlib.contextmanager
def fake_compute_occ(default_database: str, data_prefix: str) -> Iterator[None]:
    """OCC set up in this process: ``DATABASE_URL`` (else ``default_database`` on the local
    PostgreSQL) dropped, recreated and migrated, a temporary data directory, the fake ComputeDriver."""
    database_url = bench_database_url(default_database)
    recreate_database(database_url)
    with tempfile.TemporaryDirectory(prefix=data_prefix) as data_dir:
        configure_django(process_env(database_url, Path(data_dir), OCC_COMPUTE_DRIVER="fake",
                                     OCC_FAKE_COMPUTE_STATE="memory"))
        migrate()
        yield


def slope(small: tuple[int, float], large: tuple[int, float]) -> float:
    """log(t2/t1) / log(n2/n1): 0 flat, 1 linear."""
    (n1, t1), (n2, t2) = small, large
    return math.log(max(t2, 1e-6) / max(t1, 1e-6)) / math.log(n2 / n1)
