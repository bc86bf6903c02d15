"""What every ``occ`` command shares: the global options (``settings``, set by ``main.configure``),
the option types, and finding a Namespace, Agent or Secret by its id or its name."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer

from occ_cli.client import CliError, Exit, OccClient, resolve_key

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


def json_wanted(flag: bool) -> bool:
    """Whether to print JSON: the command's ``--json`` or the global one."""
    settings.json = settings.json or flag
    return settings.json


def _find(items: list[dict[str, Any]], wanted: str, *, kind: str, prefix: str) -> dict[str, Any]:
    matches = [item for item in items if item.get("id") == wanted or (not wanted.startswith(prefix)
                                                                       and item.get("name") == wanted)]
    if not matches:
        raise CliError(f"No {kind} has the id or name {wanted!r}.", Exit.NOT_FOUND, code="NOT_FOUND")
    if len(matches) > 1:
        raise CliError(f"Several {kind}s are named {wanted!r}; use the id.", Exit.USAGE, code="AMBIGUOUS_NAME")
    return matches[0]


def every_page(client: OccClient, path: str, key: str) -> list[dict[str, Any]]:
    """Every item of a keyset-paged list (``key`` of each page), following ``nextCursor``;
    ``path`` may carry the list's own filters (``…?q=x``)."""
    rows: list[dict[str, Any]] = []
    cursor = ""
    while True:
        joiner = "&" if "?" in path else "?"
        page = client.get(f"{path}{joiner}limit=100" + (f"&cursor={quote(cursor)}" if cursor else ""))
        rows += page[key]
        cursor = page["nextCursor"] or ""
        if not cursor:
            return rows


def namespace_of(client: OccClient, wanted: str) -> dict[str, Any]:
    if wanted.startswith("ns_"):
        return client.get(f"/namespaces/{wanted}")
    return _find(every_page(client, "/namespaces", "namespaces"), wanted, kind="Namespace", prefix="ns_")


def agent_of(client: OccClient, namespace_id: str, wanted: str) -> dict[str, Any]:
    if wanted.startswith("agt_"):
        return client.get(f"/namespaces/{namespace_id}/agents/{wanted}")
    found = _find(every_page(client, f"/namespaces/{namespace_id}/agents", "agents"), wanted, kind="Agent",
                  prefix="agt_")
    return client.get(f"/namespaces/{namespace_id}/agents/{found['id']}")


def secret_id_of(client: OccClient, namespace_id: str, wanted: str) -> str:
    if wanted.startswith("sec_"):
        return wanted
    return _find(every_page(client, f"/namespaces/{namespace_id}/secrets", "secrets"), wanted, kind="Secret",
                 prefix="sec_")["id"]


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


def gone(read: Callable[[], Any]) -> Callable[[], dict[str, Any]]:
    """A poll that answers ``{"status": "deleted"}`` once the resource reads as 404."""
    def poll() -> dict[str, Any]:
        try:
            return read()
        except CliError as exc:
            if exc.exit_code == Exit.NOT_FOUND:
                return {"status": "deleted"}
            raise
    return poll
