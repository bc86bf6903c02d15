"""Files the local compute driver keeps for its gateways and their plugins: each Agent's folder
(``AgentPaths``, laid out in ``local``'s docstring), the supervisor's record of the process that
serves it (``GatewayRecord``, ``gateway.json``), and private writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.base import ComputeError
from occ.ids import IdPrefix, is_valid_id

logger = logging.getLogger(__name__)

# The runtime rewrites its argv (process.title): "openclaw" while loading, then "openclaw-gateway".
GATEWAY_TITLES = ("openclaw", "openclaw-gateway")
RUNNING, STOPPED, FAILED = "running", "stopped", "failed"
# A revision's gateway that exited this many times without becoming ready in between is in a
# crash loop: the first start and one restart (issue 28: reported within two restarts).
CRASH_LOOP_EXITS = 2


def remove_folder(path: Path) -> None:
    """Remove the folder ``path`` whole, even while a late writer adds a file to it by name (the
    thread that records a stopped gateway's exit status, in this or another worker process).
    ``rmtree`` alone can lose that race: the file appears after the listing, the last
    ``rmdir`` fails and the folder stays. Renamed aside first, in one step, the folder has no
    name such a writer can reach; what is left of it is removed after."""
    aside = path.with_name(f".removed-{path.name}-{secrets.token_hex(4)}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, mode 0600 from the first byte (its folder 0700)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@dataclass(frozen=True)
class AgentPaths:
    root: Path

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def gateway_log(self) -> Path:
        return self.logs / "gateway.log"

    @property
    def runtime_log(self) -> Path:
        return self.logs / "openclaw.log"

    @property
    def redaction_key(self) -> Path:
        return self.logs / ".redaction-key"

    @property
    def record(self) -> Path:
        return self.root / "gateway.json"

    @property
    def exit_record(self) -> Path:
        """Where the spawning worker writes the gateway's exit status (``supervisor.spawn``)."""
        return self.root / "gateway-exit.json"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def workspace_marker(self) -> Path:
        return self.root / ".workspace-initialized"

    def revision_dir(self, revision_id: str) -> Path:
        if not is_valid_id(revision_id, IdPrefix.REVISION):
            raise ComputeError("INVALID_REVISION_ID", retryable=False)
        return self.root / "revisions" / revision_id

    def config(self, revision_id: str) -> Path:
        return self.revision_dir(revision_id) / "openclaw.json"

    def ensure(self) -> None:
        for folder in (self.root, self.state, self.workspace, self.home, self.logs, self.root / "revisions"):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)


@dataclass(frozen=True)
class LogEpoch:
    offset: int
    fingerprints: frozenset[str]


@dataclass(frozen=True)
class GatewayRecord:
    """``gateway.json``: which process serves the Agent, on which port, from which revision."""

    agent_id: str
    revision_id: str
    port: int
    state: str  # running | stopped | failed
    process: supervisor.ProcessIdentity | None
    started_at: float  # wall clock seconds of the spawn
    ready_seen: bool = False
    restarts: int = 0  # consecutive restarts: the backoff's exponent, reset once ready again
    last_restart_at: float = 0.0
    # For observation (``observe_runtime``): when it became ready, stopped, or was found dead, and
    # every automatic restart since the last start by a deploy or a start (never reset by readiness).
    ready_at: float = 0.0
    stopped_at: float = 0.0
    exited_at: float = 0.0
    restart_count: int = 0
    # Exits of this revision's gateway without it becoming ready again in between (a deploy of
    # another revision starts over at 0), and the last one's status when known (negative: the
    # signal that killed it): ``exits >= CRASH_LOOP_EXITS`` is a crash loop.
    exits: int = 0
    exit_status: int | None = None
    # Where each spawn's output begins in gateway.log, with keyed fingerprints of the secret
    # values that spawn was given (``read_logs`` returns a stretch only if it can redact them all).
    log_epochs: tuple[LogEpoch, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "agentId": self.agent_id, "revisionId": self.revision_id, "port": self.port, "state": self.state,
            "process": self.process.as_json() if self.process else None, "startedAt": self.started_at,
            "readySeen": self.ready_seen, "restarts": self.restarts, "lastRestartAt": self.last_restart_at,
            "readyAt": self.ready_at, "stoppedAt": self.stopped_at, "exitedAt": self.exited_at,
            "restartCount": self.restart_count, "exits": self.exits, "exitStatus": self.exit_status,
            "logEpochs": [{"offset": e.offset, "fingerprints": sorted(e.fingerprints)} for e in self.log_epochs],
        }

    @classmethod
    def read(cls, path: Path) -> GatewayRecord | None:
        try:
            data = json.loads(path.read_text())
            return cls(
                agent_id=str(data["agentId"]), revision_id=str(data["revisionId"]), port=int(data["port"]),
                state=str(data["state"]),
                process=supervisor.ProcessIdentity.from_json(data["process"]) if data.get("process") else None,
                started_at=float(data.get("startedAt") or 0.0), ready_seen=bool(data.get("readySeen")),
                restarts=int(data.get("restarts") or 0), last_restart_at=float(data.get("lastRestartAt") or 0.0),
                ready_at=float(data.get("readyAt") or 0.0), stopped_at=float(data.get("stoppedAt") or 0.0),
                exited_at=float(data.get("exitedAt") or 0.0), restart_count=int(data.get("restartCount") or 0),
                exits=int(data.get("exits") or 0),
                exit_status=None if data.get("exitStatus") is None else int(data["exitStatus"]),
                log_epochs=tuple(LogEpoch(offset=int(e["offset"]), fingerprints=frozenset(map(str, e["fingerprints"])))
                                 for e in data.get("logEpochs") or ()),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            logger.warning("unreadable gateway record %s: treated as absent", path)
            return None

    def write(self, path: Path) -> None:
        write_private(path, json.dumps(self.as_json(), indent=2) + "\n")

    def alive(self) -> bool:
        return self.process is not None and supervisor.is_same_process(self.process, titles=GATEWAY_TITLES)
