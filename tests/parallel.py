"""The suite on several pytest-xdist workers, and the part of it that runs alone.

``make test`` runs the suite in two parts: ``pytest -n 2 --occ-tests=parallel`` (everything that
can share the machine, on two workers), then ``pytest --occ-tests=serial`` (in one process):

- every test that uses the session's Kubernetes test cluster (the ``kube`` fixture, directly or
  through another fixture): a run starts one cluster, and the real node it may start changes the
  host (sysctls, iptables, mounts), which two cannot share;
- every test marked ``serial``: the benchmarks' tiny runs (their fixed databases and Redis
  databases, some shared by two benchmarks).

xdist's own ``xdist_group`` cannot do this here: with pytest 9.2 a group is not carried into the
node ids the controller schedules by, so grouped tests were spread over both workers.

Loaded with ``-p tests.parallel`` (pyproject's addopts), before pytest-django reads the settings,
so what it changes in the environment is what each worker's settings see: each worker has its
own Redis database (the run's ``CELERY_BROKER_URL`` database plus one plus the worker's number)
and its own data folder below the run's, so a real Celery worker one test starts never takes a
task another worker's test queued; pytest-django gives each worker its own test database
(``test_occ_gw0``), and a test's stack its own after that. Without xdist nothing here changes the
environment, and ``--occ-tests`` defaults to ``all``.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from project.data_dir import PROJECT_DIR, DataDir

REDIS_DATABASES = 16
PARTS = ("all", "parallel", "serial")


def worker_index() -> int:
    """This worker's number (``gw3`` is 3); 0 when the run is not split."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker.removeprefix("gw")) if worker.startswith("gw") else 0


def worker_redis_url(url: str, *, index: int) -> str:
    """``url`` on this worker's own database: its database number plus one plus ``index``."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(base + 1 + index) % REDIS_DATABASES}"))


def _give_this_worker_its_own_services() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if broker.startswith("redis://"):
        os.environ["CELERY_BROKER_URL"] = worker_redis_url(broker, index=worker_index())
    base = Path(os.environ.get("OCC_DATA_DIR") or PROJECT_DIR / ".occ")
    folder = base / "test-workers" / worker
    DataDir(folder).create()
    os.environ["OCC_DATA_DIR"] = str(folder)


_give_this_worker_its_own_services()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--occ-tests", choices=PARTS, default="all",
                     help="which part of the suite: the tests that may run on parallel workers, those that "
                          "run alone (the Kubernetes test cluster's, the benchmarks'), or all (tests/parallel.py)")


def runs_alone(item: pytest.Item) -> bool:
    return "kube" in getattr(item, "fixturenames", ()) or item.get_closest_marker("serial") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    part = config.getoption("occ_tests")
    if part == "all":
        return
    kept = [item for item in items if runs_alone(item) == (part == "serial")]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
