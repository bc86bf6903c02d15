"""``occ usage``: cost and tokens by Agent, model and day (the console's Usage page), as a table,
JSON or CSV; ``occ budgets``: a Namespace's budgets, and (administrators) set, override, remove."""

from __future__ import annotations

import sys
from typing import Annotated, Any
from urllib.parse import urlencode

import typer

from occ_cli import output
from occ_cli.common import JsonOption, NamespaceOption, agent_of, every_page, json_wanted, namespace_of, settings

USAGE_COLUMNS = [("DAY", "day"), ("AGENT", "agentName"), ("MODEL", "model"), ("INPUT", "inputTokens"),
                 ("OUTPUT", "outputTokens"), ("CACHED", "cachedTokens"), ("COST USD", "cost")]
BUDGET_COLUMNS = [("BUDGET", "id"), ("AGENT", "agentName"), ("PERIOD", "period"), ("LIMIT USD", "limit"),
                  ("SPENT USD", "spend"), ("%", "percent"), ("OVERRIDDEN", "overridden")]

budgets = typer.Typer(no_args_is_help=True, help="Budgets: list; administrators set, override and remove them.")


def usage(
    namespace: NamespaceOption,
    agent: Annotated[str, typer.Option(help="One Agent: its id (agt_…) or name.")] = "",
    model: Annotated[str, typer.Option(help="One model's name.")] = "",
    since: Annotated[str, typer.Option(help="First UTC day, YYYY-MM-DD [default: the 1st of this month].")] = "",
    until: Annotated[str, typer.Option(help="Last UTC day, inclusive [default: today].")] = "",
    by: Annotated[str, typer.Option(help="Group by any of agent, model, day (comma-separated).")] = "agent,model,day",
    csv: Annotated[bool, typer.Option("--csv", help="Every row as CSV on stdout.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Cost and tokens of the Namespace's Agents you may read, newest day first."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    query = {key: value for key, value in (("since", since), ("until", until), ("model", model), ("groupBy", by))
             if value}
    if agent:
        query["agent"] = agent_of(client, namespace_id, agent)["id"]
    path = f"/namespaces/{namespace_id}/usage"
    if csv:
        for chunk in client.stream(f"{path}?{urlencode({**query, 'format': 'csv'})}"):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        return
    report: dict[str, Any] = client.get(f"{path}?{urlencode(query)}")
    if json_wanted(as_json):
        return output.print_json(report)
    columns = [(heading, key) for heading, key in USAGE_COLUMNS
               if key not in ("day", "agentName", "model") or {"day": "day", "agentName": "agent",
                                                                "model": "model"}[key] in report["groupBy"]]
    output.print_table(columns, report["rows"], title=f"Usage {report['since']} to {report['until']}")
    output.note(f"Total: ${report['total']['cost']} ({report['total']['inputTokens']} in, "
                f"{report['total']['outputTokens']} out, {report['total']['cachedTokens']} cached)")


@budgets.command("list")
def budgets_list(namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """The Namespace's budgets and what this period has spent."""
    client = settings.client()
    rows = every_page(client, f"/namespaces/{namespace_of(client, namespace)['id']}/budgets", "budgets")
    if json_wanted(as_json):
        return output.print_json(rows)
    output.print_table(BUDGET_COLUMNS, [{**row, "agentName": row["agentName"] or "(Namespace)"} for row in rows])


@budgets.command("set")
def budgets_set(
    limit: Annotated[str, typer.Argument(help="USD, e.g. 25 or 2.50.")],
    namespace: NamespaceOption,
    period: Annotated[str, typer.Option(help="day or month (UTC).")] = "month",
    agent: Annotated[str, typer.Option(help="One Agent's budget (its id or name); else the Namespace's.")] = "",
    webhook_url: Annotated[str, typer.Option(help="POSTed at 50, 80 and 100 %.")] = "",
    webhook_secret: Annotated[str, typer.Option(help="A Secret (id) whose value signs the webhook.")] = "",
    as_json: JsonOption = False,
) -> None:
    """Set (or replace) a budget. Raising one starts the Agents it paused."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    body: dict[str, Any] = {"period": period, "limit": limit}
    if agent:
        body["agentId"] = agent_of(client, namespace_id, agent)["id"]
    if webhook_url:
        body["webhookUrl"] = webhook_url
    if webhook_secret:
        body["webhookSecretId"] = webhook_secret
    row = client.request("PUT", f"/namespaces/{namespace_id}/budgets", body=body)
    if json_wanted(as_json):
        return output.print_json(row)
    output.print_table(BUDGET_COLUMNS, [{**row, "agentName": row["agentName"] or "(Namespace)"}])


@budgets.command("override")
def budgets_override(budget: Annotated[str, typer.Argument(help="The budget's id (bud_…).")],
                     namespace: NamespaceOption, as_json: JsonOption = False) -> None:
    """Let the budget's Agents run past 100 % until its period ends (audited), and start those it paused."""
    client = settings.client()
    row = client.post(f"/namespaces/{namespace_of(client, namespace)['id']}/budgets/{budget}/override")
    if json_wanted(as_json):
        return output.print_json(row)
    output.note(f"Overridden until the {row['period']} ends.")


@budgets.command("remove")
def budgets_remove(budget: Annotated[str, typer.Argument(help="The budget's id (bud_…).")],
                   namespace: NamespaceOption) -> None:
    """Remove a budget; the Agents it paused start if no other budget holds them back."""
    client = settings.client()
    client.delete(f"/namespaces/{namespace_of(client, namespace)['id']}/budgets/{budget}")
    output.note("Removed.")
