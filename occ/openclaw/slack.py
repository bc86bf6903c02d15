"""Writing the Slack channel into a document (``channels.slack`` and the Slack plugin).

Socket Mode with the tokens as env references (their Secrets are bound to ``SLACK_BOT_TOKEN``
and ``SLACK_APP_TOKEN``), an allowlist of exactly the chosen channels, each mention-gated as
chosen and limited to the chosen people (no ``users`` key: everyone in the channel), and the
DM policy with its ``allowFrom``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from occ.openclaw.render import env_secret_ref

BOT_ENV = "SLACK_BOT_TOKEN"
APP_ENV = "SLACK_APP_TOKEN"
DM_POLICIES_WITH_PEOPLE = ("allowlist", "pairing")


@dataclass(frozen=True)
class SlackSettings:
    channel_ids: tuple[str, ...]
    require_mention: bool
    # Who may talk to the Agent in those channels; None: everyone in them.
    channel_user_ids: tuple[str, ...] | None
    dm_policy: str
    dm_user_ids: tuple[str, ...] = ()


def _object(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def merge_slack_settings(values: Mapping[str, Any], settings: SlackSettings) -> dict[str, Any]:
    """``values`` with ``settings`` written into ``channels.slack`` and the Slack plugin enabled.
    Keys the settings do not cover are kept, also inside a channel entry that stays selected."""
    merged = copy.deepcopy(dict(values))
    channels_root = _object(merged.get("channels"))
    slack = _object(channels_root.get("slack"))
    previous_channels = _object(slack.get("channels"))
    slack.update(enabled=True, mode="socket", botToken=env_secret_ref(BOT_ENV), appToken=env_secret_ref(APP_ENV),
                 groupPolicy="allowlist")
    entries: dict[str, Any] = {}
    for channel_id in settings.channel_ids:
        entry = _object(previous_channels.get(channel_id))
        entry.update(enabled=True, requireMention=settings.require_mention)
        if settings.channel_user_ids is None:
            entry.pop("users", None)
        else:
            entry["users"] = list(settings.channel_user_ids)
        entries[channel_id] = entry
    slack["channels"] = entries
    slack["dmPolicy"] = settings.dm_policy
    if settings.dm_policy == "open":
        slack["allowFrom"] = ["*"]  # the runtime requires the wildcard for an open policy
    elif settings.dm_policy in DM_POLICIES_WITH_PEOPLE:
        if settings.dm_user_ids:
            slack["allowFrom"] = list(settings.dm_user_ids)
        else:
            slack.pop("allowFrom", None)
    channels_root["slack"] = slack
    merged["channels"] = channels_root
    plugins = _object(merged.get("plugins"))
    plugin_entries = _object(plugins.get("entries"))
    plugin_entries["slack"] = {**_object(plugin_entries.get("slack")), "enabled": True}
    plugins["entries"] = plugin_entries
    allow = plugins.get("allow")
    if isinstance(allow, list) and "slack" not in allow:
        plugins["allow"] = [*allow, "slack"]  # Slack is a native plugin: an allowlist must name it
    merged["plugins"] = plugins
    return merged


def slack_enabled(values: Mapping[str, Any]) -> bool:
    """Whether ``values`` enable the Slack channel (``channels.slack``, not ``enabled: false``)."""
    channels = values.get("channels")
    slack = channels.get("slack") if isinstance(channels, Mapping) else None
    return isinstance(slack, Mapping) and slack.get("enabled") is not False


def without_slack_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without what ``merge_slack_settings`` writes: ``channels.slack`` and the
    Slack plugin's entry (an emptied ``channels`` or ``plugins.entries`` goes too). Other
    channels and plugins stay."""
    stripped = copy.deepcopy(dict(values))
    channels = stripped.get("channels")
    if isinstance(channels, dict):
        channels.pop("slack", None)
        if not channels:
            stripped.pop("channels")
    plugins = stripped.get("plugins")
    entries = plugins.get("entries") if isinstance(plugins, dict) else None
    if isinstance(plugins, dict) and isinstance(entries, dict):
        entries.pop("slack", None)
        if not entries:
            plugins.pop("entries")
        if not plugins:
            stripped.pop("plugins")
    return stripped
