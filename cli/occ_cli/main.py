"""The ``occ`` commands (Typer). Each one is a few API calls and a rendering.

Names or ids: wherever a command takes a Namespace, Agent or Secret it accepts its id
(``ns_…``, ``agt_…``, ``sec_…``) or its name, looked up in the list OCC returns.
"""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from occ_cli import output, tui
from occ_cli.client import CliError, Exit, OccClient, default_base_url, resolve_key
from occ_cli.waiting import wait_for

app = typer.Typer(name="occ", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="OCC from the command line: Namespaces, Secrets, Configurations, Agents, deployments, "
                       "and the OpenClaw TUI of a running Agent.")
namespaces_app = typer.Typer(no_args_is_help=True, help="List, create, show and delete Namespaces.")
secrets_app = typer.Typer(no_args_is_help=True, help="Create, list and delete Secrets (values are read from stdin).")
configurations_app = typer.Typer(no_args_is_help=True, help="Create, show and delete Configurations.")
agents_app = typer.Typer(no_args_is_help=True, help="Create, deploy, stop, start, delete Agents and read their status.")
app.add_typer(namespaces_app, name="namespaces")
app.add_typer(secrets_app, name="secrets")
app.add_typer(configurations_app, name="configurations")
app.add_typer(agents_app, name="agents")

DEPLOY_TIMEOUT_SECONDS = 900.0
NAMESPACE_TIMEOUT_SECONDS = 300.0
PROVISION_TIMEOUT_SECONDS = 900.0


@dataclass
class Settings:
    base_url: str = ""
    key_file: Path | None = None
    timeout: float = 30.0
    json: bool = False
    _client: OccClient | None = None

    def client(self) -> OccClient:
        if self._client is None:
            self._client = OccClient(self.base_url, resolve_key(self.key_file), timeout=self.timeout)
        return self._client


settings = Settings()

def _record_json(value: bool) -> bool:
    """Known before the command runs, so that its errors are reported as JSON too."""
    settings.json = settings.json or value
    return value


JsonOption = Annotated[bool, typer.Option("--json", callback=_record_json,
                                          help="Print one JSON document (the API's data) instead of a table.")]
NamespaceOption = Annotated[str, typer.Option("--namespace", "-n", help="The Namespace: its id (ns_…) or name.")]
WaitOption = Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until the work is done, showing progress.")]


def _json(flag: bool) -> bool:
    settings.json = settings.json or flag
    return settings.json


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


# --- lookups -------------------------------------------------------------------------------------


def _find(items: list[dict[str, Any]], wanted: str, *, kind: str, prefix: str) -> dict[str, Any]:
    matches = [item for item in items if item.get("id") == wanted or (not wanted.startswith(prefix)
                                                                       and item.get("name") == wanted)]
    if not matches:
        raise CliError(f"No {kind} has the id or name {wanted!r}.", Exit.NOT_FOUND, code="NOT_FOUND")
    if len(matches) > 1:
        raise CliError(f"Several {kind}s are named {wanted!r}; use the id.", Exit.USAGE, code="AMBIGUOUS_NAME")
    return matches[0]


def namespace_of(client: OccClient, wanted: str) -> dict[str, Any]:
    if wanted.startswith("ns_"):
        return client.get(f"/namespaces/{wanted}")
    return _find(client.get("/namespaces"), wanted, kind="Namespace", prefix="ns_")


def agent_of(client: OccClient, namespace_id: str, wanted: str) -> dict[str, Any]:
    if wanted.startswith("agt_"):
        return client.get(f"/namespaces/{namespace_id}/agents/{wanted}")
    found = _find(client.get(f"/namespaces/{namespace_id}/agents"), wanted, kind="Agent", prefix="agt_")
    return client.get(f"/namespaces/{namespace_id}/agents/{found['id']}")


def secret_id_of(client: OccClient, namespace_id: str, wanted: str) -> str:
    if wanted.startswith("sec_"):
        return wanted
    return _find(client.get(f"/namespaces/{namespace_id}/secrets"), wanted, kind="Secret", prefix="sec_")["id"]


def read_document(path: Path) -> Any:
    """A JSON request body from a file, or stdin for ``-``."""
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        raise CliError(f"{path} could not be read ({exc.strerror}).", Exit.USAGE, code="UNREADABLE_FILE") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CliError(f"{path} is not JSON: {exc}.", Exit.USAGE, code="INVALID_JSON") from None


# --- installation and namespaces -----------------------------------------------------------------


@app.command()
def installation(as_json: JsonOption = False) -> None:
    """Show the Installation the key belongs to (the first call to make with a new key)."""
    data = settings.client().get("/installation")
    if _json(as_json):
        return output.print_json(data)
    modes = (data.get("capabilities") or {}).get("agentProvisioning", {}).get("executionModes")
    output.print_fields([("id", data["id"]), ("name", data["name"]), ("created", data.get("createdAt")),
                         ("execution modes", ", ".join(modes or []))], title="Installation")


NAMESPACE_COLUMNS = [("ID", "id"), ("NAME", "name"), ("STATUS", "status"), ("EXISTING", "existingNamespace"),
                     ("CREATED", "createdAt")]


def _show_namespace(data: dict[str, Any], as_json: bool) -> None:
    if _json(as_json):
        return output.print_json(data)
    output.print_table(NAMESPACE_COLUMNS, [data])


def _await_namespace(client: OccClient, namespace_id: str, timeout: float) -> dict[str, Any]:
    data = wait_for(lambda: client.get(f"/namespaces/{namespace_id}"), what=f"Namespace {namespace_id}",
                    done=lambda ns: ns["status"] in ("ready", "failed"), describe=lambda ns: ns["status"],
                    timeout=timeout)
    if data["status"] == "failed":
        raise CliError(f"Namespace {namespace_id} failed to become ready.", Exit.FAILED, code="NAMESPACE_FAILED")
    return data


@namespaces_app.command("list")
def namespaces_list(as_json: JsonOption = False) -> None:
    """List the Namespaces the key may read."""
    data = settings.client().get("/namespaces")
    if _json(as_json):
        return output.print_json(data)
    output.print_table(NAMESPACE_COLUMNS, data)


@namespaces_app.command("create")
def namespaces_create(
    name: Annotated[str, typer.Argument(help="The new Namespace's name.")],
    existing_namespace: Annotated[str | None, typer.Option(
        help="Adopt this operator-owned Kubernetes namespace instead of one the driver creates.")] = None,
    wait: WaitOption = True,
    wait_timeout: Annotated[float, typer.Option(help="Seconds to wait for it to become ready.")] =
        NAMESPACE_TIMEOUT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """Create a Namespace and (by default) wait until the worker has prepared it."""
    client = settings.client()
    body: dict[str, Any] = {"name": name}
    if existing_namespace:
        body["existingNamespace"] = existing_namespace
    data = client.post("/namespaces", body)
    if wait:
        data = _await_namespace(client, data["id"], wait_timeout)
    _show_namespace(data, as_json)


@namespaces_app.command("show")
def namespaces_show(namespace: Annotated[str, typer.Argument(help="Its id (ns_…) or name.")],
                    as_json: JsonOption = False) -> None:
    """Show one Namespace."""
    _show_namespace(namespace_of(settings.client(), namespace), as_json)


def _gone(read: Callable[[], Any]) -> Callable[[], dict[str, Any]]:
    """A poll that answers ``{"status": "deleted"}`` once the resource reads as 404."""
    def poll() -> dict[str, Any]:
        try:
            return read()
        except CliError as exc:
            if exc.exit_code == Exit.NOT_FOUND:
                return {"status": "deleted"}
            raise
    return poll


@namespaces_app.command("delete")
def namespaces_delete(namespace: Annotated[str, typer.Argument(help="Its id (ns_…) or name.")],
                      wait: WaitOption = True,
                      wait_timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = NAMESPACE_TIMEOUT_SECONDS,
                      as_json: JsonOption = False) -> None:
    """Delete an empty Namespace (OCC refuses one that still holds Agents)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    data = client.delete(f"/namespaces/{namespace_id}")
    if wait:
        data = wait_for(_gone(lambda: client.get(f"/namespaces/{namespace_id}")), what=f"Namespace {namespace_id}",
                        done=lambda ns: ns["status"] in ("deleted", "failed"), describe=lambda ns: ns["status"],
                        timeout=wait_timeout)
        if data["status"] == "failed":
            raise CliError(f"Namespace {namespace_id} could not be deleted.", Exit.FAILED, code="NAMESPACE_FAILED")
        data = {"id": namespace_id, "status": "deleted"}
    if _json(as_json):
        return output.print_json(data)
    output.note(f"Namespace {namespace_id}: {data['status']}")


# --- secrets -------------------------------------------------------------------------------------


def read_secret_value() -> str:
    """The value from stdin (one trailing newline dropped), or a hidden prompt on a terminal."""
    if sys.stdin.isatty():
        value = getpass.getpass("Secret value (not echoed): ", stream=sys.stderr)
    else:
        value = sys.stdin.read()
        value = value[:-2] if value.endswith("\r\n") else value[:-1] if value.endswith("\n") else value
    if not value:
        raise CliError("The Secret's value is empty: pipe it on stdin (e.g. `occ secrets create -n NS NAME < file`).",
                       Exit.USAGE, code="EMPTY_VALUE")
    return value


SECRET_COLUMNS = [("ID", "id"), ("NAME", "name"), ("NAMESPACE", "namespaceId"), ("UPDATED", "updatedAt")]


@secrets_app.command("create")
def secrets_create(name: Annotated[str, typer.Argument(help="The Secret's name.")], namespace: NamespaceOption,
                   as_json: JsonOption = False) -> None:
    """Create a Secret whose value is read from stdin (never from the command line)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    value = read_secret_value()
    data = client.post(f"/namespaces/{namespace_id}/secrets", {"name": name, "value": value})
    del value
    if _json(as_json):
        return output.print_json(data)
    output.print_table(SECRET_COLUMNS, [data])


@secrets_app.command("list")
def secrets_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """List a Namespace's Secrets (names and ids; values never leave OCC)."""
    client = settings.client()
    data = client.get(f"/namespaces/{namespace_of(client, namespace)['id']}/secrets")
    if _json(as_json):
        return output.print_json(data)
    output.print_table(SECRET_COLUMNS, data)


@secrets_app.command("delete")
def secrets_delete(secret: Annotated[str, typer.Argument(help="The Secret: its id (sec_…) or name.")],
                   namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Delete a Secret (OCC refuses one that a Configuration, Agent or revision still uses)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    secret_id = secret_id_of(client, namespace_id, secret)
    client.delete(f"/namespaces/{namespace_id}/secrets/{secret_id}")
    data = {"id": secret_id, "namespaceId": namespace_id, "status": "deleted"}
    if _json(as_json):
        return output.print_json(data)
    output.note(f"Secret {secret_id}: deleted")


# --- configurations ------------------------------------------------------------------------------

CONFIGURATION_COLUMNS = [("ID", "id"), ("KIND", "kind"), ("GENERATION", "generation"), ("NAMESPACE", "namespaceId"),
                         ("UPDATED", "updatedAt")]


@configurations_app.command("create")
def configurations_create(
    namespace: NamespaceOption,
    file: Annotated[Path, typer.Option("--file", "-f", help="The request body as JSON ({kind, values, "
                                       "secretBindings?}); - reads stdin.")],
    as_json: JsonOption = False,
) -> None:
    """Create a Configuration from a JSON file."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    data = client.post(f"/namespaces/{namespace_id}/configurations", read_document(file))
    if _json(as_json):
        return output.print_json(data)
    output.print_table(CONFIGURATION_COLUMNS, [data])


@configurations_app.command("show")
def configurations_show(configuration: Annotated[str, typer.Argument(help="Its id (cfg_…).")],
                        namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Show one Configuration, its values included."""
    client = settings.client()
    data = client.get(f"/namespaces/{namespace_of(client, namespace)['id']}/configurations/{configuration}")
    if _json(as_json):
        return output.print_json(data)
    output.print_table(CONFIGURATION_COLUMNS, [data])
    output.stdout.print_json(json.dumps(data.get("values", {})))


@configurations_app.command("delete")
def configurations_delete(configuration: Annotated[str, typer.Argument(help="Its id (cfg_…).")],
                          namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Delete a Configuration no Agent uses."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    client.delete(f"/namespaces/{namespace_id}/configurations/{configuration}")
    data = {"id": configuration, "namespaceId": namespace_id, "status": "deleted"}
    if _json(as_json):
        return output.print_json(data)
    output.note(f"Configuration {configuration}: deleted")


# --- agents --------------------------------------------------------------------------------------

AGENT_COLUMNS = [("ID", "id"), ("NAME", "name"), ("STATUS", "status"), ("DESIRED", "desiredRuntimeState"),
                 ("ACTIVE REVISION", "activeRevisionId"), ("RUNTIME", "runtime.state")]
AgentArgument = Annotated[str, typer.Argument(help="The Agent: its id (agt_…) or name.")]


def _show_agent(data: dict[str, Any], as_json: bool) -> None:
    if _json(as_json):
        return output.print_json(data)
    output.print_table(AGENT_COLUMNS, [data])


@agents_app.command("list")
def agents_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """List a Namespace's Agents."""
    client = settings.client()
    data = client.get(f"/namespaces/{namespace_of(client, namespace)['id']}/agents")
    if _json(as_json):
        return output.print_json(data)
    output.print_table(AGENT_COLUMNS[:5], data)


@agents_app.command("create")
def agents_create(
    name: Annotated[str, typer.Argument(help="The new Agent's name.")],
    namespace: NamespaceOption,
    configuration: Annotated[str, typer.Option("--configuration", "-c", help="The Configuration's id (cfg_…).")],
    model_secret: Annotated[str | None, typer.Option(help="The Secret holding the model key (id or name): "
                                                          "harnessAuth api_key.")] = None,
    execution_mode: Annotated[str, typer.Option(help="embedded (the one mode this OCC deploys).")] = "embedded",
    grant: Annotated[bool, typer.Option("--grant/--no-grant", help="Let the Agent use its model key and the "
                                        "Configuration's bound Secrets (secret-access), as deploy requires.")] = True,
    as_json: JsonOption = False,
) -> None:
    """Create a stopped Agent (and grant it its Secrets); `occ agents deploy` starts it."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    body: dict[str, Any] = {"name": name, "configurationId": configuration, "executionMode": execution_mode}
    secret_ids: list[str] = []
    if model_secret:
        secret_id = secret_id_of(client, namespace_id, model_secret)
        body["harnessAuth"] = {"method": "api_key",
                               "source": {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}}
        secret_ids.append(secret_id)
    data = client.post(f"/namespaces/{namespace_id}/agents", body)
    if grant:
        bound = client.get(f"/namespaces/{namespace_id}/configurations/{configuration}").get("secretBindings") or {}
        secret_ids += [b["source"]["id"] for b in bound.values() if b["source"]["id"] not in secret_ids]
        if secret_ids:
            client.post(f"/namespaces/{namespace_id}/agents/{data['id']}/secret-access", {"secretIds": secret_ids})
            output.note(f"Agent {data['id']} may use {', '.join(secret_ids)}")
    _show_agent(data, as_json)


def _describe_deployment(deployment: dict[str, Any]) -> str:
    text = deployment["status"]
    last = (deployment.get("progress") or {}).get("lastAttempt")
    if deployment["status"] == "failed" and deployment.get("error"):
        text += f" ({deployment['error'].get('code')}: {deployment['error'].get('message')})"
    elif last:
        text += f" ({last.get('code')}: {last.get('message')})"
    return text


def await_deployment(client: OccClient, namespace_id: str, agent_id: str, revision_id: str,
                     timeout: float) -> dict[str, Any]:
    """Until the deployment is terminal and, when it succeeded, the Agent serves that revision."""
    path = f"/namespaces/{namespace_id}/agents/{agent_id}/deployments/{revision_id}"
    deployment = wait_for(lambda: client.get(path), what=f"deployment {revision_id}",
                          done=lambda d: d["status"] in ("succeeded", "failed"), describe=_describe_deployment,
                          timeout=timeout)
    if deployment["status"] == "failed":
        error = deployment.get("error") or {}
        raise CliError(f"Deployment {revision_id} failed: {error.get('message') or 'no reason given'}", Exit.FAILED,
                       code=error.get("code") or "DEPLOYMENT_FAILED")
    return deployment


@agents_app.command("deploy")
def agents_deploy(
    agent: AgentArgument, namespace: NamespaceOption, wait: WaitOption = True,
    wait_timeout: Annotated[float, typer.Option(help="Seconds to wait for the revision to be active.")] =
        DEPLOY_TIMEOUT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """Freeze the Agent's draft as a new revision and (by default) wait until it is active."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    agent_id = agent_of(client, namespace_id, agent)["id"]
    revision = client.post(f"/namespaces/{namespace_id}/agents/{agent_id}/deploy")
    output.note(f"revision {revision['id']} (#{revision['revision']}) admitted")
    result: dict[str, Any] = {"revision": revision}
    if wait:
        result["deployment"] = await_deployment(client, namespace_id, agent_id, revision["id"], wait_timeout)
        result["agent"] = client.get(f"/namespaces/{namespace_id}/agents/{agent_id}")
    if _json(as_json):
        return output.print_json(result)
    output.print_fields([("revision", revision["id"]), ("number", revision["revision"]),
                         ("deployment", output.lookup(result, "deployment.status") or "queued (not awaited)"),
                         ("active revision", output.lookup(result, "agent.activeRevisionId"))],
                        title=f"Agent {agent_id}")


def _change_runtime(agent: str, namespace: str, verb: str, *, until: tuple[str, ...],
                    timeout: float) -> dict[str, Any]:
    """POST the Agent's ``stop``/``start`` and, when ``until`` names runtime states, read the
    Agent until its runtime is in one of them."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    agent_id = agent_of(client, namespace_id, agent)["id"]
    data: dict[str, Any] = client.post(f"/namespaces/{namespace_id}/agents/{agent_id}/{verb}")
    if until:
        data = wait_for(lambda: client.get(f"/namespaces/{namespace_id}/agents/{agent_id}"), what=f"Agent {agent_id}",
                        done=lambda a: output.lookup(a, "runtime.state") in until,
                        describe=lambda a: f"runtime {output.lookup(a, 'runtime.state')}", timeout=timeout)
    return data


@agents_app.command("stop")
def agents_stop(agent: AgentArgument, namespace: NamespaceOption, wait: WaitOption = True,
                wait_timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = NAMESPACE_TIMEOUT_SECONDS,
                as_json: JsonOption = False) -> None:
    """Stop the Agent's runtime (it keeps its revisions; `occ agents start` starts it again)."""
    data = _change_runtime(agent, namespace, "stop", until=("stopped", "none") if wait else (),
                           timeout=wait_timeout)
    _show_agent(data, as_json)


@agents_app.command("start")
def agents_start(agent: AgentArgument, namespace: NamespaceOption, wait: WaitOption = True,
                 wait_timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = DEPLOY_TIMEOUT_SECONDS,
                 as_json: JsonOption = False) -> None:
    """Start a stopped Agent again on the revision it last ran, and (by default) wait until it runs."""
    data = _change_runtime(agent, namespace, "start", until=("running", "failed") if wait else (),
                           timeout=wait_timeout)
    if wait and output.lookup(data, "runtime.state") == "failed":
        reason = output.lookup(data, "runtime.reason") or {}
        raise CliError(f"Agent {data['id']} did not start: {reason.get('message') or 'no reason given'}",
                       Exit.FAILED, code=reason.get("code") or "START_FAILED")
    _show_agent(data, as_json)


@agents_app.command("delete")
def agents_delete(agent: AgentArgument, namespace: NamespaceOption, wait: WaitOption = True,
                  wait_timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = NAMESPACE_TIMEOUT_SECONDS,
                  as_json: JsonOption = False) -> None:
    """Delete the Agent: its runtime, revisions and runtime credentials, then the Agent."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    agent_id = agent_of(client, namespace_id, agent)["id"]
    data = client.delete(f"/namespaces/{namespace_id}/agents/{agent_id}")
    if wait:
        wait_for(_gone(lambda: client.get(f"/namespaces/{namespace_id}/agents/{agent_id}")), what=f"Agent {agent_id}",
                 done=lambda a: a["status"] == "deleted", describe=lambda a: a["status"], timeout=wait_timeout)
        data = {"id": agent_id, "namespaceId": namespace_id, "status": "deleted"}
    if _json(as_json):
        return output.print_json(data)
    output.note(f"Agent {agent_id}: {data['status']}")


@agents_app.command("status")
def agents_status(agent: AgentArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """The Agent, whether its runtime serves it, and its newest deployment."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    data = agent_of(client, namespace_id, agent)
    revisions = client.get(f"/namespaces/{namespace_id}/agents/{data['id']}/revisions")
    latest = max(revisions, key=lambda r: r["revision"]) if revisions else None
    deployment = (client.get(f"/namespaces/{namespace_id}/agents/{data['id']}/deployments/{latest['id']}")
                  if latest else None)
    if _json(as_json):
        return output.print_json({"agent": data, "latestDeployment": deployment})
    runtime = data.get("runtime") or {}
    output.print_fields([
        ("agent", f"{data['id']} ({data['name']})"), ("status", data["status"]),
        ("desired", data["desiredRuntimeState"]), ("active revision", data.get("activeRevisionId")),
        ("runtime", runtime.get("state")), ("runtime reason", output.lookup(runtime, "reason.message")),
        ("latest revision", f"{latest['id']} (#{latest['revision']})" if latest else None),
        ("latest deployment", _describe_deployment(deployment) if deployment else None),
    ], title=f"Agent {data['name']}")


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
    admitted = client.post(f"/namespaces/{namespace_id}/agents/provision", read_document(file))["provisioning"]
    output.note(f"provisioning {admitted['workId']} admitted")
    result: dict[str, Any] = {"provisioning": admitted}
    if wait:
        state = wait_for(lambda: client.get(admitted["url"]), what=f"provisioning {admitted['workId']}",
                         done=lambda p: p["status"] in ("succeeded", "failed"),
                         describe=lambda p: f"{p['status']}, phase {p['phase']}", timeout=wait_timeout)
        result["provisioning"] = state
        if state["status"] == "failed":
            error = state.get("error") or {}
            raise CliError(f"Provisioning failed: {error.get('message') or 'no reason given'}", Exit.FAILED,
                           code=error.get("code") or "PROVISIONING_FAILED")
        if state.get("revisionId"):
            result["deployment"] = await_deployment(client, namespace_id, state["agentId"], state["revisionId"],
                                                    wait_timeout)
    if _json(as_json):
        return output.print_json(result)
    state = result["provisioning"]
    output.print_fields([("work", state["workId"]), ("status", state["status"]), ("phase", state["phase"]),
                         ("configuration", state.get("configurationId")), ("agent", state.get("agentId")),
                         ("revision", state.get("revisionId")),
                         ("deployment", output.lookup(result, "deployment.status"))], title="Provisioning")


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
