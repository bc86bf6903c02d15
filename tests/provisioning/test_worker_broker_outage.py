"""A worker started as the Procfile starts it rides out Redis being killed and restarted.

Celery's Gossip bootstep (worker-to-worker events) logged ``Error on restarting Gossip:
AttributeError("'NoneType' object has no attribute 'connection_errors'")`` with a traceback at
ERROR each time the broker went away: on a lost connection Celery 5.7 sets the consumer's
connection to None before it restarts the bootsteps, and Gossip's stop then closes its channel,
whose Redis transport deletes the auto-delete event queue on the dead server and hands the
ConnectionError to ``kombu.common.ignore_errors(None, …)``, which fails reading the error
types off None. OCC uses neither Gossip (elections, clock sync) nor Mingle (revoked ids at
start-up): a claim is leased and fenced in the database, and nothing revokes a task. The
workers run ``--without-gossip --without-mingle`` (Procfile, deploy/kubernetes/worker.yaml).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from tests.e2e.stack import REMOVED_ENV, REPO, StackProcess, free_port, stack_database, wait_until
from tests.redis_server import RedisServer

pytestmark = pytest.mark.slow

OUTAGES = 3
# A worker starts in 5-10 s on an idle 2-core machine and reconnects within its retry backoff
# (2, 4, 6 … s); leave room for a loaded one.
PROCESS_TIMEOUT_SECONDS = 120
# A real service call, as a person's request makes it: the Namespace, its audit event and work
# row in one transaction, the nudge sent to the broker on commit. Prints the work key.
CREATE_NAMESPACE = """
import json, os
from pathlib import Path
from occ.commands.namespaces import NamespaceCreate
from occ.iam.keys import actor_for_token
from occ.models.work import namespace_ready_key
from occ.services.namespaces import namespace_create
document = json.loads((Path(os.environ["OCC_DATA_DIR"]) / "bootstrap-admin-key.json").read_text())
actor = actor_for_token(document["data"]["key"])
namespace = namespace_create(actor=actor, command=NamespaceCreate(name={name!r}))
print(namespace_ready_key(namespace.id))
"""


def procfile_worker_argv() -> list[str]:
    """The Procfile's worker command, run with this interpreter."""
    procfile = (REPO / "Procfile").read_text()
    line = next(line for line in procfile.splitlines() if line.startswith("worker:"))
    argv = shlex.split(line.removeprefix("worker:"))
    argv = argv[1:] if argv[0] == "exec" else argv
    assert argv[0] == "celery", line
    return [sys.executable, "-m", "celery", *argv[1:]]


def test_the_worker_takes_work_after_each_redis_restart_and_logs_no_traceback(tmp_path):
    data_dir, log_dir = tmp_path / "data", tmp_path / "logs"
    log_dir.mkdir()
    redis = RedisServer(port=free_port(), log_dir=log_dir)
    redis.start()
    with stack_database(data_dir, suffix="broker") as database:
        env = {k: v for k, v in os.environ.items() if k not in REMOVED_ENV} | {
            "OCC_DATA_DIR": str(data_dir), "OCC_COMPUTE_DRIVER": "fake", "CELERY_BROKER_URL": redis.url,
            "PYTHONUNBUFFERED": "1", "OCC_LOG_LEVEL": "INFO"} | ({"DATABASE_URL": database.url} if database.url else {})

        def run(*command: str) -> str:
            done = subprocess.run([sys.executable, *command], cwd=REPO, env=env, capture_output=True, text=True,
                                  timeout=PROCESS_TIMEOUT_SECONDS, check=False)
            assert done.returncode == 0, done.stderr[-3000:]
            return done.stdout

        for command in (["-m", "project.data_dir"], ["manage.py", "migrate", "-v0"], ["manage.py", "occ_bootstrap"]):
            run(*command)
        worker = StackProcess("worker", procfile_worker_argv(), env=env, log_dir=log_dir)
        try:
            def takes_work(name: str) -> None:
                key = run("manage.py", "shell", "-c", CREATE_NAMESPACE.format(name=name)).strip().splitlines()[-1]
                wait_until(lambda: f"worker.completed key={key} " in worker.log(), timeout=PROCESS_TIMEOUT_SECONDS,
                           what=f"the worker to complete {key}", diagnose=worker.tail)

            wait_until(lambda: " ready." in worker.log(), timeout=PROCESS_TIMEOUT_SECONDS, what="the worker",
                       diagnose=worker.tail)
            takes_work("before")
            for outage in range(1, OUTAGES + 1):
                redis.kill()
                wait_until(lambda n=outage: worker.log().count("Connection to broker lost") == n,
                           timeout=PROCESS_TIMEOUT_SECONDS, what=f"the worker to see outage {outage}",
                           diagnose=worker.tail)
                redis.start()
                wait_until(lambda n=outage: worker.log().count("Connected to redis://") == n + 1,
                           timeout=PROCESS_TIMEOUT_SECONDS, what=f"the worker to reconnect after outage {outage}",
                           diagnose=worker.tail)
                takes_work(f"after-outage-{outage}")
        finally:
            worker.stop()
            redis.kill()
    log = worker.log()
    assert "Traceback" not in log, worker.tail(80)
    errors = [line for line in log.splitlines() if "ERROR/" in line]
    assert all("consumer: Cannot connect to redis://" in line for line in errors), errors
    assert worker.process.returncode == 0, worker.tail()
