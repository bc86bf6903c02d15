"""``occ agents models``: the models a credential can use (Create Agent's Discover models), asked
of the provider through OCC (``POST …/agents/models``). Registered on ``occ agents``.

The credential is an existing Secret (``--secret``) or read from stdin / a hidden prompt, never
from the command line; OCC stores nothing and never echoes it.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from occ_cli import output
from occ_cli.commands.agents import app
from occ_cli.commands.secrets import read_secret_value
from occ_cli.common import JsonOption, NamespaceOption, json_wanted, namespace_of, secret_id_of, settings

MODEL_COLUMNS = [("MODEL", "id"), ("NAME", "displayName")]
AUTH_METHODS = ("api_key", "codex_pat")


@app.command("models")
def agents_models(
    namespace: NamespaceOption,
    provider: Annotated[str, typer.Option(help="openai or anthropic.")] = "openai",
    auth_method: Annotated[str, typer.Option(
        help="api_key (an API key) or codex_pat (a ChatGPT workspace's service account token, at-…; OpenAI "
             "only).")] = "api_key",
    secret: Annotated[str | None, typer.Option(
        help="A Secret holding the credential (id or name) [default: the credential is read from stdin]")] = None,
    as_json: JsonOption = False,
) -> None:
    """List the models an API key or a service account token can use (nothing is stored)."""
    if auth_method not in AUTH_METHODS:
        raise typer.BadParameter("api_key or codex_pat.", param_hint="--auth-method")
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    body: dict[str, Any] = {"provider": provider, "authMethod": auth_method}
    if secret:
        body["secretRef"] = {"kind": "secret", "namespaceId": namespace_id,
                             "id": secret_id_of(client, namespace_id, secret)}
    else:
        body["apiKey"] = read_secret_value().strip()
    data = client.post(f"/namespaces/{namespace_id}/agents/models", body)
    if json_wanted(as_json):
        return output.print_json(data["models"])
    rows = [{"id": model["id"], "displayName": model.get("displayName") or ""} for model in data["models"]]
    output.print_table(MODEL_COLUMNS, rows)
