"""The hosted Codex plugin catalog: what a ChatGPT workspace's service-account token may install.

Every call starts from the token (``at-…``, a Codex access token) and goes only to the two
base URLs the installation configured (``OCC_CODEX_AUTH_BASE_URL`` for the identity,
``OCC_CODEX_CHATGPT_BASE_URL`` for the catalog), never to an address a caller typed:

1. identity: ``GET {auth}/api/accounts/v1/user-auth-credential/whoami`` gives the workspace's
   ``chatgpt_account_id`` (and whether it is FedRAMP); the account id always comes from here;
2. a page: ``GET {chatgpt}/ps/plugins/list?scope=GLOBAL&limit=20[&pageToken=…]``, or
   ``…/ps/plugins/search?q=…`` for a query, with ``ChatGPT-Account-ID`` and
   ``OAI-Product-Sku: codex``;
3. details: ``GET {chatgpt}/ps/plugins/<remote id>?includeDownloadUrls=true``, then the tools
   of its apps from ``POST {chatgpt}/ps/apps/batch {app_ids, include_tools: true}``.

One deadline covers a whole call (``OCC_PLUGIN_DISCOVERY_TIMEOUT_SECONDS``, 15 s), every
response is read as a stream and abandoned past ``OCC_PLUGIN_DISCOVERY_MAX_RESPONSE_BYTES``,
redirects are refused, and a response that echoes the token is discarded whole. Upstream
text never reaches a caller or a log line: failures are our four ``PLUGIN_DISCOVERY_*``
errors. Cursors are ours too: the upstream page token sealed with the query it belongs to,
so a cursor is opaque to callers and cannot be replayed against another query.

This module is pure: no models, services or Secrets. The caller hands it the token's value
for the duration of one call.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
from django.conf import settings

from occ.drivers.plugins.base import (
    CatalogEntry,
    CatalogPage,
    Link,
    PluginDiscoveryCredentialsRejected,
    PluginDiscoveryInvalidResponse,
    PluginDiscoveryRateLimited,
    PluginDiscoveryUnavailable,
    PluginNotFound,
    PluginTool,
    SetupGuidance,
)
from occ.errors import InvalidRequest
from occ.upstream import Failure, UpstreamFailure, fetch_json

logger = logging.getLogger(__name__)

MARKETPLACE = "openai-curated-remote"
DRIVER_PREFIX = "codex-plugin:"
PAGE_SIZE = 20
MAX_ENTRIES = 100
MAX_APPS = 50
MAX_TOOLS = 1000
QUERY_MAX = 1024
CURSOR_MAX = 2048
TEXT_MAX = 2000
TOKEN = re.compile(r"at-[\x21-\x7e]{8,8189}")
ACCOUNT_ID = re.compile(r"[\x21-\x7e]{1,256}")
SLUG = re.compile(r"[A-Za-z0-9._~-]{1,200}")
REMOTE_ID = re.compile(r"[\x21-\x7e]{1,256}")
APP_ID = re.compile(r"[\x21-\x7e]{1,256}")
TOOL_NAME = re.compile(r"[^\s\x00-\x1f\x7f]{1,256}")
IDENTITY_TTL_SECONDS = 300.0
IDENTITY_CACHE_MAX = 256


# Our words for the discovery errors of the contract (never upstream text).
REJECTED_MESSAGE = ("ChatGPT did not accept the token, or it has no access to workspace plugins. "
                    "Check the service account token.")
RATE_LIMITED_MESSAGE = "ChatGPT is limiting plugin requests for this token. Try again in a minute."


SETUP = SetupGuidance(
    message=("Plugins come from your ChatGPT workspace's catalog. A workspace admin decides which plugins "
             "are available; connecting each app's account happens after deployment."),
    links=(Link("Manage workspace plugins", "https://chatgpt.com/admin/plugins?catalog=GLOBAL"),
           Link("Service account credentials", "https://platform.openai.com/settings/organization/service-accounts")),
)
ADMIN_HELP = Link("Manage workspace plugins", "https://chatgpt.com/admin/plugins?catalog=GLOBAL")
# Upstream reason codes -> our words. Anything else is "not available to this workspace".
UNAVAILABLE_REASONS = {
    "DISABLED_BY_ADMIN": "A workspace admin turned this plugin off.",
    "PLAN_NOT_ELIGIBLE": "The workspace's plan does not include this plugin.",
    "REQUIRED_APP_UNAVAILABLE": "An app this plugin needs is not available to the workspace.",
}
UNAVAILABLE_OTHER = "This plugin is not available to the workspace."
NEEDS_LOCAL = "This plugin needs local components (skills or a local executor) that OCC Agents cannot run."
NO_APPS = "This plugin has no apps an Agent could use."
UNSUPPORTED_COMPONENTS = "This plugin needs MCP servers or scheduled tasks that OCC Agents cannot run."
TOOL_APP_OFF = "The app providing this tool is not enabled for the workspace."
TOOL_OFF = "This tool is turned off in the workspace."


# --- settings ----------------------------------------------------------------------------------


def _base(name: str) -> str:
    value = str(getattr(settings, name) or "").strip().rstrip("/")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PluginDiscoveryUnavailable("Plugin discovery is turned off on this installation.")
    return value


def is_usable_token(value: str) -> bool:
    """A Codex access token: ``at-`` then printable ASCII, nothing else (a JWT is not one)."""
    return TOKEN.fullmatch(value) is not None


# --- cursors: the upstream page token, sealed with its query -------------------------------------


def _seal(query: str, page_token: str) -> str:
    raw = json.dumps({"v": 1, "q": query, "t": page_token}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unseal(cursor: str, query: str) -> str:
    bad = InvalidRequest.at("/cursor", "INVALID_VALUE",
                            "The cursor is not one this search returned. Start again from the first page.")
    if len(cursor) > CURSOR_MAX:
        raise bad
    try:
        document = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        raise bad from None
    if (not isinstance(document, dict) or document.get("v") != 1 or document.get("q") != query
            or not isinstance(document.get("t"), str) or not document["t"]):
        raise bad
    return str(document["t"])


# --- identity, cached by the token's digest ------------------------------------------------------


@dataclass(frozen=True)
class _Identity:
    account_id: str
    fedramp: bool


_identities: dict[str, tuple[float, _Identity]] = {}
_identities_lock = threading.Lock()


def _digest(token: str, auth_base: str) -> str:
    return hashlib.sha256(f"{auth_base}\x00{token}".encode()).hexdigest()


def forget_identities() -> None:
    """Drop every cached identity (tests; a rotated token re-hydrates by itself)."""
    with _identities_lock:
        _identities.clear()


# --- one call: a client, one deadline ------------------------------------------------------------


class _Call:
    def __init__(self, client: httpx.Client, token: str, deadline: float) -> None:
        self.client = client
        self.token = token
        self.deadline = deadline

    def json(self, method: str, url: str, *, headers: dict[str, str], params: dict[str, str] | None = None,
             body: Any = None, missing_is_not_found: bool = False) -> Any:
        """The catalog's JSON answer, read as occ.upstream reads an outside service's."""
        try:
            return fetch_json(self.client, method, url, credential=self.token, deadline=self.deadline,
                              max_bytes=int(settings.OCC_PLUGIN_DISCOVERY_MAX_RESPONSE_BYTES),
                              headers=headers, params=params, body=body)
        except UpstreamFailure as failure:
            status = f" (HTTP {failure.status})" if failure.status else ""
            level = logging.WARNING if failure.kind is Failure.ECHOED else logging.INFO
            logger.log(level, "plugin discovery: the catalog %s%s", failure.kind.value, status)
            if failure.kind is Failure.NOT_FOUND and missing_is_not_found:
                raise PluginNotFound() from None
            raise _discovery_error(failure.kind) from None


def _discovery_error(kind: Failure) -> Exception:
    if kind is Failure.REJECTED:
        return PluginDiscoveryCredentialsRejected(REJECTED_MESSAGE)
    if kind is Failure.RATE_LIMITED:
        return PluginDiscoveryRateLimited(RATE_LIMITED_MESSAGE)
    if kind in (Failure.TOO_LARGE, Failure.ECHOED, Failure.NOT_JSON):
        return PluginDiscoveryInvalidResponse()
    return PluginDiscoveryUnavailable()  # unreachable, too slow, redirects (never followed), other statuses


@contextmanager
def _call(token: str) -> Iterator[_Call]:
    if not is_usable_token(token):
        raise PluginDiscoveryCredentialsRejected(
            "That is not a Codex service account token: it starts with at- and has no spaces.")
    timeout = float(settings.OCC_PLUGIN_DISCOVERY_TIMEOUT_SECONDS)
    headers = {"accept": "application/json", "accept-encoding": "identity", "user-agent": "occ-plugin-discovery"}
    with httpx.Client(follow_redirects=False, headers=headers, trust_env=False) as client:
        yield _Call(client, token, time.monotonic() + timeout)


def _identity(call: _Call) -> _Identity:
    auth_base = _base("OCC_CODEX_AUTH_BASE_URL")
    key = _digest(call.token, auth_base)
    now = time.monotonic()
    with _identities_lock:
        cached = _identities.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    document = call.json("GET", f"{auth_base}/api/accounts/v1/user-auth-credential/whoami",
                         headers={"authorization": f"Bearer {call.token}"})
    account = document.get("chatgpt_account_id") if isinstance(document, dict) else None
    fedramp = document.get("chatgpt_account_is_fedramp") if isinstance(document, dict) else None
    if not isinstance(account, str) or not ACCOUNT_ID.fullmatch(account) or not isinstance(fedramp, bool):
        raise PluginDiscoveryInvalidResponse()
    identity = _Identity(account_id=account, fedramp=fedramp)
    with _identities_lock:
        if len(_identities) >= IDENTITY_CACHE_MAX:
            _identities.clear()
        _identities[key] = (now + IDENTITY_TTL_SECONDS, identity)
    return identity


def _catalog_headers(call: _Call, identity: _Identity) -> dict[str, str]:
    headers = {"authorization": f"Bearer {call.token}", "chatgpt-account-id": identity.account_id,
               "oai-product-sku": "codex"}
    if identity.fedramp:
        headers["x-openai-fedramp"] = "true"
    return headers


# --- the two operations --------------------------------------------------------------------------


def list_plugins(token: str, *, query: str = "", cursor: str | None = None) -> CatalogPage:
    """One page of the workspace's GLOBAL catalog, or of a search for ``query``."""
    query = query.strip()
    if len(query) > QUERY_MAX:
        raise InvalidRequest.at("/q", "TOO_LONG", f"A search is at most {QUERY_MAX} characters.")
    page_token = _unseal(cursor, query) if cursor else None
    with _call(token) as call:
        identity = _identity(call)
        base = _base("OCC_CODEX_CHATGPT_BASE_URL")
        params = {"scope": "GLOBAL", "limit": str(PAGE_SIZE)}
        if page_token:
            params["pageToken"] = page_token
        if query:
            params["q"] = query
        path = "search" if query else "list"
        document = call.json("GET", f"{base}/ps/plugins/{path}", headers=_catalog_headers(call, identity),
                             params=params)
    if not isinstance(document, dict):
        raise PluginDiscoveryInvalidResponse()
    items = document.get("plugins")
    if not isinstance(items, list) or len(items) > MAX_ENTRIES:
        raise PluginDiscoveryInvalidResponse()
    pagination = document.get("pagination") or {}
    if not isinstance(pagination, dict):
        raise PluginDiscoveryInvalidResponse()
    upcoming = pagination.get("next_page_token")
    if upcoming is not None and (not isinstance(upcoming, str) or len(upcoming) > CURSOR_MAX // 2):
        raise PluginDiscoveryInvalidResponse()
    if upcoming is not None and upcoming == page_token:  # the same page again: a loop
        raise PluginDiscoveryInvalidResponse()
    entries = [entry for entry in (_entry(item) for item in items) if entry is not None]
    return CatalogPage(plugins=tuple(entries), next_cursor=_seal(query, upcoming) if upcoming else None, setup=SETUP)


def plugin_details(token: str, remote_id: str) -> CatalogEntry:
    """One plugin with its tools (the tools of each app it brings)."""
    if not REMOTE_ID.fullmatch(remote_id):
        raise InvalidRequest.at("/pluginId", "INVALID_FORMAT", "pluginId must be an entry's remoteId.")
    with _call(token) as call:
        identity = _identity(call)
        base = _base("OCC_CODEX_CHATGPT_BASE_URL")
        headers = _catalog_headers(call, identity)
        document = call.json("GET", f"{base}/ps/plugins/{quote(remote_id, safe='')}", headers=headers,
                             params={"includeDownloadUrls": "true"}, missing_is_not_found=True)
        entry = _entry(document) if isinstance(document, dict) else None
        if entry is None or entry.remote_id != remote_id:
            raise PluginDiscoveryInvalidResponse()
        release = _object(document.get("release"))
        app_ids = _app_ids(release)
        unsupported = bool(release.get("mcp_servers")) or bool(release.get("scheduled_tasks"))
        tools: list[PluginTool] = []
        if app_ids:
            apps = call.json("POST", f"{base}/ps/apps/batch", headers=headers,
                             body={"app_ids": app_ids, "include_tools": True})
            tools = _tools(apps, app_ids)
    if unsupported and entry.available:
        return replace(entry, tools=tuple(tools), available=False, unavailable_reason=UNSUPPORTED_COMPONENTS)
    return replace(entry, tools=tuple(tools))


# --- mapping an upstream entry -----------------------------------------------------------------


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    cleaned = "".join(ch for ch in value if ch >= " " or ch in "\n\t").strip()
    return cleaned[:TEXT_MAX] or None


def _https(value: Any) -> str | None:
    if not isinstance(value, str) or len(value) > 2048:
        return None
    parts = urlsplit(value)
    return value if parts.scheme == "https" and parts.hostname and not parts.username and not parts.password else None


def _app_ids(release: dict[str, Any]) -> list[str]:
    raw = release.get("app_ids")
    if not isinstance(raw, list):
        return []
    ids = [value for value in raw if isinstance(value, str) and APP_ID.fullmatch(value)]
    return list(dict.fromkeys(ids))[:MAX_APPS]


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _entry(item: Any) -> CatalogEntry | None:
    """Our entry for one upstream item, or None for one OCC could never select (no usable id)."""
    if not isinstance(item, dict):
        raise PluginDiscoveryInvalidResponse()
    slug, remote_id = item.get("name"), item.get("id")
    if not isinstance(slug, str) or not SLUG.fullmatch(slug) or not isinstance(remote_id, str) \
            or not REMOTE_ID.fullmatch(remote_id):
        return None
    release = _object(item.get("release"))
    interface = _object(release.get("interface"))
    available, reason, help_link = True, None, None
    status = item.get("status", "ENABLED")
    if status != "ENABLED" or item.get("installation_policy") == "NOT_AVAILABLE":
        available = False
        reason = UNAVAILABLE_REASONS.get(str(item.get("unavailable_reason")), UNAVAILABLE_OTHER)
        help_link = ADMIN_HELP
    elif release.get("requires_local_executor") or release.get("skills"):
        available, reason = False, NEEDS_LOCAL
    elif not _app_ids(release):
        available, reason = False, NO_APPS
    return CatalogEntry(
        id=f"{DRIVER_PREFIX}{slug}@{MARKETPLACE}", remote_id=remote_id,
        name=_text(release.get("display_name")) or slug,
        description=_text(release.get("description")) or _text(interface.get("short_description")),
        logo_url=_https(interface.get("logo_url")), website_url=_https(interface.get("website_url")),
        privacy_policy_url=_https(interface.get("privacy_policy_url")),
        terms_of_service_url=_https(interface.get("terms_of_service_url")),
        available=available, unavailable_reason=reason, unavailable_help=help_link,
    )


def _tools(document: Any, app_ids: list[str]) -> list[PluginTool]:
    apps = document.get("apps") if isinstance(document, dict) else None
    if not isinstance(apps, list):
        raise PluginDiscoveryInvalidResponse()
    wanted = set(app_ids)
    tools: list[PluginTool] = []
    seen: set[str] = set()
    for app in apps:
        if not isinstance(app, dict) or not isinstance(app.get("tools", []), list):
            raise PluginDiscoveryInvalidResponse()
        app_id = app.get("id")
        if app_id not in wanted:
            continue  # an app we did not ask for is not this plugin's
        app_on = app.get("status") in ("ENABLED", "ONLY_ME")
        for tool in app.get("tools", []):
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
                continue
            tool_id = f"{quote(str(app_id), safe='')}/{quote(name, safe='')}"
            if tool_id in seen:
                continue
            seen.add(tool_id)
            enabled = tool.get("is_enabled", True) is not False
            reason = None if app_on and enabled else (TOOL_APP_OFF if not app_on else TOOL_OFF)
            tools.append(PluginTool(
                id=tool_id, owner_id=str(app_id), name=_text(tool.get("title")) or name,
                description=_text(tool.get("description")), available=reason is None, unavailable_reason=reason,
                writes=tool.get("is_read_only") is not True, destructive=tool.get("is_destructive") is True))
            if len(tools) >= MAX_TOOLS:
                return tools
    return tools
