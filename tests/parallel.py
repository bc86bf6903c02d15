"""The suite on several pytest-xdist workers (``make test`` runs ``-n 2 --dist loadgroup``).

Loaded with ``-p tests.parallel`` (pyproject's addopts), before pytest-django reads the
settings, so what it changes in the environment is what each worker's settings see:

- each worker has its own Redis database (the run's ``CELERY_BROKER_URL`` database plus one plus
  the worker's number) and its own data folder below the run's, so a real Celery worker one test
  starts never takes a task another worker's test queued; pytest-django already gives each
  worker its own test database (``test_occ_gw0``), and a test's stack its own after that;
- every test that uses the session's Kubernetes test cluster (the ``kube`` fixture, directly or
  through another fixture) runs on one worker, as one group: a run starts one cluster, and the
  real node it may start changes the host (sysctls, iptables, mounts), which two cannot share.

Without xdist (``pytest tests/...``) nothing here changes anything.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from project.data_dir import PROJECT_DIR, DataDir

KUBERNETES_GROUP = "kubernetes"
REDIS_DATABASES = 16


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "kube" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(KUBERNETES_GROUP))
