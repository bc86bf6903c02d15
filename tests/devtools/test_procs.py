"""The supervisor of ``make run`` (devtools.procs) on a Procfile of plain shell processes:
a killed process comes back alone, a broken one stops everything, a stop is a stop."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from devtools import procs
from tests.conftest import service_missing
from tests.processes import group_running

ROOT = Path(__file__).resolve().parents[2]
STARTED = re.compile(r"(\w+)\.1 started \(pid=(\d+)\)")


def start(tmp_path: Path, procfile: str, **env: str) -> tuple[subprocess.Popen[bytes], Path]:
    (tmp_path / "Procfile").write_text(procfile)
    log_path = tmp_path / "procs.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "devtools.procs", "start", "-f", str(tmp_path / "Procfile"), "--no-colour"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        )
    return process, log_path


def started(log_path: Path) -> list[tuple[str, int]]:
    return [(name, int(pid)) for name, pid in STARTED.findall(log_path.read_text())]


def wait_for(predicate, log_path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, log_path.read_text()
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
    try:
        return process.wait(timeout=30)
    finally:
        if group_running(process.pid):
            os.killpg(process.pid, signal.SIGKILL)


def test_a_killed_process_is_restarted_alone_and_a_stop_stops_it(tmp_path):
    process, log_path = start(tmp_path, "steady: exec sleep 600\nvictim: sleep 600 & exec sleep 600\n")
    try:
        wait_for(lambda: len(started(log_path)) == 2, log_path)
        pids = dict(started(log_path))
        os.kill(pids["victim"], signal.SIGKILL)
        wait_for(lambda: len(started(log_path)) == 3, log_path)

        log = log_path.read_text()
        assert "victim.1 killed by SIGKILL" in log
        assert "restarting it in 1 s (the other processes keep running)" in log
        assert started(log_path)[-1][0] == "victim"
        restarted = started(log_path)[-1][1]
        assert restarted != pids["victim"]
        # The steady process was never signalled; what the dead one left in its group is gone.
        assert group_running(pids["steady"])
        assert not group_running(pids["victim"])
        assert group_running(restarted)
        assert "steady.1 stopped" not in log
    finally:
        returncode = stop(process)
    assert returncode == 143  # honcho's code for a stop on SIGTERM
    log = log_path.read_text()
    assert "sending SIGTERM to steady.1" in log
    assert "sending SIGTERM to victim.1" in log
    assert log.count("restarting victim.1") == 1


def test_a_process_that_keeps_exiting_at_once_stops_everything_with_its_code(tmp_path):
    process, log_path = start(tmp_path, "steady: exec sleep 600\nbroken: echo cannot start; exit 3\n")
    try:
        returncode = process.wait(timeout=60)
    finally:
        stop(process)
    log = log_path.read_text()
    assert returncode == 3
    assert log.count("broken.1 started") == procs.MAX_QUICK_EXITS
    assert [line.split("restarting it in ")[1].split(" s")[0] for line in log.splitlines()
            if "restarting it in" in line] == ["1", "2", "4"]
    assert f"the {procs.MAX_QUICK_EXITS}th time in a row within 10 s of starting; not restarting it" in log
    assert "sending SIGTERM to steady.1" in log


@pytest.mark.parametrize(("returncode", "description"), [
    pytest.param(-9, "killed by SIGKILL", id="popen-signal"),
    pytest.param(137, "killed by SIGKILL", id="shell-signal"),
    pytest.param(3, "exited with rc=3", id="exit-code"),
    pytest.param(0, "exited with rc=0", id="clean-exit"),
])
def test_exit_description(returncode, description):
    assert procs.exit_description(returncode) == description


def test_backoff_doubles_from_one_second_up_to_its_ceiling():
    assert [procs.backoff_seconds(n) for n in (1, 2, 3, 4, 10)] == [1, 2, 4, 8, procs.MAX_BACKOFF_SECONDS]


class PostgresDoor:
    """A TCP port in front of the machine's PostgreSQL that the test opens and closes: closed,
    a connection is refused as by a stopped server; open, it reaches the real database. (The
    machine's own PostgreSQL is shared, so it is never the one stopped.)"""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._listener: socket.socket | None = None

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None

    def _accept(self, listener: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = listener.accept()
                server = socket.create_connection(self.upstream)
                for source, sink in ((client, server), (server, client)):
                    threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError), source, sink:
            while data := source.recv(65536):
                sink.sendall(data)


@pytest.mark.slow
def test_a_process_whose_database_is_down_waits_for_it_and_comes_back_with_it(tmp_path):
    """The attacker's finding: with PostgreSQL down, a crashed web process failed its start-up
    check four times and the supervisor stopped everything for good."""
    upstream = ("127.0.0.1", 5432)
    try:
        socket.create_connection(upstream, timeout=2).close()
    except OSError:
        service_missing("needs PostgreSQL at 127.0.0.1:5432")
    door = PostgresDoor(upstream)
    data_dir = tmp_path / "data"
    subprocess.run([sys.executable, "-m", "project.data_dir"], cwd=ROOT, check=True, capture_output=True,
                   env={**os.environ, "OCC_DATA_DIR": str(data_dir)})
    process, log_path = start(
        tmp_path, f"steady: exec sleep 600\nweb: {sys.executable} manage.py occ_preflight && exec sleep 600\n",
        OCC_DATA_DIR=str(data_dir), DATABASE_URL=f"postgres://postgres@127.0.0.1:{door.port}/postgres",
        CELERY_BROKER_URL="filesystem://")
    try:
        waiting = "web.1 is waiting for a service it needs"
        # More failed start-up checks than a broken process is allowed, and all still running.
        wait_for(lambda: process.poll() is not None or log_path.read_text().count(waiting) > procs.MAX_QUICK_EXITS,
                 log_path, timeout=90)
        assert process.poll() is None, log_path.read_text()
        log = log_path.read_text()
        assert f"127.0.0.1:{door.port} is not reachable" in log
        assert "not restarting it" not in log
        assert "steady.1 stopped" not in log

        door.open()
        wait_for(lambda: "database and broker reachable" in log_path.read_text(), log_path, timeout=30)
        web_pid = started(log_path)[-1][1]
        time.sleep(1)
        assert group_running(web_pid), log_path.read_text()  # past its check, running its server
        assert process.poll() is None
        log = log_path.read_text()
        assert "trying again in 5 s" in log  # retries stay a few seconds apart however long it lasts
        assert "steady.1 stopped" not in log
    finally:
        door.close()
        stop(process)


def test_ctrl_c_is_a_normal_end_that_says_the_gateways_keep_running(tmp_path):
    """Issue 27 item 11: Ctrl-C ended ``make run`` with make's "Error 130", and nothing said that
    the Agents' gateways (about 1 GB each) outlive it."""
    process, log_path = start(tmp_path, "steady: exec sleep 600\n")
    try:
        wait_for(lambda: len(started(log_path)) == 1, log_path)
        os.kill(process.pid, signal.SIGINT)
        returncode = process.wait(timeout=30)
    finally:
        stop(process)
    assert returncode == 0
    log = log_path.read_text()
    assert "SIGINT received" in log
    assert procs.GATEWAYS_KEEP_RUNNING.strip() in log


def test_the_sign_in_throttle_does_not_announce_itself_in_every_process():
    """``make run`` printed django-axes' start line once per manage.py command and server process."""
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "AXES: BEGIN" not in result.stdout + result.stderr
