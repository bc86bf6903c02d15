"""The Slack ChannelDriver: token checks before provisioning and the directory lookup behind
the console's people and channel pickers.

It speaks the Slack Web API (``OCC_SLACK_API_BASE_URL``) with httpx: read-only methods only
(``auth.test``, ``users.list``/``info``, ``conversations.list``/``info``), so it never sends a
message and never opens Socket Mode. Every conversation has an overall budget (8 s), a 2 MB
limit on each response body and refuses redirects; the environment's proxy variables are
ignored, so a token goes only to the configured address. Errors carry our words, never
Slack's text or a token.

One module of ~420 lines: one driver over one read-only API, read top to bottom (its limits and
errors, the session every call goes through, the token checks, the directory lookup).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpx
from django.conf import settings

from occ.drivers.channels.base import (
    BINDINGS_POINTER,
    VALUES_POINTER,
    ChannelCredentialBindingRequired,
    ChannelCredentialError,
    ChannelCredentialRejected,
    ChannelCredentialRoleMismatch,
    ChannelCredentialUnavailable,
    ChannelDirectoryCredentialsRejected,
    ChannelDirectoryError,
    ChannelDirectoryInvalidResponse,
    ChannelDirectoryMissingScope,
    ChannelDirectoryRateLimited,
    ChannelDirectoryUnavailable,
    ChannelDriver,
    DirectoryCandidate,
    DirectoryKind,
    DirectoryPage,
    SecretReader,
)
from occ.errors import DetailCode
from occ.openclaw.slack import APP_ENV, BOT_ENV
from occ.openclaw.validation import pointer, reserved_env_name_problem

BUDGET_SECONDS = 8.0
MAX_BODY_BYTES = 2 * 1024 * 1024
PAGE_LIMIT = 100          # candidates per lookup, and Slack's page size
QUERY_PAGES = 3           # provider pages a filtered search scans
IDS_BATCH = 5             # info calls in flight at once when resolving exact ids

ENV_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,252}$")
BOT_ID = re.compile(r"^B[A-Z0-9]+$")
TEAM_ID = re.compile(r"^T[A-Z0-9]+$")
USER_ID = re.compile(r"^[UW][A-Z0-9]+$")
CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]+$")

APP_TOKEN_PREFIX = "xapp-"
BOT_TOKEN_PREFIX = "xoxb-"


class Failure(StrEnum):
    REJECTED = "rejected"
    MISSING_SCOPE = "missing_scope"
    RATE_LIMITED = "rate_limited"
    INVALID_RESPONSE = "invalid_response"
    UNAVAILABLE = "unavailable"
    NOT_FOUND = "not_found"  # an exact id the bot cannot see: omitted, never an error


_SLACK_ERRORS: dict[str, Failure] = {
    **dict.fromkeys(("invalid_auth", "not_authed", "account_inactive", "token_expired", "token_revoked"),
                    Failure.REJECTED),
    **dict.fromkeys(("missing_scope", "not_allowed_token_type", "invalid_types"), Failure.MISSING_SCOPE),
    "ratelimited": Failure.RATE_LIMITED,
    **dict.fromkeys(("user_not_found", "user_not_visible", "channel_not_found", "no_permission", "access_denied"),
                    Failure.NOT_FOUND),
}

_DIRECTORY_ERRORS: dict[Failure, type[ChannelDirectoryError]] = {
    Failure.REJECTED: ChannelDirectoryCredentialsRejected,
    Failure.MISSING_SCOPE: ChannelDirectoryMissingScope,
    Failure.RATE_LIMITED: ChannelDirectoryRateLimited,
    Failure.INVALID_RESPONSE: ChannelDirectoryInvalidResponse,
}


class SlackFailure(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.value)
        self.failure = failure


class _Session:
    """Calls to the Slack Web API with one token, all before one deadline."""

    def __init__(self, *, base_url: str, token: str, deadline: float) -> None:
        self._deadline = deadline
        self._client = httpx.Client(base_url=base_url, follow_redirects=False, trust_env=False,
                                    headers={"authorization": f"Bearer {token}"})

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def _remaining(self) -> float:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise SlackFailure(Failure.UNAVAILABLE)
        return remaining

    def call(self, method: str, *, http_method: str = "GET", params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The payload of an ``ok: true`` answer; otherwise raise SlackFailure."""
        try:
            with self._client.stream(http_method, method, params=params,
                                     timeout=httpx.Timeout(self._remaining())) as response:
                if response.status_code == 429:
                    raise SlackFailure(Failure.RATE_LIMITED)
                if response.status_code != 200:
                    raise SlackFailure(Failure.UNAVAILABLE)
                body = self._read(response)
        except httpx.HTTPError:
            raise SlackFailure(Failure.UNAVAILABLE) from None
        try:
            payload = json.loads(body)
        except ValueError:
            raise SlackFailure(Failure.INVALID_RESPONSE) from None
        if not isinstance(payload, dict) or not isinstance(payload.get("ok"), bool):
            raise SlackFailure(Failure.INVALID_RESPONSE)
        if not payload["ok"]:
            error = payload.get("error")
            raise SlackFailure(_SLACK_ERRORS.get(error, Failure.UNAVAILABLE) if isinstance(error, str)
                               else Failure.INVALID_RESPONSE)
        return payload

    def _read(self, response: httpx.Response) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            raise SlackFailure(Failure.INVALID_RESPONSE)
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise SlackFailure(Failure.INVALID_RESPONSE)
            self._remaining()  # the budget also bounds a server that answers slowly
        return bytes(body)


@dataclass(frozen=True)
class _Identity:
    bot_id: str | None
    team_id: str | None
    team_name: str | None


def _auth_test(session: _Session) -> _Identity:
    payload = session.call("auth.test", http_method="POST")

    def matching(key: str, pattern: re.Pattern[str]) -> str | None:
        value = payload.get(key)
        return value if isinstance(value, str) and pattern.fullmatch(value) else None

    team = payload.get("team")
    return _Identity(bot_id=matching("bot_id", BOT_ID), team_id=matching("team_id", TEAM_ID),
                     team_name=team if isinstance(team, str) and team else None)


# --- credential checks (spec §3.3) ----------------------------------------------------------


@dataclass(frozen=True)
class _TokenUse:
    """One token an enabled account needs: its role, its env reference and where it sits."""

    role: str           # "botToken" | "appToken"
    ref: object
    path: str


ROLE_LABELS = {"botToken": "bot token", "appToken": "app-level token"}
ROLE_PREFIXES = {"botToken": BOT_TOKEN_PREFIX, "appToken": APP_TOKEN_PREFIX}


def _token_uses(slack: Mapping[str, Any]) -> Iterator[_TokenUse]:
    """Every token of every enabled account: the default account, or each ``accounts.<id>``
    merged over the top-level settings (disabled accounts skipped)."""
    base = VALUES_POINTER + pointer("channels", "slack")
    accounts = slack.get("accounts")
    top = {key: value for key, value in slack.items() if key != "accounts"}
    if not isinstance(accounts, Mapping) or not accounts:
        targets: list[tuple[Mapping[str, Any], str]] = [({}, base)]
    else:
        targets = [(own if isinstance(own, Mapping) else {}, base + pointer("accounts", account_id))
                   for account_id, own in accounts.items()]
    for own, own_path in targets:
        merged = {**top, **own}
        if merged.get("enabled") is False:
            continue
        for role in ("appToken", "botToken"):
            if role == "appToken" and merged.get("mode") == "http":
                continue  # HTTP Events API mode has no app-level token
            path = (own_path if role in own or role not in top else base) + pointer(role)
            yield _TokenUse(role=role, ref=merged.get(role), path=path)


def _env_id(ref: object) -> str | None:
    """The environment variable of a ``{source: "env", provider?: "default", id}`` reference."""
    if not isinstance(ref, Mapping) or set(ref) - {"source", "provider", "id"}:
        return None
    if ref.get("source") != "env" or ref.get("provider", "default") != "default":
        return None
    env_id = ref.get("id")
    if not isinstance(env_id, str) or not ENV_ID.fullmatch(env_id) or reserved_env_name_problem(env_id):
        return None
    return env_id


def _bound_env_id(use: _TokenUse, secret_bindings: Mapping[str, Any]) -> str:
    label = ROLE_LABELS[use.role]
    env_id = _env_id(use.ref)
    if env_id is None:
        raise ChannelCredentialBindingRequired.at(
            use.path,
            f"The Slack {label} must be an environment reference such as "
            f'{{"source": "env", "provider": "default", "id": "SLACK_BOT_TOKEN"}}, never a literal value, '
            f"and the variable must not be reserved.",
            detail_code=DetailCode.REQUIRED if use.ref is None else DetailCode.INVALID_VALUE)
    if env_id not in secret_bindings:
        raise ChannelCredentialBindingRequired.at(
            use.path, f"The Slack {label} reads {env_id}: add a Secret binding for {env_id} to secretBindings.")
    return env_id


def _bound_only_uses(secret_bindings: Mapping[str, Any]) -> Iterator[tuple[_TokenUse, str]]:
    """The Slack tokens bound by their conventional variables in a request whose document does
    not enable Slack: each is still checked, at its binding."""
    for env_id, role in ((APP_ENV, "appToken"), (BOT_ENV, "botToken")):
        if env_id in secret_bindings:
            yield _TokenUse(role=role, ref=None, path=BINDINGS_POINTER + pointer(env_id)), env_id


class SlackChannelDriver(ChannelDriver):
    channel = "slack"
    binding_envs = (BOT_ENV, APP_ENV)
    driver_id = "slack-channel"
    implementation = "occ/slack-channel"

    def __init__(self, *, base_url: str | None = None, budget_seconds: float = BUDGET_SECONDS) -> None:
        self._base_url = base_url
        self.budget_seconds = budget_seconds

    @property
    def base_url(self) -> str:
        return self._base_url or settings.OCC_SLACK_API_BASE_URL

    def _session(self, token: str, deadline: float) -> _Session:
        return _Session(base_url=self.base_url, token=token, deadline=deadline)

    # --- credentials ---

    def check_credentials(self, *, values: Mapping[str, Any], secret_bindings: Mapping[str, Any],
                          read_secret: SecretReader) -> None:
        if not self.requested(values, secret_bindings):
            return
        if self.configured(values):
            uses = list(_token_uses(values["channels"][self.channel]))
            bound = [(use, _bound_env_id(use, secret_bindings)) for use in uses]  # no Secret read before all bind
        else:
            bound = list(_bound_only_uses(secret_bindings))
        bot_tokens: dict[str, tuple[str, str]] = {}  # env id -> (token, path), each checked once
        for use, env_id in bound:
            token = read_secret(env_id, use.path)
            if not token.startswith(ROLE_PREFIXES[use.role]):
                raise ChannelCredentialRoleMismatch.at(
                    use.path, f"The Secret bound to {env_id} is not a Slack {ROLE_LABELS[use.role]} "
                              f"(it must start with {ROLE_PREFIXES[use.role]}).")
            if use.role == "botToken":
                bot_tokens.setdefault(env_id, (token, use.path))
        deadline = time.monotonic() + self.budget_seconds
        for env_id, (token, path) in bot_tokens.items():
            self._check_bot_token(token, env_id=env_id, path=path, deadline=deadline)

    def _check_bot_token(self, token: str, *, env_id: str, path: str, deadline: float) -> None:
        rejected = (f"Slack did not accept the token bound to {env_id} as the bot token of a workspace. "
                    "Check the Secret's value and that the app is installed.")
        try:
            with self._session(token, deadline) as session:
                identity = _auth_test(session)
        except SlackFailure as exc:
            error: type[ChannelCredentialError] = (
                ChannelCredentialRejected if exc.failure in (Failure.REJECTED, Failure.MISSING_SCOPE)
                else ChannelCredentialUnavailable)
            raise error.at(path, rejected if error is ChannelCredentialRejected else
                           f"OCC could not check the token bound to {env_id} with Slack. Try again shortly.") from None
        if identity.bot_id is None:
            raise ChannelCredentialRejected.at(path, rejected)
        if identity.team_id is None:
            raise ChannelCredentialUnavailable.at(
                path, f"Slack did not say which workspace the token bound to {env_id} belongs to. Try again shortly.")

    # --- directory (spec §3.2) ---

    def lookup_directory(self, *, token: str, kind: DirectoryKind, query: str | None = None,
                         cursor: str | None = None, ids: Sequence[str] | None = None) -> DirectoryPage:
        deadline = time.monotonic() + self.budget_seconds
        try:
            with self._session(token, deadline) as session:
                identity = _auth_test(session)
                if identity.bot_id is None:
                    raise SlackFailure(Failure.REJECTED)
                if identity.team_id is None:
                    raise SlackFailure(Failure.INVALID_RESPONSE)
                if ids is not None:
                    candidates = _resolve_ids(session, kind, ids)
                    return DirectoryPage(identity.team_id, identity.team_name, candidates, None, True)
                candidates, next_cursor = _search(session, kind, team_id=identity.team_id, query=query,
                                                  cursor=cursor)
                return DirectoryPage(identity.team_id, identity.team_name, candidates, next_cursor,
                                     complete=next_cursor is None)
        except SlackFailure as exc:
            raise _DIRECTORY_ERRORS.get(exc.failure, ChannelDirectoryUnavailable)() from None


# --- directory helpers ----------------------------------------------------------------------


def _user_candidate(entry: Mapping[str, Any]) -> tuple[DirectoryCandidate, list[str]] | None:
    """The candidate and the texts a query may match, or None for a skipped entry."""
    user_id = entry.get("id")
    if not isinstance(user_id, str) or not USER_ID.fullmatch(user_id) or entry.get("deleted") is True:
        return None
    profile = entry.get("profile")
    if not isinstance(profile, Mapping):
        profile = {}
    texts = [_text(entry.get("name")), _text(profile.get("display_name")), _text(profile.get("real_name")),
             _text(entry.get("real_name"))]
    name = texts[0] or user_id
    display = texts[1] or texts[2] or texts[3]
    return DirectoryCandidate(user_id, name, display if display and display != name else None), [user_id, *texts]


def _channel_candidate(entry: Mapping[str, Any]) -> tuple[DirectoryCandidate, list[str]] | None:
    channel_id = entry.get("id")
    if not isinstance(channel_id, str) or not CHANNEL_ID.fullmatch(channel_id) or entry.get("is_archived") is True:
        return None
    name = _text(entry.get("name")) or channel_id
    return DirectoryCandidate(channel_id, name), [channel_id, name]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _entries(payload: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    entries = payload.get(key)
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise SlackFailure(Failure.INVALID_RESPONSE)
    return entries


def _next_cursor(payload: Mapping[str, Any]) -> str | None:
    metadata = payload.get("response_metadata", {})
    if not isinstance(metadata, Mapping):
        raise SlackFailure(Failure.INVALID_RESPONSE)
    cursor = metadata.get("next_cursor", "")
    if not isinstance(cursor, str):
        raise SlackFailure(Failure.INVALID_RESPONSE)
    return cursor or None


def _needle(query: str | None) -> str:
    return (query or "").strip().lstrip("@#").strip().casefold()


def _search(session: _Session, kind: DirectoryKind, *, team_id: str, query: str | None,
            cursor: str | None) -> tuple[list[DirectoryCandidate], str | None]:
    """One provider page, or with a query up to QUERY_PAGES pages filtered here."""
    method, key, candidate = (("users.list", "members", _user_candidate) if kind == "users"
                              else ("conversations.list", "channels", _channel_candidate))
    needle = _needle(query)
    found: list[DirectoryCandidate] = []
    next_cursor = cursor or None
    for _ in range(QUERY_PAGES if needle else 1):
        params: dict[str, Any] = {"limit": PAGE_LIMIT - len(found), "team_id": team_id}
        if kind == "channels":
            params.update(types="public_channel,private_channel", exclude_archived="true")
        if next_cursor:
            params["cursor"] = next_cursor
        payload = session.call(method, params=params)
        for entry in _entries(payload, key):
            made = candidate(entry)
            if made is not None and (not needle or any(needle in text.casefold() for text in made[1])):
                found.append(made[0])
        next_cursor = _next_cursor(payload)
        if next_cursor is None or len(found) >= PAGE_LIMIT:
            break
    return found[:PAGE_LIMIT], next_cursor


def _resolve_ids(session: _Session, kind: DirectoryKind, ids: Sequence[str]) -> list[DirectoryCandidate]:
    """Labels for exact ids, in their order; ids the bot cannot see (or malformed) are omitted."""
    pattern, method, param, key, candidate = (
        (USER_ID, "users.info", "user", "user", _user_candidate) if kind == "users"
        else (CHANNEL_ID, "conversations.info", "channel", "channel", _channel_candidate))
    wanted = list(dict.fromkeys(i for i in ids if pattern.fullmatch(i)))

    def info(entry_id: str) -> DirectoryCandidate | None:
        try:
            payload = session.call(method, params={param: entry_id})
        except SlackFailure as exc:
            if exc.failure is Failure.NOT_FOUND:
                return None
            raise
        entry = payload.get(key)
        if not isinstance(entry, Mapping):
            raise SlackFailure(Failure.INVALID_RESPONSE)
        made = candidate(entry)
        return made[0] if made is not None and made[0].id == entry_id else None

    resolved: list[DirectoryCandidate] = []
    with ThreadPoolExecutor(max_workers=IDS_BATCH, thread_name_prefix="slack-ids") as pool:
        for start in range(0, len(wanted), IDS_BATCH):
            resolved.extend(c for c in pool.map(info, wanted[start:start + IDS_BATCH]) if c is not None)
    return resolved
