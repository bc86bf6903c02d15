"""``make run``'s process manager: honcho, stopping each process the way it expects.

honcho stops its processes by sending SIGTERM to each one's whole process group, then
SIGKILL to the group five seconds later. Both hurt Celery's worker. The SIGTERM reached its
pool children directly, so they died mid-task ("exited with signal 15") instead of being
stopped by their parent. Its warm shutdown on the filesystem broker takes 5-7 s (the consumer
drains for up to two seconds, then the pool stops), so the SIGKILL came before it finished.
Nothing was lost, since work is durable and leases recover, but every stop looked like a crash.

Here SIGTERM goes to each Procfile process alone (each ``exec``s its server, which stops its
own children), and whatever is still running ``STOP_WAIT_SECONDS`` later is SIGKILLed, group
and all, as before.

Run as ``python -m occ.devtools.procs start -f Procfile`` (honcho's own arguments).
"""

from __future__ import annotations

import contextlib
import os
import signal

from honcho import command, compat, manager

STOP_WAIT_SECONDS = 20


def _terminate_process(_manager: compat.ProcessManager, pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.kill(pid, signal.SIGTERM)


def main() -> None:
    manager.KILL_WAIT = STOP_WAIT_SECONDS  # read on every pass of honcho's loop
    compat.ProcessManager.terminate = _terminate_process  # type: ignore[method-assign]
    command.main()


if __name__ == "__main__":
    main()
