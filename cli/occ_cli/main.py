"""The ``occ`` command (Typer): its global options, ``installation``, ``provision``, ``tui``,
and the command groups of ``occ_cli.commands``. Each command is a few API calls and a rendering.

Names or ids: wherever a command takes a Namespace, Agent or Secret it accepts its id
(``ns_…``, ``agt_…``, ``sec_…``) or its name, looked up in the list OCC returns (``common``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from occ_cli import output, tui
from occ_cli.client import CliError, Exit, default_base_url
from occ_cli.commands import (  # agent_sharing adds occ agents share|shares|unshare, agent_models occ agents models
    access,
    agent_models,  # noqa: F401
    agent_repositories,  # noqa: F401 - adds occ agents repositories
    agent_sharing,  # noqa: F401
    agents,
    audit,
    chat,
    configurations,
    logs,
    members,
    namespaces,
    presets,
    revisions,
    secrets,
    sessions,
    usage,
)
from occ_cli.commands.agents import provision_and_report
from occ_cli.common import (
    DEPLOY_TIMEOUT_SECONDS,
    PROVISION_TIMEOUT_SECONDS,
    JsonOption,
    NamespaceOption,
    WaitOption,
    agent_of,
    json_wanted,
    namespace_of,
    read_document,
    settings,
)

app = typer.Typer(name="occ", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="OCC from the command line: Namespaces, Secrets, Configurations, Agents, deployments, "
                       "and the OpenClaw TUI of a running Agent.")
app.add_typer(namespaces.app, name="namespaces")
app.add_typer(secrets.app, name="secrets")
app.add_typer(configurations.app, name="configurations")
app.add_typer(presets.app, name="presets")
app.add_typer(agents.app, name="agents")
app.add_typer(revisions.app, name="revisions")
app.add_typer(members.app, name="members")
app.add_typer(access.app, name="access")
app.add_typer(sessions.app, name="sessions")
app.add_typer(sessions.approvals_app, name="approvals")
app.command("audit")(audit.audit)
app.command("logs")(logs.logs)
app.command("chat")(chat.chat)
app.command("usage")(usage.usage)
app.add_typer(usage.budgets, name="budgets")


@app.callback()
def configure(
    url: Annotated[str, typer.Option("--url", envvar="OCC_URL", show_envvar=True,
                                     help="OCC's base URL [default: http://127.0.0.1:$OCC_PORT or :8000]")] = "",
    key_file: Annotated[Path | None, typer.Option(
        "--key-file", envvar="OCC_KEY_FILE", show_envvar=True,
        help="A key file holding data.key [default: OCC_API_KEY if set, else "
             "$OCC_DATA_DIR/bootstrap-admin-key.json]")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds to wait for one HTTP answer.")] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output for every command.")] = False,
) -> None:
    settings.base_url = url or default_base_url()
    settings.key_file = key_file
    settings.timeout = timeout
    settings.json = as_json


# --- installation ------------------------------------------------------------------------------


@app.command()
def installation(as_json: JsonOption = False) -> None:
    """Show the Installation the key belongs to (the first call to make with a new key)."""
    data = settings.client().get("/installation")
    if json_wanted(as_json):
        return output.print_json(data)
    modes = (data.get("capabilities") or {}).get("agentProvisioning", {}).get("executionModes")
    output.print_fields([("id", data["id"]), ("name", data["name"]), ("created", data.get("createdAt")),
                         ("execution modes", ", ".join(modes or []))], title="Installation")






# --- provisioning --------------------------------------------------------------------------------


@app.command()
def provision(
    namespace: NamespaceOption,
    file: Annotated[Path, typer.Option("--file", "-f", help="The provisioning request as JSON (requestId, name, "
                                       "configuration, harnessAuth, ...); - reads stdin.")],
    wait: WaitOption = True,
    wait_timeout: Annotated[float, typer.Option(help="Seconds to wait for provisioning and its first deployment.")] =
        PROVISION_TIMEOUT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """Create a Configuration and an Agent, grant its Secrets and deploy it: one request."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    provision_and_report(client, namespace_id, read_document(file), wait=wait, wait_timeout=wait_timeout,
                         as_json=as_json)


# --- tui -----------------------------------------------------------------------------------------


@app.command(name="tui")
def tui_command(
    namespace: NamespaceOption,
    agent: Annotated[str, typer.Option("--agent", "-a", help="The Agent: its id (agt_…) or name.")],
    revision: Annotated[str | None, typer.Option(help="The revision that must be active first "
                                                      "[default: the Agent's newest]")] = None,
    session: Annotated[str, typer.Option(help="The OpenClaw session key.")] = "main",
    message: Annotated[str | None, typer.Option(help="A first message to send once attached.")] = None,
    wait_timeout: Annotated[float, typer.Option(help="Seconds to wait for the revision to be active.")] =
        DEPLOY_TIMEOUT_SECONDS,
    manage: Annotated[Path | None, typer.Option(
        envvar="OCC_MANAGE", help="local driver: OCC's manage.py (reads the gateway's address and password) "
                                  "[default: the checkout this CLI runs from]")] = None,
    kubeconfig: Annotated[str | None, typer.Option(envvar="KUBECONFIG", help="kubernetes driver: kubeconfig path "
                                                   "[default: in-cluster, else ~/.kube/config]")] = None,
    context: Annotated[str | None, typer.Option(help="kubernetes driver: kubeconfig context.")] = None,
    kube_namespace: Annotated[str | None, typer.Option(help="kubernetes driver: the tenant namespace "
                                                       "[default: existingNamespace, else oce-<hash>]")] = None,
) -> None:
    """Attach the OpenClaw TUI to the Agent's gateway once the intended revision is active.

    Ctrl+D leaves the TUI; the gateway keeps serving."""
    client = settings.client()
    ns = namespace_of(client, namespace)
    target = tui.await_active(client, ns["id"], agent_of(client, ns["id"], agent)["id"], revision=revision,
                              timeout=wait_timeout)
    where = tui.Where(namespace=ns, manage=manage, kubeconfig=kubeconfig, context=context,
                      kube_namespace=kube_namespace)
    status = tui.attach(target, tui.TuiOptions(session=session, message=message), where)
    raise typer.Exit(status)


def main() -> None:
    """The console script: run a command, turn failures into a message and an exit code."""
    try:
        code = app(standalone_mode=False)
    except CliError as exc:
        output.report_error(exc, as_json=settings.json)
        sys.exit(int(exc.exit_code))
    except typer.Abort:
        output.note("aborted")
        sys.exit(130)
    except typer.TyperException as exc:  # a usage error (Click's, as Typer vendors it): exit 2
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            output.note(f"error: {exc}")
        sys.exit(int(getattr(exc, "exit_code", Exit.USAGE)))
    sys.exit(code if isinstance(code, int) else 0)
