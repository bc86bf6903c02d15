"""``make run``'s process manager: honcho, restarting a process that dies and stopping each
process the way it expects.

**Restarts.** honcho stops everything as soon as one process exits, so a SIGKILLed worker
took web and beat down with it and nothing came back. Here a process that exits while no
stop was asked for is started again, alone, after a backoff (1 s, doubling per quick exit, at
most ``MAX_BACKOFF_SECONDS``), and the others keep running; the log says which process
exited, how, and when it comes back. A process that has stayed up ``STARTED_SECONDS`` counts
as started, and its next exit is restarted after 1 s again. One that exits
``MAX_QUICK_EXITS`` times in a row within ``STARTED_SECONDS`` of starting is broken rather
than crashed (a bad setting, a port taken): everything stops, as honcho did, with its exit
code. A process that exits with ``EX_TEMPFAIL`` (75, as ``occ_preflight`` does when
PostgreSQL or Redis is unreachable) is neither: a service it needs is down. It is started
again every few seconds (at most ``DEPENDENCY_RETRY_SECONDS`` apart) for as long as that
lasts, the log says it waits for a dependency, and those exits never count toward stopping
everything (under an outage a crashed web process used to fail its start-up check four times
and take worker and beat down for good, though the database came back seconds later).

When a process exits, whatever it left of its process group (a Celery pool child, a
gunicorn worker) is killed: such leftovers would keep its output open, and honcho only sees
a process end when its output does, so a killed worker went unnoticed while its pool lived.

No well-kept library does this for a Procfile: honcho and foreman never restart;
supervisord and circus restart but need their own configuration and daemon in place of the
Procfile ``make run`` and production share. So this extends honcho's ``Manager`` loop.

**Stopping.** honcho stops its processes by sending SIGTERM to each one's whole process
group, then SIGKILL to the group five seconds later. Both hurt Celery's worker. The SIGTERM
reached its pool children directly, so they died mid-task ("exited with signal 15") instead
of being stopped by their parent. Its warm shutdown on the filesystem broker takes 5-7 s (the
consumer drains for up to two seconds, then the pool stops), so the SIGKILL came before it
finished. Nothing was lost, since work is durable and leases recover, but every stop looked
like a crash. Here SIGTERM goes to each Procfile process alone (each ``exec``s its server,
which stops its own children), and whatever is still running ``STOP_WAIT_SECONDS`` later is
SIGKILLed, group and all, as before.

Run as ``python -m devtools.procs start -f Procfile`` (honcho's own arguments).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import subprocess
import threading
import time
from typing import Any

from honcho import command, compat, manager, process

STOP_WAIT_SECONDS = 20
STARTED_SECONDS = 10.0
MAX_QUICK_EXITS = 4
MAX_BACKOFF_SECONDS = 30.0
DEPENDENCY_RETRY_SECONDS = 5.0
DEPENDENCY_UNAVAILABLE = os.EX_TEMPFAIL  # "try again later": a service the process needs is down


def _terminate_process(_manager: compat.ProcessManager, pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.kill(pid, signal.SIGTERM)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # nothing left
        os.killpg(pgid, signal.SIGKILL)


def _popen_reaping_its_group(cmd: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    """honcho's Popen (a shell in a new session), and a thread that, once that shell or what it
    ``exec``ed exits, kills whatever is left of its process group."""
    child = process.Popen(cmd, **kwargs)

    def reap() -> None:
        child.wait()
        _kill_group(child.pid)

    threading.Thread(target=reap, name=f"reap-{child.pid}", daemon=True).start()
    return child


def exit_description(returncode: int) -> str:
    """How a Procfile process ended (its shell reports a signal as 128 + n, Popen as -n)."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    with contextlib.suppress(ValueError):
        if number:
            return f"killed by {signal.Signals(number).name}"
    return f"exited with rc={returncode}"


def backoff_seconds(quick_exits: int) -> float:
    """The wait before a restart: 1 s, then doubling with each exit that came too soon."""
    return min(MAX_BACKOFF_SECONDS, 2.0 ** max(0, quick_exits - 1))


# Said when a person stops ``make run``: the local driver's gateways are processes of their own.
GATEWAYS_KEEP_RUNNING = (
    "OCC stopped. Agent gateways it started keep running (about 1 GB of memory each): stop them with "
    "Stop on each Agent's page or `occ agents stop`, before you stop OCC.\n")


class Supervisor(manager.Manager):
    """honcho's ``Manager`` whose processes are restarted when they exit on their own."""

    def add_process(self, *args: Any, **kwargs: Any) -> process.Process:
        proc = super().add_process(*args, **kwargs)
        proc._child_ctor = _popen_reaping_its_group
        return proc

    def loop(self) -> None:
        def _terminate(signum: int, _frame: Any) -> None:
            self._system_print(f"{manager.SIGNALS[signum]['name']} received\n")
            # Ctrl-C is how a person stops ``make run``: a normal end (0), not make's "Error 130".
            self.returncode = 0 if signum == signal.SIGINT else manager.SIGNALS[signum]["rc"]
            self.stop_asked = True
            self.terminate()

        self.stop_asked = False
        signal.signal(signal.SIGTERM, _terminate)
        signal.signal(signal.SIGINT, _terminate)
        for state in self._processes.values():
            state.update(quick_exits=0, dependency_waits=0, restart_at=None)
        self._start()
        stop_started: float | None = None
        while True:
            with contextlib.suppress(queue.Empty):
                self._handle(self.events.get(timeout=0.1))
            if self._terminating:
                stop_started = stop_started or time.monotonic()
                if self._all_stopped() and self.events.empty():
                    break
                if time.monotonic() - stop_started > manager.KILL_WAIT:
                    self.kill()
            else:
                self._restart_due()
        if self.stop_asked:
            self._system_print(GATEWAYS_KEEP_RUNNING)

    def _handle(self, msg: Any) -> None:
        state = self._processes.get(msg.name)
        if msg.type == "line":
            self._printer.write(msg)
        elif msg.type == "start" and state is not None:
            state.update(pid=msg.data["pid"], started_at=time.monotonic())
            self._system_print(f"{msg.name} started (pid={msg.data['pid']})\n")
            if self._terminating:  # started while a stop was under way: it stops too
                self._procmgr.terminate(state["pid"])
        elif msg.type == "stop" and state is not None:
            returncode = msg.data["returncode"]
            state["returncode"] = returncode
            self._system_print(f"{msg.name} stopped (rc={returncode})\n")
            if not self._terminating:
                self._crashed(msg.name, state, returncode)

    def _crashed(self, name: str, state: dict[str, Any], returncode: int) -> None:
        """Plan the restart of a process that exited while no stop was asked for."""
        ran = time.monotonic() - state["started_at"]
        if returncode == DEPENDENCY_UNAVAILABLE:
            self._wait_for_dependency(name, state)
            return
        state["dependency_waits"] = 0
        state["quick_exits"] = state["quick_exits"] + 1 if ran < STARTED_SECONDS else 1
        if state["quick_exits"] >= MAX_QUICK_EXITS:
            self._system_print(
                f"{name} {exit_description(returncode)}, the {MAX_QUICK_EXITS}th time in a row within "
                f"{STARTED_SECONDS:.0f} s of starting; not restarting it, stopping everything\n")
            self.returncode = returncode
            self.terminate()
            return
        delay = backoff_seconds(state["quick_exits"])
        state["restart_at"] = time.monotonic() + delay
        self._system_print(
            f"{name} {exit_description(returncode)} after {ran:.0f} s; restarting it in {delay:.0f} s "
            f"(the other processes keep running)\n")

    def _wait_for_dependency(self, name: str, state: dict[str, Any]) -> None:
        """Retry a process whose dependency is down, without counting it as broken."""
        state["quick_exits"] = 0
        state["dependency_waits"] += 1
        delay = min(DEPENDENCY_RETRY_SECONDS, backoff_seconds(state["dependency_waits"]))
        state["restart_at"] = time.monotonic() + delay
        self._system_print(
            f"{name} is waiting for a service it needs (exited with rc={DEPENDENCY_UNAVAILABLE}: a "
            f"dependency is unreachable, see its output above); trying again in {delay:.0f} s, for as "
            "long as it takes (the other processes keep running)\n")

    def _restart_due(self) -> None:
        now = time.monotonic()
        for name, state in self._processes.items():
            if state["restart_at"] is not None and now >= state["restart_at"]:
                state["restart_at"] = None
                state["process"].join(timeout=1)  # honcho's relay for the dead run has ended
                del state["returncode"]
                state["pid"] = None
                self._system_print(f"restarting {name}\n")
                state["process"] = multiprocessing.Process(name=name, target=state["obj"].run,
                                                           args=(self.events, True))
                state["process"].start()

    def _all_stopped(self) -> bool:
        # A process waiting for its restart has stopped; one being started has not.
        return all(state.get("returncode") is not None for state in self._processes.values())

    def _killall(self, force: bool = False) -> None:
        for name, state in self._processes.items():
            if "returncode" in state:
                continue
            if state.get("pid") is None:  # its start message is on the way; _handle stops it
                continue
            signame = "SIGKILL" if force else "SIGTERM"
            self._system_print(f"sending {signame} to {name} (pid {state['pid']})\n")
            if force:
                self._procmgr.kill(state["pid"])
            else:
                self._procmgr.terminate(state["pid"])


def main() -> None:
    manager.KILL_WAIT = STOP_WAIT_SECONDS
    compat.ProcessManager.terminate = _terminate_process  # type: ignore[method-assign]
    command.Manager = Supervisor  # type: ignore[misc]  # what `honcho start` builds
    command.main()


if __name__ == "__main__":
    main()
