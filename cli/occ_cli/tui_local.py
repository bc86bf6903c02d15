"""``occ tui`` on the ``local`` compute driver: ``openclaw tui`` on this machine, against the
Agent's local gateway, with a client state directory of its own.

The gateway listens on loopback with a password only OCC holds. ``manage.py occ_gateway info
--json --show-password`` (the operator's audited read; its output is read through a pipe, never
printed) says where it listens. ``openclaw tui`` then runs with a two-key client config whose
``gateway.auth.password`` is an env SecretRef: the password travels in the child's environment,
never in an argv or a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from occ_cli.client import CliError, Exit
from occ_cli.tui import Target, TuiOptions, Where

CHECKOUT = Path(__file__).resolve().parents[2]
PASSWORD_ENV = "OPENCLAW_GATEWAY_PASSWORD"
GATEWAY_INFO_TIMEOUT_SECONDS = 120
# What the TUI child inherits from this shell (a terminal needs these); nothing else of ours.
PASSED_THROUGH_ENV = ("TERM", "COLORTERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "COLUMNS", "LINES",
                      "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR")


def gateway_info(manage: Path, agent_id: str) -> dict[str, Any]:
    """``occ_gateway info --json --show-password``: read through a pipe, never echoed."""
    if not manage.is_file():
        raise CliError(f"{manage} does not exist: pass --manage with OCC's manage.py (the local driver's gateway "
                       "password is read there, with the installation's OCC_DATA_DIR).", Exit.USAGE,
                       code="NO_MANAGE_PY")
    # The installation's own Python (its checkout's .venv), else the one running this CLI.
    venv_python = manage.parent / ".venv" / "bin" / "python"
    python = str(venv_python) if venv_python.is_file() else sys.executable
    argv = [python, str(manage), "occ_gateway", "info", agent_id, "--json", "--show-password"]
    try:
        result = subprocess.run(argv, cwd=manage.parent, capture_output=True, text=True,  # noqa: S603 - our manage.py
                                timeout=GATEWAY_INFO_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise CliError("manage.py occ_gateway did not answer in time.", Exit.UNAVAILABLE, code="TIMEOUT") from None
    if result.returncode != 0:
        # Its stderr is CommandError's message (no secret: the password goes to stdout only).
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise CliError(f"manage.py occ_gateway info failed: {last}", Exit.API_ERROR, code="GATEWAY_INFO_FAILED")
    try:
        info = json.loads(result.stdout)
    except ValueError:
        raise CliError("manage.py occ_gateway info did not print JSON.", Exit.API_ERROR,
                       code="GATEWAY_INFO_FAILED") from None
    return info


def runtime_paths(runtime_dir: Path) -> tuple[Path, Path]:
    """Node and ``openclaw.mjs`` of a runtime installed by ``make runtime``."""
    nodes = sorted((runtime_dir / "node" / "node_modules").glob("node-*/bin/node"))
    entry = runtime_dir / "openclaw" / "node_modules" / "openclaw" / "openclaw.mjs"
    if not nodes or not entry.is_file():
        raise CliError(f"No OpenClaw runtime in {runtime_dir}: run `make runtime`, or set OCC_RUNTIME_DIR.",
                       Exit.UNAVAILABLE, code="RUNTIME_NOT_INSTALLED")
    return nodes[0], entry


def client_state_dir(agent_id: str) -> Path:
    """The TUI client's own OPENCLAW_STATE_DIR: never the gateway's."""
    base = os.environ.get("OCC_TUI_STATE_DIR") or os.environ.get("XDG_STATE_HOME") or "~/.local/state"
    root = Path(base).expanduser() / ("" if os.environ.get("OCC_TUI_STATE_DIR") else "occ/tui") / agent_id
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    root.chmod(0o700)
    return root


def local_client_config(port: int) -> dict[str, Any]:
    return {"gateway": {"mode": "local", "port": port, "bind": "loopback",
                        "auth": {"mode": "password",
                                 "password": {"source": "env", "provider": "default", "id": PASSWORD_ENV}}}}


def local_tui_command(target: Target, options: TuiOptions, info: dict[str, Any], *, runtime_dir: Path,
                      state_dir: Path) -> tuple[list[str], dict[str, str]]:
    """The TUI's argv (no secret in it) and environment (the password only there)."""
    if info.get("revisionId") != target.revision_id or not info.get("gateway"):
        raise CliError(f"The local gateway of {target.agent_id} does not serve revision {target.revision_id} "
                       f"(it serves {info.get('revisionId') or 'nothing'}).", Exit.UNAVAILABLE,
                       code="GATEWAY_NOT_SERVING")
    password = info.get("password")
    if not isinstance(password, str) or not password:
        raise CliError("manage.py occ_gateway info returned no gateway password.", Exit.API_ERROR,
                       code="GATEWAY_INFO_FAILED")
    port = urlsplit(info["gateway"]["websocketUrl"]).port
    if port is None:
        raise CliError("The gateway's address has no port.", Exit.API_ERROR, code="GATEWAY_INFO_FAILED")
    node, entry = runtime_paths(runtime_dir)
    config = state_dir / "openclaw.json"
    config.write_text(json.dumps(local_client_config(port), indent=2) + "\n")
    config.chmod(0o600)
    home = state_dir / "home"
    home.mkdir(exist_ok=True, mode=0o700)
    env = {name: os.environ[name] for name in PASSED_THROUGH_ENV if name in os.environ}
    env.update(PATH=os.pathsep.join([str(node.parent), "/usr/local/bin", "/usr/bin", "/bin"]), HOME=str(home),
               OPENCLAW_STATE_DIR=str(state_dir / "state"), OPENCLAW_CONFIG_PATH=str(config),
               OPENCLAW_GATEWAY_PORT=str(port), **{PASSWORD_ENV: password})
    return [str(node), str(entry), *options.argv()], env


def attach(target: Target, options: TuiOptions, where: Where) -> int:
    info = gateway_info(where.manage or CHECKOUT / "manage.py", target.agent_id)
    runtime_dir = Path(os.environ.get("OCC_RUNTIME_DIR") or CHECKOUT / "runtime")
    argv, env = local_tui_command(target, options, info, runtime_dir=runtime_dir,
                                  state_dir=client_state_dir(target.agent_id))
    # The terminal is the TUI's until it exits (Ctrl+D); this process only waits for it.
    return subprocess.call(argv, env=env)  # noqa: S603 - the runtime's node and openclaw.mjs
