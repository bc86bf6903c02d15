"""Local process supervision for the ``local`` ComputeDriver.

A gateway runs in its own session and process group, outlives the worker that started it and
is found again from the driver's files. A recorded PID is signalled only after checking it is
still that process: same start time (``/proc/<pid>/stat`` field 22, clock ticks since boot)
and the same command line (or the process title the runtime gives itself), so a PID the
kernel has since handed to another program is never signalled.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

POLL_SECONDS = 0.2
EMPTY_CMDLINE_RETRIES = 20
# Popen objects of the gateways this process spawned: kept so they are reaped (no zombies,
# no ResourceWarning) while we live; after we exit, init adopts and reaps them.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
# Children whose exit status a thread of ours is still waiting to write (``spawn``'s exit_path).
_WATCHED: set[int] = set()


@dataclass(frozen=True)
class ProcessIdentity:
    """What makes a PID "that process": the PID, its start time and its command line."""

    pid: int
    started: str
    argv: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "started": self.started, "argv": list(self.argv)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessIdentity:
        return cls(pid=int(data["pid"]), started=str(data["started"]), argv=tuple(str(a) for a in data["argv"]))


# --- reading /proc ------------------------------------------------------------------------------


def _reap(pid: int) -> None:
    child = _CHILDREN.get(pid)
    if child is not None and child.poll() is not None:
        del _CHILDREN[pid]


def reap_children() -> None:
    """Collect every gateway this process spawned that has exited, whoever stopped it.

    A gateway started by one worker process may be stopped by another; until its parent
    waits for it, it stays a zombie. Called at every spawn and stop, and by maintenance.
    """
    for pid in list(_CHILDREN):
        _reap(pid)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    # The command name sits in parentheses and may hold spaces or parentheses itself.
    return raw[raw.rfind(")") + 2:].split()


def process_started(pid: int) -> str | None:
    """The process's start time as an opaque token, or None if it is gone (or a zombie)."""
    _reap(pid)
    fields = _stat_fields(pid)
    if fields is not None:
        if fields[0] in {"Z", "X", "x"}:
            return None
        return f"ticks:{fields[19]}"
    if Path("/proc/self/stat").exists():
        return None
    return _ps_field(pid, "lstart")  # no /proc (macOS): ps gives a start timestamp


def process_argv(pid: int) -> tuple[str, ...] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        if Path("/proc/self/stat").exists():
            return None
        command = _ps_field(pid, "command")
        return tuple(command.split()) if command else None
    return tuple(part.decode(errors="replace") for part in raw.rstrip(b"\0").split(b"\0")) if raw else ()


def _ps_field(pid: int, field: str) -> str | None:
    try:
        result = subprocess.run(["ps", "-o", f"{field}=", "-p", str(pid)],  # noqa: S603,S607 - fixed arguments
                                capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = result.stdout.strip()
    return f"{field}:{value}" if field == "lstart" and value else value or None


def parent_pid(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def is_same_process(identity: ProcessIdentity, *, titles: tuple[str, ...] = ()) -> bool:
    """Whether ``identity.pid`` is still the process we recorded (alive, not a zombie).

    ``titles`` are process titles the program sets for itself (Node rewrites its argv, e.g.
    to ``openclaw-gateway``), accepted in place of the recorded command line.
    """
    started = process_started(identity.pid)
    if started is None or started != identity.started:
        return False
    argv = process_argv(identity.pid)
    for _ in range(EMPTY_CMDLINE_RETRIES):
        # Just after exec the kernel may show an empty command line for a moment.
        if argv != ():
            break
        time.sleep(0.05)
        argv = process_argv(identity.pid)
    if argv is None:
        return False
    if argv == ():
        return True  # still unreadable: the start time (same PID, same clock tick) decides
    return argv == identity.argv or argv[0] in titles


def descendants(pid: int) -> list[ProcessIdentity]:
    """Every live descendant of ``pid`` (some leave its process group, e.g. a spawn broker)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if entry.isdigit():
            ppid = parent_pid(int(entry))
            if ppid is not None:
                children.setdefault(ppid, []).append(int(entry))
    found: list[ProcessIdentity] = []
    queue = list(children.get(pid, []))
    while queue and len(found) < 1000:
        child = queue.pop()
        started, argv = process_started(child), process_argv(child)
        if started is not None and argv is not None:
            found.append(ProcessIdentity(child, started, argv))
        queue.extend(children.get(child, []))
    return found


def usage(identity: ProcessIdentity, *, titles: tuple[str, ...] = (), sample: float = 0.25
          ) -> tuple[int | None, float | None]:
    """(resident bytes, CPU percent of one core over ``sample`` seconds) of the process and all
    its descendants, read with psutil; (None, None) when it is no longer that process."""
    if not is_same_process(identity, titles=titles):
        return None, None
    try:
        root = psutil.Process(identity.pid)
        family = [root, *root.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None, None
    alive = []
    for member in family:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            member.cpu_percent(None)  # starts the member's sample
            alive.append(member)
    time.sleep(sample)
    memory, cpu, measured = 0, 0.0, False
    for member in alive:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            cpu += member.cpu_percent(None)
            memory += member.memory_info().rss
            measured = True
    return (memory, round(cpu, 1)) if measured else (None, None)


# --- starting and stopping ------------------------------------------------------------------------


def spawn(argv: list[str], *, env: Mapping[str, str], cwd: Path, log_path: Path,
          exit_path: Path | None = None) -> ProcessIdentity:
    """Start ``argv`` in a new session (its own process group), output appended to ``log_path``.

    ``env`` is the child's whole environment: nothing of ours is inherited. ``exit_path``: a
    thread of ours waits for the child and writes ``{"pid", "status"}`` there when it exits
    (``read_exit``): only the parent can know a child's exit status, and the parent may be
    a worker process other than the one that finds the gateway dead. A gateway that outlives
    us has no status written (``read_exit`` answers ``None``).
    """
    reap_children()
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        child = subprocess.Popen(  # noqa: S603 - argv is built by the driver, never from input
            argv, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True,
        )
    finally:
        os.close(log_fd)
    _CHILDREN[child.pid] = child
    started = process_started(child.pid) or "exited"
    if exit_path is not None:
        _WATCHED.add(child.pid)
        threading.Thread(target=_record_exit, args=(child, exit_path), daemon=True,
                         name=f"gateway-exit-{child.pid}").start()
    return ProcessIdentity(child.pid, started, tuple(argv))


def _record_exit(child: subprocess.Popen[bytes], exit_path: Path) -> None:
    try:
        status = child.wait()
        with contextlib.suppress(OSError):
            temporary = exit_path.with_name(exit_path.name + ".tmp")
            temporary.write_text(json.dumps({"pid": child.pid, "status": status}))
            temporary.replace(exit_path)
    finally:
        _WATCHED.discard(child.pid)


def await_exit(exit_path: Path, pid: int, *, timeout: float = 1.0) -> int | None:
    """``read_exit``, waiting up to ``timeout`` for the status of a child of ours that has just
    exited (the thread writes it a moment after the process is gone)."""
    deadline = time.monotonic() + timeout
    while True:
        status = read_exit(exit_path, pid)
        if status is not None or pid not in _WATCHED or time.monotonic() >= deadline:
            return status
        time.sleep(0.05)


def read_exit(exit_path: Path, pid: int) -> int | None:
    """The exit status ``spawn`` recorded for ``pid`` (negative: killed by that signal), or None."""
    try:
        data = json.loads(exit_path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("pid") != pid or not isinstance(data.get("status"), int):
        return None
    return int(data["status"])


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _wait_gone(identities: list[ProcessIdentity], timeout: float, titles: tuple[str, ...]) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if not any(is_same_process(i, titles=titles) for i in identities):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)


def stop(identity: ProcessIdentity, *, grace: float, titles: tuple[str, ...] = ()) -> bool:
    """SIGTERM the process group, SIGKILL whatever is left after ``grace`` seconds.

    Returns False, signalling nothing, when ``identity`` is no longer that process.
    """
    reap_children()
    if not is_same_process(identity, titles=titles):
        return False
    family = descendants(identity.pid)
    # start_new_session made the gateway its group's leader, so its PID is the group id.
    _signal_group(identity.pid, signal.SIGTERM)
    if _wait_gone([identity, *family], grace, titles):
        return True
    _signal_group(identity.pid, signal.SIGKILL)
    for member in family:  # those that left the group, checked again before the signal
        if is_same_process(member):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member.pid, signal.SIGKILL)
    _wait_gone([identity, *family], 10.0, titles)
    return True


# --- ports, readiness, locks --------------------------------------------------------------------


def port_is_free(port: int) -> bool:
    """Nothing listens on 127.0.0.1:``port``. SO_REUSEADDR as servers set it: connections
    of a stopped gateway lingering in TIME_WAIT do not make the port busy."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def port_is_open(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def readyz(port: int, timeout: float = 2.0) -> bool:
    """``GET /readyz`` on loopback answers 200 (no auth needed there)."""
    try:
        response = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=timeout)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


@contextlib.contextmanager
def file_lock(path: Path, *, timeout: float, create: bool = True) -> Iterator[bool]:
    """An exclusive ``flock`` on ``path``; yields whether it was taken within ``timeout``
    (``timeout=0``: try once). Released on exit, and by the kernel if we die.

    ``create=False`` never creates the file or its folder: a missing file is a lock not
    taken, and so is one removed while we waited for it (its holder deleted the folder it
    guards), so a late caller cannot bring a deleted folder back."""
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o600)
    except FileNotFoundError:
        if create:
            raise
        yield False
        return
    taken = False
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                taken = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(POLL_SECONDS)
        yield taken and (create or os.fstat(fd).st_nlink > 0)
    finally:
        if taken:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
