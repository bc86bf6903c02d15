"""``occ tui``: the native OpenClaw TUI of an Agent, once the intended revision is active.

Both paths wait first: the Agent's ``activeRevisionId`` must be the intended revision (the
one named, else the Agent's newest) and its runtime ``running``; a deployment request alone
does not prove the gateway serves it (seed 002).

- ``local`` compute: the gateway is a process on this machine, listening on loopback with a
  password only OCC holds. ``manage.py occ_gateway info --json --show-password`` (the
  operator's audited read; its output is read through a pipe, never printed) says where it
  listens. ``openclaw tui`` then runs with a state directory of its own and a two-key client
  config whose ``gateway.auth.password`` is an env SecretRef: the password travels in the
  child's environment, never in an argv or a file.
- ``kubernetes`` compute: see :mod:`occ_cli.kube`: the Ready gateway Pod whose mounted
  ConfigMap is that revision's, and ``node /app/openclaw.mjs tui`` through the exec API.

Leaving the TUI (Ctrl+D) ends only the client; the gateway keeps serving.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from occ_cli import kube
from occ_cli.client import CliError, Exit, OccClient
from occ_cli.waiting import wait_for

CHECKOUT = Path(__file__).resolve().parents[2]
PASSWORD_ENV = "OPENCLAW_GATEWAY_PASSWORD"
GATEWAY_INFO_TIMEOUT_SECONDS = 120
# What the TUI child inherits from this shell (a terminal needs these); nothing else of ours.
PASSED_THROUGH_ENV = ("TERM", "COLORTERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "COLUMNS", "LINES",
                      "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR")


@dataclass(frozen=True)
class TuiOptions:
    session: str = "main"
    message: str | None = None

    def argv(self) -> list[str]:
        return ["tui", "--session", self.session, *(["--message", self.message] if self.message else [])]


@dataclass(frozen=True)
class Target:
    """The Agent and the revision it serves, as OCC answered them."""

    namespace_id: str
    agent: dict[str, Any]
    revision: dict[str, Any]

    @property
    def agent_id(self) -> str:
        return str(self.agent["id"])

    @property
    def revision_id(self) -> str:
        return str(self.revision["id"])


def intended_revision(client: OccClient, namespace_id: str, agent_id: str, revision: str | None) -> str:
    if revision:
        return revision
    revisions = client.get(f"/namespaces/{namespace_id}/agents/{agent_id}/revisions")
    if not revisions:
        raise CliError(f"Agent {agent_id} was never deployed; run `occ agents deploy` first.", Exit.NOT_FOUND,
                       code="NO_REVISION")
    return str(max(revisions, key=lambda r: r["revision"])["id"])


def await_active(client: OccClient, namespace_id: str, agent_id: str, *, revision: str | None,
                 timeout: float) -> Target:
    """Wait until the Agent's active revision is the intended one and its runtime runs."""
    intended = intended_revision(client, namespace_id, agent_id, revision)
    agent_path = f"/namespaces/{namespace_id}/agents/{agent_id}"

    def poll() -> tuple[dict[str, Any], dict[str, Any]]:
        return client.get(agent_path), client.get(f"{agent_path}/deployments/{intended}")

    def done(answer: tuple[dict[str, Any], dict[str, Any]]) -> bool:
        agent, deployment = answer
        if deployment["status"] == "failed":
            error = deployment.get("error") or {}
            raise CliError(f"Deployment {intended} failed: {error.get('message') or 'no reason given'}", Exit.FAILED,
                           code=error.get("code") or "DEPLOYMENT_FAILED")
        runtime = agent.get("runtime") or {}
        return agent.get("activeRevisionId") == intended and runtime.get("state") == "running" \
            and runtime.get("revisionId") == intended

    def describe(answer: tuple[dict[str, Any], dict[str, Any]]) -> str:
        agent, deployment = answer
        return (f"deployment {deployment['status']}, active revision {agent.get('activeRevisionId') or '-'}, "
                f"runtime {(agent.get('runtime') or {}).get('state')}")

    agent, _deployment = wait_for(poll, done=done, describe=describe, what=f"revision {intended} to serve",
                                  timeout=timeout)
    return Target(namespace_id=namespace_id, agent=agent, revision=client.get(f"{agent_path}/revisions/{intended}"))


# --- local ---------------------------------------------------------------------------------------


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


def attach_local(target: Target, options: TuiOptions, *, manage: Path | None) -> int:
    info = gateway_info(manage or CHECKOUT / "manage.py", target.agent_id)
    runtime_dir = Path(os.environ.get("OCC_RUNTIME_DIR") or CHECKOUT / "runtime")
    argv, env = local_tui_command(target, options, info, runtime_dir=runtime_dir,
                                  state_dir=client_state_dir(target.agent_id))
    # The terminal is the TUI's until it exits (Ctrl+D); this process only waits for it.
    return subprocess.call(argv, env=env)  # noqa: S603 - the runtime's node and openclaw.mjs


def attach_kubernetes(target: Target, options: TuiOptions, *, namespace: dict[str, Any], kubeconfig: str | None,
                      context: str | None, kube_namespace: str | None) -> int:
    api = kube.core_api(kubeconfig=kubeconfig, context=context)
    tenant = kube_namespace or namespace.get("existingNamespace") or kube.tenant_namespace(namespace["id"])
    pod = kube.await_gateway_pod(api, tenant, namespace_id=namespace["id"], agent_id=target.agent_id,
                                 revision_id=target.revision_id)
    return kube.exec_tui(api, tenant, pod, options.argv())
