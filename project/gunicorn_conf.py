"""gunicorn's settings for OCC's web process (``gunicorn -c python:project.gunicorn_conf``).

The Procfile's web line uses this file; ``--bind`` and anything else given on the command line
override it. Threads, so that a request waiting on the database or a slow client does not
hold a whole process: each worker serves ``threads`` requests at once, and a connection gets
a thread only once its request head has arrived (project/gunicorn_worker.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

workers = int(os.environ.get("OCC_WEB_WORKERS", "2"))
worker_class = "project.gunicorn_worker.ThreadWorker"
threads = int(os.environ.get("OCC_WEB_THREADS", "8"))
# Connections a worker holds open at once (idle, waiting for a head, or being served).
worker_connections = 1000
# Seconds a connection kept alive after a response waits for the client's next request (one
# that owes a request may idle gunicorn_worker.REQUEST_IDLE_SECONDS). Longer than any client's
# pool keeps a connection (httpx and the CLI 5 s, load balancers and ingress controllers 60 s):
# a server that closes first races the client reusing it, and that request is lost. Idle kept-alive
# connections wait in the poller, holding no thread.
keepalive = 75
# A worker whose main loop has not reported in for this long is restarted by the arbiter.
timeout = 30
graceful_timeout = 20
accesslog = "-"
# gunicorn >= 24 opens a control socket under ~/.gunicorn by default, shared by every gunicorn
# of the user; OCC does not use it.
control_socket_disable = True

# /metrics (project/metrics.py) sums every worker process's counters through prometheus_client's
# multiprocess files. The directory must be empty when the server starts and set before a worker
# imports prometheus_client: in the master, at start (a hook, so that importing this module, as a
# test does, changes nothing). An operator's own PROMETHEUS_MULTIPROC_DIR is emptied; else one of
# our own is made and removed at exit.
_own_metrics_dir: str | None = None


def on_starting(server: Any) -> None:
    global _own_metrics_dir
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        for stale in Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).glob("*.db"):
            stale.unlink()
    else:
        _own_metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="occ-metrics-")


def child_exit(server: Any, worker: Any) -> None:
    # Imported here, not at the top: a master that had imported prometheus_client before the
    # directory was set would hand its workers the single-process values.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server: Any) -> None:
    if _own_metrics_dir is not None:
        shutil.rmtree(_own_metrics_dir, ignore_errors=True)
