"""The supervisor of ``make run`` (devtools.procs) on a Procfile of plain shell processes:
a killed process comes back alone, a broken one stops everything, a stop is a stop."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtools import procs
from tests.processes import group_running

ROOT = Path(__file__).resolve().parents[2]
STARTED = re.compile(r"(\w+)\.1 started \(pid=(\d+)\)")


def start(tmp_path: Path, procfile: str) -> tuple[subprocess.Popen[bytes], Path]:
    (tmp_path / "Procfile").write_text(procfile)
    log_path = tmp_path / "procs.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "devtools.procs", "start", "-f", str(tmp_path / "Procfile"), "--no-colour"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
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
