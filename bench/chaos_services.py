"""The chaos soak's own PostgreSQL and Redis (bench/chaos.py): started for the run, on free
loopback ports, so the soak may crash and restart them without touching anyone else's.

PostgreSQL is a fresh cluster from Debian's server binaries (``/usr/lib/postgresql/<n>/bin``),
run as the ``postgres`` user when the soak runs as root (the server refuses root). Its "restart"
is a crash: ``pg_ctl stop -m immediate`` (no checkpoint; the next start replays the WAL), then
a start after a pause. ``fsync`` is off: a crash of the server process loses nothing with it
off; only a crash of the machine would.

Redis keeps nothing on disk, so a SIGKILL and a start come back empty, as a Redis without a
volume does after a crash.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

from bench.worker_support import BenchError, ManagedProcess, wait_until
from tests.ports import free_port

COMMAND_TIMEOUT_SECONDS = 120


def postgres_binaries() -> Path:
    """The newest Debian PostgreSQL server's bin folder."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda path: int(path.parent.parent.name))
    if not found:
        raise BenchError("No PostgreSQL server binaries in /usr/lib/postgresql (apt-get install postgresql).")
    return found[-1].parent


class OwnPostgres:
    def __init__(self, folder: Path) -> None:
        self.bin = postgres_binaries()
        self.home = folder / "postgres"
        self.data = self.home / "data"
        self.log = self.home / "server.log"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        result = subprocess.run([*prefix, *argv], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS,
                                check=False, cwd=self.home)
        if check and result.returncode != 0:
            raise BenchError(f"{Path(argv[0]).name} failed ({result.returncode}): {result.stderr.strip()[-800:]}")
        return result

    def init(self) -> None:
        self.home.mkdir(parents=True)
        if self.as_postgres:
            os.chmod(self.home.parent, 0o711)  # the server's user passes through the run's folder
            shutil.chown(self.home, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-sync")

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c full_page_writes=off -c max_connections=200")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", options,
                  "start")

    def crash(self) -> None:
        """Stop at once, as a crash does: no shutdown checkpoint, every connection cut."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop",
                      check=False)


class OwnRedis:
    def __init__(self, folder: Path) -> None:
        self.folder = folder / "redis"
        self.folder.mkdir(parents=True)
        self.port = free_port()
        self.process: ManagedProcess | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise BenchError("redis-server is not installed (apt-get install redis-server).")
        self.starts += 1
        self.process = ManagedProcess(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)],
            env=dict(os.environ), log_path=self.folder / f"redis-{self.starts}.log", name="redis")
        wait_until(self._answers, timeout=20, interval=0.05, what="Redis to answer PING")

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def crash(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None
