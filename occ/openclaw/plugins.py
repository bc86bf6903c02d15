"""Writing plugin selections into a document: ``plugins.entries`` and the tool policy.

The input is already native (``PluginPolicy``: a plugin id, whether it runs, the tool ids to
grant and to deny), so this module knows the runtime's rules and nothing of OCC's selections:

- ``plugins.entries.<id>.enabled`` follows the selection; the entry's other keys stay. An
  operator's own ``enabled: false`` in the document, or the plugin in ``plugins.deny``, wins:
  the plugin stays off and gets no grants.
- With a non-empty ``plugins.allow``, an enabled plugin is added to it (otherwise the
  runtime would not load it).
- Grants go into ``tools.allow`` when the document has a non-empty one, otherwise into
  ``tools.alsoAllow`` (the runtime refuses both in one scope); a grant that an operator deny
  already matches is left out. Denies are appended to ``tools.deny``. ``tools.profile`` and
  every existing entry stay as they are.

The result passes the same runtime-schema validation as the document it started from.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PluginPolicy:
    native_id: str
    enabled: bool
    grants: tuple[str, ...] = ()
    denies: tuple[str, ...] = ()


def _object(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _pattern(entry: str) -> re.Pattern[str]:
    """A policy entry as the runtime reads it: case-insensitive, ``*`` a wildcard."""
    return re.compile("^" + ".*".join(re.escape(part) for part in entry.casefold().split("*")) + "$")


def denied_by(denies: Iterable[str], tool: str, native_id: str) -> bool:
    """Whether an operator deny covers ``tool`` of plugin ``native_id`` (the tool's own id, a
    wildcard, the plugin's id, or ``group:plugins``)."""
    for entry in denies:
        lowered = entry.casefold()
        if lowered in ("group:plugins", native_id.casefold()) or _pattern(entry).match(tool.casefold()):
            return True
    return False


def apply_plugin_policies(document: Mapping[str, Any], policies: Iterable[PluginPolicy]) -> dict[str, Any]:
    config = copy.deepcopy(dict(document))
    policies = list(policies)
    if not policies:
        return config
    plugins = _object(config, "plugins")
    entries = _object(plugins, "entries")
    plugin_denies = {item.casefold() for item in _strings(plugins.get("deny"))}
    tools = _object(config, "tools")
    operator_denies = _strings(tools.get("deny"))
    target = "allow" if _strings(tools.get("allow")) else "alsoAllow"
    grants = _strings(tools.get(target))
    denies = list(operator_denies)
    for policy in policies:
        entry = entries.get(policy.native_id)
        entry = entries[policy.native_id] = dict(entry) if isinstance(entry, dict) else {}
        operator_off = entry.get("enabled") is False or policy.native_id.casefold() in plugin_denies
        enabled = policy.enabled and not operator_off
        entry["enabled"] = enabled
        if not enabled:
            continue
        allow_list = _strings(plugins.get("allow"))
        if allow_list and policy.native_id not in allow_list:
            plugins["allow"] = [*allow_list, policy.native_id]
        for tool in policy.grants:
            if tool not in grants and not denied_by(operator_denies, tool, policy.native_id):
                grants.append(tool)
        for tool in policy.denies:
            if tool not in denies:
                denies.append(tool)
    if grants:
        tools[target] = grants
    if denies:
        tools["deny"] = denies
    if not tools:
        del config["tools"]
    return config
