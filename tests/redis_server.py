"""A Redis server of a test's own, on a free loopback port, that the test may kill and restart.

The shared Redis of the test run (CELERY_BROKER_URL) is never touched: a test that takes the
broker away starts this one (Debian's ``redis-server``), points its processes at ``url`` and
SIGKILLs it as an outage would. Nothing is persisted, so a restart comes back empty, the way a
Redis without a volume does.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis

START_TIMEOUT_SECONDS = 20


def redis_server_binary() -> str:
    """``redis-server`` on PATH, or the test skips with the reason (CI has it)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    return binary


class RedisServer:
    def __init__(self, *, port: int, log_dir: Path) -> None:
        self.port = port
        self.log_path = log_dir / f"redis-{port}.log"
        self.binary = redis_server_binary()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            with contextlib.suppress(redis.ConnectionError):
                if client.ping():
                    return
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"redis-server did not start on {self.port}:\n{self.log_path.read_text()[-2000:]}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL, as a crash: clients see their connections reset, then refused."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=START_TIMEOUT_SECONDS)
            self.process = None
