"""``occ agents``: create, deploy, stop, start and delete Agents, and read their status.

Why one module of ~430 lines: it is the one ``occ agents`` command tree; its commands share the
Agent lookup by name, the revision waits and the status table.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from occ_cli import output
from occ_cli.client import ApiError, CliError, Exit, OccClient
from occ_cli.commands.configurations import configuration_id_of
from occ_cli.common import (
    DEPLOY_TIMEOUT_SECONDS,
    NAMESPACE_TIMEOUT_SECONDS,
    JsonOption,
    NamespaceOption,
    WaitOption,
    agent_of,
    every_page,
    gone,
    json_wanted,
    namespace_of,
    secret_id_of,
    settings,
)
from occ_cli.repositories import RepoOption, repository_bindings
from occ_cli.waiting import wait_for

app = typer.Typer(no_args_is_help=True, help="Create, deploy, stop, start, delete Agents and read their status.")

AGENT_COLUMNS = [("ID", "id"), ("NAME", "name"), ("CONFIGURATION", "configurationName"), ("STATUS", "status"),
                 ("DESIRED", "desiredRuntimeState"), ("ACTIVE REVISION", "activeRevisionId"),
                 ("RUNTIME", "runtime.state")]
# The console's Agents list: health, not desired state (issue 27, item 6).
LIST_COLUMNS = [("ID", "id"), ("NAME", "name"), ("RUNTIME", "health.runtime"), ("MODEL", "model"),
                ("VERSION", "health.version"), ("LAST DEPLOY", "health.lastDeploy")]
AgentArgument = Annotated[str, typer.Argument(help="The Agent: its id (agt_…) or name.")]
PAUSED = "paused: budget exceeded"  # stopped by a budget (stoppedReason budget_exceeded)


def _show_agent(data: dict[str, Any], as_json: bool) -> None:
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(AGENT_COLUMNS, [data])


@app.command("list")
def agents_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """List a Namespace's Agents with their health: runtime state, the model and version they
    run, their last deploy (as the console's Agents list)."""
    client = settings.client()
    data = every_page(client, f"/namespaces/{namespace_of(client, namespace)['id']}/agents", "agents")
    if json_wanted(as_json):
        return output.print_json(data)
    output.print_table(LIST_COLUMNS, [{**agent, "health": _health(agent)} for agent in data])


def _health(agent: dict[str, Any]) -> dict[str, str | None]:
    runtime = agent.get("runtime") or {}
    last = agent.get("lastDeploy")
    active = agent.get("activeRevisionId")
    # As the console: the number it runs, else a short label of the revision (the id is in --json).
    version = f"v{runtime['revision']}" if runtime.get("revision") else active[:12] if active else None
    state = "retrying" if runtime.get("retrying") else runtime.get("state")
    if state == "stopped" and agent.get("stoppedReason") == "budget_exceeded":
        state = PAUSED  # as the console's pill says it
    return {"runtime": state, "version": version,
            "lastDeploy": None if not last else " ".join(
                part for part in (f"v{last['revision']}", last.get("status")) if part)}


@app.command("create")
def agents_create(
    name: Annotated[str, typer.Argument(help="The new Agent's name.")],
    namespace: NamespaceOption,
    configuration: Annotated[str, typer.Option("--configuration", "-c", help="The Configuration: its id (cfg_…) "
                                               "or name.")],
    model_secret: Annotated[str | None, typer.Option(help="The Secret holding the model key (id or name): "
                                                          "harnessAuth api_key.")] = None,
    execution_mode: Annotated[str, typer.Option(help="embedded (the one mode this OCC deploys).")] = "embedded",
    grant: Annotated[bool, typer.Option("--grant/--no-grant", help="Let the Agent use its model key and the "
                                        "Configuration's bound Secrets (secret-access), as deploy requires.")] = True,
    repo: RepoOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a stopped Agent (and grant it its Secrets); `occ agents deploy` starts it."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    configuration = configuration_id_of(client, namespace_id, configuration)
    body: dict[str, Any] = {"name": name, "configurationId": configuration, "executionMode": execution_mode}
    if model_secret:
        secret_id = secret_id_of(client, namespace_id, model_secret)
        body["harnessAuth"] = {"method": "api_key",
                               "source": {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}}
    if repo:
        body["repositoryBindings"] = repository_bindings(repo)
    data = client.post(f"/namespaces/{namespace_id}/agents", body)
    if grant:
        _grant_secrets(client, namespace_id, data)
    _show_agent(data, as_json)


def _grant_secrets(client: OccClient, namespace_id: str, agent: dict[str, Any]) -> list[str]:
    """Let the Agent use its model key and its Configuration's bound Secrets (secret-access)."""
    secret_ids = [agent["harnessAuth"]["source"]["id"]] if agent.get("harnessAuth") else []
    bound = (client.get(f"/namespaces/{namespace_id}/configurations/{agent['configurationId']}")
             .get("secretBindings") or {})
    secret_ids += [b["source"]["id"] for b in bound.values() if b["source"]["id"] not in secret_ids]
    if secret_ids:
        client.post(f"/namespaces/{namespace_id}/agents/{agent['id']}/secret-access", {"secretIds": secret_ids})
        output.note(f"Agent {agent['id']} may use {', '.join(secret_ids)}")
    return secret_ids


@app.command("grant")
def agents_grant(agent: AgentArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Let the Agent use its model key and its Configuration's Secrets (the console's Retry
    credential access), e.g. after they changed."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    found = agent_of(client, namespace_id, agent)
    secret_ids = _grant_secrets(client, namespace_id, found)
    if json_wanted(as_json):
        return output.print_json({"agentId": found["id"], "secretIds": secret_ids})
    if not secret_ids:
        output.note(f"Agent {found['id']} uses no Secret")


@app.command("runtime")
def agents_runtime(agent: AgentArgument, namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """What the compute backend sees of the Agent's gateway now (the console's Runtime panel):
    state, since, restarts, the revision it serves, memory and CPU."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    agent_id = agent_of(client, namespace_id, agent)["id"]
    data = client.get(f"/namespaces/{namespace_id}/agents/{agent_id}/runtime")
    if json_wanted(as_json):
        return output.print_json(data)
    seen = data.get("observation") or {}
    memory = seen.get("memoryBytes")
    output.print_fields([
        ("state", seen.get("state") or data.get("unavailable") or ("not reported by this backend"
                                                                   if not data.get("supported") else None)),
        ("desired", data["desiredRuntimeState"]), ("since", seen.get("since")),
        ("revision", f"{seen['revisionId']} (#{seen.get('revisionNumber') or '?'})" if seen.get("revisionId")
         else None),
        ("restarts", seen.get("restarts")), ("memory", f"{memory / 2**20:.0f} MiB" if memory is not None else None),
        ("cpu", f"{seen['cpuPercent']:.1f} %" if seen.get("cpuPercent") is not None else None),
        ("crash loop", seen.get("crashLoop")), ("observed", seen.get("observedAt")),
    ], title=f"Agent {agent_id}")


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


SMOKE_SEPARATOR = "=>"


def _smoke_conversation(text: str) -> dict[str, str]:
    prompt, separator, expect = text.partition(SMOKE_SEPARATOR)
    if not separator or not prompt.strip() or not expect:
        raise CliError(f"--smoke takes 'PROMPT{SMOKE_SEPARATOR}PATTERN' (a regular expression the reply must "
                       f"match), not {text!r}.", Exit.USAGE, code="USAGE")
    return {"prompt": prompt.strip(), "expect": expect.strip()}


def provision_and_report(client: OccClient, namespace_id: str, body: Any, *, wait: bool, wait_timeout: float,
                         as_json: bool) -> None:
    """Admit one provisioning request, follow it (and its first deployment) when ``wait``, and
    print the outcome: ``occ provision`` and ``occ presets apply``."""
    admitted = client.post(f"/namespaces/{namespace_id}/agents/provision", body)["provisioning"]
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
    if json_wanted(as_json):
        return output.print_json(result)
    state = result["provisioning"]
    output.print_fields([("work", state["workId"]), ("status", state["status"]), ("phase", state["phase"]),
                         ("configuration", state.get("configurationId")), ("agent", state.get("agentId")),
                         ("revision", state.get("revisionId")),
                         ("deployment", output.lookup(result, "deployment.status"))], title="Provisioning")


@app.command("update")
def agents_update(
    agent: AgentArgument, namespace: NamespaceOption,
    configuration: Annotated[str | None, typer.Option("--configuration", "-c", help="Another Configuration "
                                                      "(its id or name) for its next deploy.")] = None,
    model_secret: Annotated[str | None, typer.Option(help="The Secret holding the model key (id or name).")] = None,
    smoke: Annotated[list[str] | None, typer.Option(
        "--smoke", help=f"A smoke conversation, 'PROMPT{SMOKE_SEPARATOR}PATTERN' (up to five; replaces the saved "
        "ones): before a new version replaces the serving one, its reply to PROMPT must match the regular "
        "expression PATTERN (spaces around => are ignored).")] = None,
    no_smoke: Annotated[bool, typer.Option("--no-smoke", help="Remove the saved smoke conversations.")] = False,
    rollback: Annotated[bool | None, typer.Option(
        "--rollback/--no-rollback", help="Whether a new version that crash-loops or is not ready in time after it "
        "replaced the serving one is rolled back to it (the default), or kept for investigation.")] = None,
    repo: RepoOption = None,
    no_repos: Annotated[bool, typer.Option("--no-repos", help="Remove every repository binding.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Change the Agent's draft (taken on its next `occ agents deploy`); --repo replaces its repositories."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    current = agent_of(client, namespace_id, agent)
    body: dict[str, Any] = {}
    if model_secret:
        body["harnessAuth"] = {"method": "api_key", "source": {
            "kind": "secret", "namespaceId": namespace_id, "id": secret_id_of(client, namespace_id, model_secret)}}
    if smoke and no_smoke:
        raise CliError("Pass --smoke or --no-smoke, not both.", Exit.USAGE, code="USAGE")
    if smoke or no_smoke:
        body["smokeConversations"] = [_smoke_conversation(text) for text in smoke or []]
    if rollback is not None:
        body["rollbackOnFailure"] = rollback
    if repo or no_repos:
        body["repositoryBindings"] = repository_bindings(repo or [], clear=no_repos)
    if not body and not configuration:
        raise CliError("Nothing to change: pass --configuration, --model-secret, --smoke, --no-smoke, "
                       "--[no-]rollback, --repo or --no-repos.", Exit.USAGE, code="USAGE")
    # The API's PATCH names the Configuration every time: the one given (by id or name), else the Agent's own.
    chosen = configuration_id_of(client, namespace_id, configuration) if configuration else None
    body = {"configurationId": chosen or current["configurationId"], **body}
    _show_agent(client.patch(f"/namespaces/{namespace_id}/agents/{current['id']}", body), as_json)


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
    revisions = every_page(client, f"/namespaces/{namespace_id}/agents/{data['id']}/revisions", "revisions")
    latest = max(revisions, key=lambda r: r["revision"]) if revisions else None
    deployment = (client.get(f"/namespaces/{namespace_id}/agents/{data['id']}/deployments/{latest['id']}")
                  if latest else None)
    if json_wanted(as_json):
        return output.print_json({"agent": data, "latestDeployment": deployment})
    runtime = data.get("runtime") or {}
    output.print_fields([
        ("agent", f"{data['id']} ({data['name']})"),
        ("configuration", f"{data['configurationId']} ({data.get('configurationName')})"), ("status", data["status"]),
        ("desired", data["desiredRuntimeState"]), ("active revision", data.get("activeRevisionId")),
        ("runtime", PAUSED if runtime.get("state") == "stopped" and data.get("stoppedReason") == "budget_exceeded"
         else runtime.get("state")), ("runtime reason", output.lookup(runtime, "reason.message")),
        ("latest revision", f"{latest['id']} (#{latest['revision']})" if latest else None),
        ("latest deployment", _describe_deployment(deployment) if deployment else None),
        *_evidence_fields(deployment),
    ], title=f"Agent {data['name']}")


def _evidence_fields(deployment: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """A failed deployment's evidence: a check refused before cutover, or a crash loop's last
    exit status and log lines (redacted by OCC)."""
    data = output.lookup(deployment or {}, "error.data") or {}
    found = data.get("verification") or data.get("crashLoop")
    if not isinstance(found, dict):
        return []
    fields: list[tuple[str, Any]] = []
    if "check" in found:
        fields.append(("failed check", found["check"]))
    if "exitStatus" in found:
        fields += [("last exit status", found["exitStatus"]), ("restarts", found.get("restarts"))]
    lines = found.get("evidence") or []
    if lines:
        fields.append(("evidence", "\n".join(str(line) for line in lines)))
    return fields



CHECK_COLUMNS = [("COMPONENT", "component"), ("CHECK", "check"), ("STATE", "state"), ("CODE", "code"),
                 ("CHECKED", "checkedAt")]


@app.command("diagnose")
def agents_diagnose(
    agent: AgentArgument, namespace: NamespaceOption,
    revision: Annotated[str | None, typer.Option(help="The revision: its id (rev_…) or number. Default: the "
                                                 "Agent's latest.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Run diagnostics: ask the compute backend to check one deployment now (the console's Run
    diagnostics) and print each check's component, check, state (succeeded, failed, unknown) and code.
    Changes nothing. Needs operate and read on the Agent and read on the revision.

    Exits 0 when no check failed, 6 when at least one did (the checks are printed, or with --json
    the answer, either way); 5 when the runtime's evidence is unavailable now (try again)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    base = f"/namespaces/{namespace_id}/agents/{agent_of(client, namespace_id, agent)['id']}"
    if revision is None or revision.isdigit():
        wanted = [r for r in every_page(client, f"{base}/revisions", "revisions")
                  if revision is None or r["revision"] == int(revision)]
        if not wanted:
            raise CliError(f"the Agent has no revision{'' if revision is None else ' #' + revision}",
                           Exit.NOT_FOUND, code="NOT_FOUND")
        revision = str(max(wanted, key=lambda r: r["revision"])["id"])
    try:
        data = client.post(f"{base}/deployments/{revision}/diagnostics")
    except ApiError as exc:
        if exc.status != 503:
            raise
        raise CliError("The runtime's evidence is unavailable now: the compute backend could not report on "
                       f"deployment {revision}. Try again in a moment.", Exit.UNAVAILABLE, code=exc.code) from exc
    if json_wanted(as_json):
        output.print_json(data)
    else:
        output.print_table(CHECK_COLUMNS, data["checks"], title=f"Diagnostics of {data['revisionId']} at "
                                                               f"{data['observedAt']}")
    if any(check["state"] == "failed" for check in data["checks"]):
        raise typer.Exit(int(Exit.FAILED))
