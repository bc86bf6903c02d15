"""gunicorn's settings for OCC's web process (``gunicorn -c python:project.gunicorn_conf``).

The Procfile's web line uses this file; ``--bind`` and anything else given on the command line
override it. Threads, so that a request waiting on the database or a slow client does not
hold a whole process: each worker serves ``threads`` requests at once, and a connection gets
a thread only once its request head has arrived (project/gunicorn_worker.py).
"""

from __future__ import annotations

import os

workers = int(os.environ.get("OCC_WEB_WORKERS", "2"))
worker_class = "project.gunicorn_worker.ThreadWorker"
threads = int(os.environ.get("OCC_WEB_THREADS", "8"))
# Connections a worker holds open at once (idle, waiting for a head, or being served).
worker_connections = 1000
# Seconds an idle connection (kept alive, or not yet sending its head) stays open.
keepalive = 5
# A worker whose main loop has not reported in for this long is restarted by the arbiter.
timeout = 30
graceful_timeout = 20
accesslog = "-"
# gunicorn >= 24 opens a control socket under ~/.gunicorn by default, shared by every gunicorn
# of the user; OCC does not use it.
control_socket_disable = True
