"""``occ tui``: the native OpenClaw TUI of an Agent, once the intended revision is active.

Both paths wait first: the Agent's ``activeRevisionId`` must be the intended revision (the
one named, else the Agent's newest) and its runtime ``running``; a deployment request alone
does not prove the gateway serves it (seed 002).

- ``local`` compute (:mod:`occ_cli.tui_local`): ``openclaw tui`` on this machine against the
  Agent's loopback gateway, with a client state directory of its own.
- ``kubernetes`` compute (:mod:`occ_cli.kube`): the Ready gateway Pod whose mounted ConfigMap
  is that revision's, and ``node /app/openclaw.mjs tui`` through the exec API.

Each compute driver's attach lives in a module of its own (``ATTACHERS``), imported when the
revision turns out to run there, as the control plane selects its compute drivers: the
``kubernetes`` client costs more than a second of start-up that no other command needs.

Leaving the TUI (Ctrl+D) ends only the client; the gateway keeps serving.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from occ_cli.client import CliError, Exit, OccClient
from occ_cli.common import every_page
from occ_cli.waiting import wait_for

# Compute driver id -> the module whose ``attach(target, options, where)`` runs the TUI there.
ATTACHERS = {"local": "occ_cli.tui_local", "kubernetes": "occ_cli.kube"}


@dataclass(frozen=True)
class TuiOptions:
    session: str = "main"
    message: str | None = None

    def argv(self) -> list[str]:
        return ["tui", "--session", self.session, *(["--message", self.message] if self.message else [])]


@dataclass(frozen=True)
class Where:
    """What the operator said about where the gateway runs; each attacher reads its own part."""

    namespace: dict[str, Any]  # the Namespace as OCC answered it
    manage: Path | None = None  # local: OCC's manage.py
    kubeconfig: str | None = None  # kubernetes: credentials, context, tenant namespace override
    context: str | None = None
    kube_namespace: str | None = None


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
    revisions = every_page(client, f"/namespaces/{namespace_id}/agents/{agent_id}/revisions", "revisions")
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


def attach(target: Target, options: TuiOptions, where: Where) -> int:
    """Run the TUI on the gateway of the compute driver the revision is pinned to; its exit status."""
    driver = (target.revision.get("compute") or {}).get("id")
    module = ATTACHERS.get(str(driver))
    if module is None:
        raise CliError(f"The revision runs on the {driver!r} compute driver, which has no terminal to attach to.",
                       Exit.API_ERROR, code="TUI_UNSUPPORTED_DRIVER")
    run: Callable[[Target, TuiOptions, Where], int] = importlib.import_module(module).attach
    return run(target, options, where)
