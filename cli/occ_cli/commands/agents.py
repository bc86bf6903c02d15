"""``occ agents``: create, deploy, stop, start and delete Agents, and read their status."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from occ_cli import output
from occ_cli.client import CliError, Exit, OccClient
from occ_cli.common import (
    DEPLOY_TIMEOUT_SECONDS,
    NAMESPACE_TIMEOUT_SECONDS,
    JsonOption,
    NamespaceOption,
    WaitOption,
    agent_of,
    gone,
    json_wanted,
    namespace_of,
    secret_id_of,
    settings,
)
from occ_cli.waiting import wait_for

app = typer.Typer(no_args_is_help=True, help="Create, deploy, stop, start, delete Agents and read their status.")

AGENT_COLUMNS = [("ID", "id"), ("NAME", "name"), ("STATUS", "status"), ("DESIRED", "desiredRuntimeState"),
                 ("ACTIVE REVISION", "activeRevisionId"), ("RUNTIME", "runtime.state")]
AgentArgument = Annotated[str, typer.Argument(help="The Agent: its id (agt_…) or name.")]


def _show_agent(data: dict[str, Any], as_json: bool) -> None:
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(AGENT_COLUMNS, [data])


@app.command("list")
def agents_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """List a Namespace's Agents."""
    client = settings.client()
    data = client.get(f"/namespaces/{namespace_of(client, namespace)['id']}/agents")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(AGENT_COLUMNS[:5], data)


@app.command("create")
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


@app.command("deploy")
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
    if json_wanted(as_json):
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


@app.command("stop")
def agents_stop(agent: AgentArgument, namespace: NamespaceOption, wait: WaitOption = True,
                wait_timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = NAMESPACE_TIMEOUT_SECONDS,
                as_json: JsonOption = False) -> None:
    """Stop the Agent's runtime (it keeps its revisions; `occ agents start` starts it again)."""
    data = _change_runtime(agent, namespace, "stop", until=("stopped", "none") if wait else (),
                           timeout=wait_timeout)
    _show_agent(data, as_json)


@app.command("start")
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


@app.command("delete")
def agents_delete(agent: AgentArgument, namespace: NamespaceOption, wait: WaitOption = True,
                  wait_timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = NAMESPACE_TIMEOUT_SECONDS,
                  as_json: JsonOption = False) -> None:
    """Delete the Agent: its runtime, revisions and runtime credentials, then the Agent."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    agent_id = agent_of(client, namespace_id, agent)["id"]
    data = client.delete(f"/namespaces/{namespace_id}/agents/{agent_id}")
    if wait:
        wait_for(gone(lambda: client.get(f"/namespaces/{namespace_id}/agents/{agent_id}")), what=f"Agent {agent_id}",
                 done=lambda a: a["status"] == "deleted", describe=lambda a: a["status"], timeout=wait_timeout)
        data = {"id": agent_id, "namespaceId": namespace_id, "status": "deleted"}
    if json_wanted(as_json):
        return output.print_json(data)
    output.note(f"Agent {agent_id}: {data['status']}")


@app.command("status")
def agents_status(agent: AgentArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """The Agent, whether its runtime serves it, and its newest deployment."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    data = agent_of(client, namespace_id, agent)
    revisions = client.get(f"/namespaces/{namespace_id}/agents/{data['id']}/revisions")
    latest = max(revisions, key=lambda r: r["revision"]) if revisions else None
    deployment = (client.get(f"/namespaces/{namespace_id}/agents/{data['id']}/deployments/{latest['id']}")
                  if latest else None)
    if json_wanted(as_json):
        return output.print_json({"agent": data, "latestDeployment": deployment})
    runtime = data.get("runtime") or {}
    output.print_fields([
        ("agent", f"{data['id']} ({data['name']})"), ("status", data["status"]),
        ("desired", data["desiredRuntimeState"]), ("active revision", data.get("activeRevisionId")),
        ("runtime", runtime.get("state")), ("runtime reason", output.lookup(runtime, "reason.message")),
        ("latest revision", f"{latest['id']} (#{latest['revision']})" if latest else None),
        ("latest deployment", _describe_deployment(deployment) if deployment else None),
    ], title=f"Agent {data['name']}")
