"""The Slack setup of the Create Agent form as pure functions: reading the modal's fields,
checking them with the reference console's drawer messages, parsing exact Slack ids, naming
the token Secrets, and merging the settings into the native Configuration values.

Nothing here touches the database or the network; the views in ``console/views/slack.py``
call these and the services. Token values pass through ``check_token`` only: they are never
kept in a draft, a staged state or a message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from occ.commands.common import NAME_MAX_CODE_POINTS
from occ.drivers.channels.slack import APP_TOKEN_PREFIX, BOT_TOKEN_PREFIX
from occ.openclaw.slack import APP_ENV, BOT_ENV, SlackSettings
from occ.openclaw.slack import DM_POLICIES_WITH_PEOPLE as DM_POLICIES_WITH_PEOPLE  # the modal shows people for these
from occ.openclaw.slack import merge_slack_settings as merge_settings

BINDING_FIELD_PREFIX = "secret_binding__"  # the Create form's hidden Secret bindings: <prefix><ENV> = sec_id
BOT_BINDING_FIELD = BINDING_FIELD_PREFIX + BOT_ENV
APP_BINDING_FIELD = BINDING_FIELD_PREFIX + APP_ENV
STATE_FIELD = "slack_state"

ListKey = Literal["channels", "users", "dm_users"]
LIST_KEYS: tuple[ListKey, ...] = ("channels", "users", "dm_users")
LIST_FIELDS: dict[ListKey, str] = {"channels": "channels_json", "users": "users_json", "dm_users": "dm_users_json"}
PICKS_MAX = 100

CHANNEL_ACCESS = {"selected": "Specific people", "everyone": "Everyone in these channels"}
DM_POLICIES = {
    "pairing": "Pairing — approve new senders",
    "allowlist": "Allowlist — selected users only",
    "open": "Open — anyone",
    "disabled": "Disabled — no direct messages",
}
DEFAULT_DM_POLICY = "pairing"  # OpenClaw's own default; it needs no ids, so the defaults pass Apply

Role = Literal["bot", "app"]
TOKEN_PREFIXES: dict[Role, str] = {"bot": BOT_TOKEN_PREFIX, "app": APP_TOKEN_PREFIX}
TOKEN_SECRET_SUFFIX: dict[Role, str] = {"bot": "Slack bot token", "app": "Slack app token"}

# Messages of the reference console's drawer (slack.validate), kept word for word.
NO_CHANNEL = "Enter at least one Slack channel ID for these access settings."
NO_PEOPLE = "Choose specific people or select Everyone in these channels."
NO_DM_PEOPLE = "Enter specific allowed DM user IDs, or choose a different direct-message policy."
WILDCARD_CHANNEL = "Enter specific Slack channel IDs; wildcard channels require native Configuration JSON."
WILDCARD_USER = "Choose Everyone in these channels instead of entering a wildcard user ID."
BAD_IDS: dict[ListKey, str] = {
    "channels": "Enter exact Slack channel IDs or channel targets, or choose channels from the directory.",
    "users": "Enter exact Slack user IDs or user targets, or choose people from the directory.",
    "dm_users": "Enter exact Slack user IDs or user targets for direct messages, or choose people from the directory.",
}
TOO_MANY = "Choose at most {max} entries here."
TOKEN_REQUIRED: dict[Role, str] = {
    "bot": "Slack bot token is required: save a token or choose its Secret.",
    "app": "Slack app token is required: save a token or choose its Secret.",
}
SAME_SECRET = "Choose different Secrets for the bot token and the app token."
BAD_DM_POLICY = "Choose a direct-message policy."
BAD_CONFIGURATION = "Enter a valid Configuration JSON object before configuring channels."

_ID_BODY = r"[A-Z0-9]{2,30}"
_CHANNEL_FORMS = (
    re.compile(rf"^(?:channel:)?(?P<id>[CG]{_ID_BODY})$", re.IGNORECASE),
    re.compile(rf"^team:T{_ID_BODY}:channel:(?P<id>[CG]{_ID_BODY})$", re.IGNORECASE),
)
_USER_FORMS = (
    re.compile(rf"^(?:user:|slack:)?(?P<id>[UWB]{_ID_BODY})$", re.IGNORECASE),
    re.compile(rf"^<@(?P<id>[UWB]{_ID_BODY})(?:\|[^>]*)?>$", re.IGNORECASE),
    re.compile(rf"^team:T{_ID_BODY}:user:(?P<id>[UWB]{_ID_BODY})$", re.IGNORECASE),
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class SlackInputError(ValueError):
    """Input a person must change; the message is ours and names no value."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- ids ------------------------------------------------------------------------------------


def parse_channel_id(text: str) -> str:
    """The plain channel id (``C…``/``G…``) of an accepted form: the id, ``channel:<id>`` or
    ``team:T…:channel:<id>``."""
    return _parse_id(text, _CHANNEL_FORMS, wildcard=WILDCARD_CHANNEL, bad=BAD_IDS["channels"])


def parse_user_id(text: str, *, key: ListKey = "users") -> str:
    """The plain user id (``U…``/``W…``, ``B…`` for bots) of an accepted form: the id,
    ``user:``/``slack:`` prefixed, a mention ``<@U…>`` or ``team:T…:user:<id>``."""
    wildcard = NO_DM_PEOPLE if key == "dm_users" else WILDCARD_USER
    return _parse_id(text, _USER_FORMS, wildcard=wildcard, bad=BAD_IDS[key])


def _parse_id(text: str, forms: Iterable[re.Pattern[str]], *, wildcard: str, bad: str) -> str:
    candidate = text.strip()
    if candidate == "*":
        raise SlackInputError(wildcard)
    for form in forms:
        match = form.fullmatch(candidate)
        if match:
            return match.group("id").upper()
    raise SlackInputError(bad)


def parse_exact_ids(key: ListKey, text: str) -> list[str]:
    """Every id pasted into an exact-ID field (separated by spaces or commas), all valid or none."""
    parts = [part for part in re.split(r"[\s,]+", text.strip()) if part]
    if not parts:
        raise SlackInputError(BAD_IDS[key])
    return list(dict.fromkeys(parse_id(key, part) for part in parts))


def parse_id(key: ListKey, text: str) -> str:
    return parse_channel_id(text) if key == "channels" else parse_user_id(text, key=key)


# --- picks: the chosen channels and people ----------------------------------------------------


@dataclass(frozen=True)
class Pick:
    """One chosen channel or person: its id, and the names the directory gave (for the chip)."""

    id: str
    name: str = ""
    display: str = ""

    def as_json(self) -> dict[str, str]:
        data = {"id": self.id}
        if self.name and self.name != self.id:
            data["name"] = self.name
        if self.display:
            data["display"] = self.display
        return data


def channel_ref(pick: Pick) -> str:
    """How a channel is named on buttons: ``#general``, or its id when no name is known."""
    return f"#{pick.name}" if pick.name and pick.name != pick.id else pick.id


def person_ref(pick: Pick) -> str:
    return f"@{pick.name}" if pick.name and pick.name != pick.id else pick.id


def pick_label(key: ListKey, pick: Pick) -> str:
    """The chip text: ``#general``, ``Alice (@alice)``, ``@alice`` or the bare id."""
    if key == "channels":
        return channel_ref(pick)
    ref = person_ref(pick)
    return f"{pick.display} ({ref})" if pick.display and pick.display != pick.name else ref


def pick_ref(key: ListKey, pick: Pick) -> str:
    return channel_ref(pick) if key == "channels" else person_ref(pick)


def picks_json(picks: Iterable[Pick]) -> str:
    return json.dumps([pick.as_json() for pick in picks], ensure_ascii=False, separators=(",", ":"))


def _short_text(value: object) -> str:
    return _CONTROL.sub("", value)[:200] if isinstance(value, str) else ""


def parse_picks(key: ListKey, text: str | None) -> tuple[Pick, ...]:
    """The hidden list of a picker (JSON ``[{id, name?, display?}]``); ids checked again here
    because the browser could send anything."""
    if not text:
        return ()
    try:
        raw = json.loads(text)
    except ValueError:
        raise SlackInputError(BAD_IDS[key]) from None
    if not isinstance(raw, list) or not all(isinstance(item, Mapping) and isinstance(item.get("id"), str)
                                            for item in raw):
        raise SlackInputError(BAD_IDS[key])
    picks: dict[str, Pick] = {}
    for item in raw:
        pick_id = parse_id(key, item["id"])
        picks.setdefault(pick_id, Pick(pick_id, _short_text(item.get("name")), _short_text(item.get("display"))))
    if len(picks) > PICKS_MAX:
        raise SlackInputError(TOO_MANY.format(max=PICKS_MAX))
    return tuple(picks.values())


def add_picks(current: Iterable[Pick], new: Iterable[Pick]) -> tuple[Pick, ...]:
    """``current`` then the ``new`` ones not chosen yet; a new name fills in an unknown one."""
    picks = {pick.id: pick for pick in current}
    for pick in new:
        known = picks.get(pick.id)
        if known is None or (not known.name and pick.name):
            picks[pick.id] = pick
    if len(picks) > PICKS_MAX:
        raise SlackInputError(TOO_MANY.format(max=PICKS_MAX))
    return tuple(picks.values())


def remove_pick(current: Iterable[Pick], pick_id: str) -> tuple[Pick, ...]:
    return tuple(pick for pick in current if pick.id != pick_id)


# --- the draft: what the modal edits ----------------------------------------------------------


@dataclass(frozen=True)
class SlackDraft:
    bot_secret_id: str = ""
    app_secret_id: str = ""
    channels: tuple[Pick, ...] = ()
    channel_access: str = "selected"
    users: tuple[Pick, ...] = ()
    require_mention: bool = True
    dm_policy: str = DEFAULT_DM_POLICY
    dm_users: tuple[Pick, ...] = ()

    def picks(self, key: ListKey) -> tuple[Pick, ...]:
        return {"channels": self.channels, "users": self.users, "dm_users": self.dm_users}[key]

    def with_picks(self, key: ListKey, picks: tuple[Pick, ...]) -> SlackDraft:
        if key == "channels":
            return replace(self, channels=picks)
        if key == "users":
            return replace(self, users=picks)
        return replace(self, dm_users=picks)

    def with_secret(self, role: Role, secret_id: str) -> SlackDraft:
        return replace(self, bot_secret_id=secret_id) if role == "bot" else replace(self, app_secret_id=secret_id)

    @property
    def everyone(self) -> bool:
        return self.channel_access == "everyone"

    @property
    def channel_refs(self) -> list[str]:
        return [channel_ref(pick) for pick in self.channels]

    def state_json(self) -> str:
        """The staged selections as the Create form keeps them (ids, names and options; the
        Secret ids travel in their own binding fields)."""
        return json.dumps({
            "channels": [p.as_json() for p in self.channels], "channelAccess": self.channel_access,
            "users": [p.as_json() for p in self.users], "requireMention": self.require_mention,
            "dmPolicy": self.dm_policy, "dmUsers": [p.as_json() for p in self.dm_users],
        }, ensure_ascii=False, separators=(",", ":"))


@dataclass
class ReadDraft:
    draft: SlackDraft
    errors: dict[str, list[str]] = field(default_factory=dict)


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value.strip() if isinstance(value, str) else ""


def read_modal(data: Mapping[str, Any]) -> ReadDraft:
    """The modal's fields (as posted) as a draft, with the problems of malformed lists."""
    errors: dict[str, list[str]] = {}
    lists: dict[ListKey, tuple[Pick, ...]] = {}
    for key in LIST_KEYS:
        try:
            lists[key] = parse_picks(key, data.get(LIST_FIELDS[key]))
        except SlackInputError as exc:
            errors.setdefault(key, []).append(exc.message)
            lists[key] = ()
    access = _text(data, "channel_access")
    draft = SlackDraft(
        bot_secret_id=_text(data, "bot_secret_id"),
        app_secret_id=_text(data, "app_secret_id"),
        channel_access=access if access in CHANNEL_ACCESS else "selected",
        require_mention=bool(data.get("require_mention")),
        dm_policy=_text(data, "dm_policy"),
        channels=lists["channels"], users=lists["users"], dm_users=lists["dm_users"],
    )
    return ReadDraft(draft, errors)


def staged_draft(data: Mapping[str, Any]) -> SlackDraft | None:
    """The Slack settings the Create form staged (its ``slack_state`` and binding fields), or
    None when Slack is not configured there. A state that does not parse counts as none."""
    state_text = data.get(STATE_FIELD)
    if not isinstance(state_text, str) or not state_text:
        return None
    try:
        state = json.loads(state_text)
        if not isinstance(state, Mapping):
            return None
        channels = parse_picks("channels", json.dumps(state.get("channels", [])))
        users = parse_picks("users", json.dumps(state.get("users", [])))
        dm_users = parse_picks("dm_users", json.dumps(state.get("dmUsers", [])))
    except (ValueError, TypeError):
        return None
    access = state.get("channelAccess")
    policy = state.get("dmPolicy")
    return SlackDraft(
        bot_secret_id=_text(data, BOT_BINDING_FIELD),
        app_secret_id=_text(data, APP_BINDING_FIELD),
        channel_access=access if access in CHANNEL_ACCESS else "selected",
        require_mention=state.get("requireMention") is not False,
        dm_policy=policy if policy in DM_POLICIES else DEFAULT_DM_POLICY,
        channels=channels, users=users, dm_users=dm_users,
    )


def check_draft(draft: SlackDraft) -> dict[str, list[str]]:
    """The drawer's checks before Apply: field name -> our messages (empty when fine)."""
    errors: dict[str, list[str]] = {}

    def add(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    if not draft.bot_secret_id:
        add("bot_secret_id", TOKEN_REQUIRED["bot"])
    if not draft.app_secret_id:
        add("app_secret_id", TOKEN_REQUIRED["app"])
    if draft.bot_secret_id and draft.bot_secret_id == draft.app_secret_id:
        add("app_secret_id", SAME_SECRET)
    if not draft.channels:
        add("channels", NO_CHANNEL)
    elif not draft.everyone and not draft.users:
        add("users", NO_PEOPLE)
    if draft.dm_policy not in DM_POLICIES:
        add("dm_policy", BAD_DM_POLICY)
    elif draft.dm_policy == "allowlist" and not draft.dm_users:
        add("dm_users", NO_DM_PEOPLE)
    return errors


# --- tokens and their Secrets -----------------------------------------------------------------


def check_token(role: Role, value: str) -> str:
    """The token to store (surrounding whitespace dropped), or SlackInputError; the message
    never contains the value."""
    token = value.strip()
    label = "bot token" if role == "bot" else "app-level token"
    if not token:
        raise SlackInputError(f"Enter the Slack {label} before saving it.")
    if not token.startswith(TOKEN_PREFIXES[role]):
        hint = "Bot User OAuth Token" if role == "bot" else "App-Level Token (with connections:write)"
        raise SlackInputError(f"A Slack {label} starts with {TOKEN_PREFIXES[role]}. "
                              f"Copy the {hint} from the Slack app's settings. Nothing was saved.")
    return token


def token_secret_names(role: Role, agent_name: str) -> Iterable[str]:
    """Candidate Secret names, best first: ``<Agent> Slack bot token``, then `` (2)``, `` (3)``…
    (``Slack bot token`` when the Agent has no name yet)."""
    suffix = TOKEN_SECRET_SUFFIX[role]
    room = NAME_MAX_CODE_POINTS - len(suffix) - len(" (999)") - 1
    agent = _CONTROL.sub("", agent_name).strip()[:room].strip()
    base = f"{agent} {suffix}" if agent else suffix
    yield base
    for number in range(2, 1000):
        yield f"{base} ({number})"


def free_secret_name(role: Role, agent_name: str, taken: Iterable[str]) -> str:
    names = set(taken)
    return next(name for name in token_secret_names(role, agent_name) if name not in names)


# --- the native Configuration -----------------------------------------------------------------


def merge_slack_settings(values: Mapping[str, Any], draft: SlackDraft) -> dict[str, Any]:
    """``values`` with the draft's Slack settings merged in (``occ.openclaw.slack``)."""
    return merge_settings(values, SlackSettings(
        channel_ids=tuple(pick.id for pick in draft.channels), require_mention=draft.require_mention,
        channel_user_ids=None if draft.everyone else tuple(person.id for person in draft.users),
        dm_policy=draft.dm_policy, dm_user_ids=tuple(person.id for person in draft.dm_users)))
