"""Why a control is disabled, in words (issue 26): "You can chat with this Agent but not deploy
it." A page asks ``occ.selectors.permissions`` what the caller may do (the engine that
authorizes each request) and shows every refused control disabled with one of these sentences;
the server still refuses the request itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

# Agent action (occ.selectors.permissions.AGENT_ACTIONS) -> the verbs of its controls.
AGENT_VERBS: dict[str, tuple[str, ...]] = {
    "deploy": ("deploy",),
    "stop_start": ("stop", "start"),
    "delete": ("delete",),
    "update": ("change",),
    "chat": ("chat with",),
}
CONFIGURATION_VERBS: dict[str, tuple[str, ...]] = {"update": ("change",), "delete": ("delete",)}


def join_or(words: Iterable[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    items = list(words)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _sentence(subject: str, can: str, verbs: Iterable[str]) -> str:
    return f"You can {can} {subject} but not {join_or(verbs)} it."


def agent_can(may: Mapping[str, bool]) -> str:
    """What the caller can do with the Agent at least, in words."""
    return "chat with" if may.get("chat") else "see"


def agent_refusals(may: Mapping[str, bool], names: Iterable[str]) -> dict[str, str]:
    """For each of ``names`` the caller may not do: why, as one sentence."""
    can = agent_can(may)
    return {name: _sentence("this Agent", can, AGENT_VERBS[name]) for name in names if not may[name]}


def agent_refusal(may: Mapping[str, bool], names: Iterable[str]) -> str:
    """One sentence for every refused control among ``names`` ("" when none is refused)."""
    refused = [verb for name in names if not may[name] for verb in AGENT_VERBS[name]]
    return _sentence("this Agent", agent_can(may), refused) if refused else ""


def deploy_references_refusal(refused: Sequence[str], secret_names: Mapping[str, str]) -> str:
    """Why someone who may deploy the Agent still cannot (``deploy_references_refused``): what it
    delivers that they may not read or use, by name where they may see the Secret ("" if none)."""
    if not refused:
        return ""
    what = ["read its Configuration" if ref == "configuration" else f"use the Secret {secret_names.get(ref, ref)}"
            for ref in refused]
    needs = what[0] if len(what) == 1 else f"{', '.join(what[:-1])} and {what[-1]}"
    return (f"You can deploy this Agent, but a deployment also needs you to {needs}. "
            "An administrator can give you that access.")


def diagnose_refusal(may: Mapping[str, bool]) -> str:
    """Run diagnostics asks the compute driver about the Agent: it needs ``operate`` on it, as
    Stop and Start do (``occ.selectors.deployments.deployment_diagnose``)."""
    return "" if may["stop_start"] else _sentence("this Agent", agent_can(may), ["run diagnostics on"])


def agent_share_refusal(may: Mapping[str, bool]) -> str:
    """Sharing an Agent needs ``administer`` on it."""
    return "" if may["administer"] else _sentence("this Agent", agent_can(may), ["share"])


def configuration_refusal(may: Mapping[str, bool], names: Iterable[str] = ("update", "delete")) -> str:
    refused = [verb for name in names if not may[name] for verb in CONFIGURATION_VERBS[name]]
    return _sentence("this Configuration", "read", refused) if refused else ""


SAVE_PRESET_REFUSED = ("You cannot save this Agent as a preset: that needs a Role that creates Presets here and "
                       "reads its Configuration.")
CREATE_AGENT_REFUSED = ("You can see this Namespace's Agents but not create one: that needs a Role such as "
                        "Developer here. An administrator can give you one.")
