"""The Installation's default Presets, seeded into every Namespace (at bootstrap and when a
Namespace is created). A seeded copy whose name and template still equal the bundled default
is "untouched": Namespace deletion removes it rather than refusing.

Only "Standard OpenClaw" ships today. The Codex defaults (``default-codex``, "Standard Codex")
need the dedicated execution mode and ``codex_pat`` harness auth, which the Agent API refuses
until the dedicated Codex topology lands; seeding them now would offer launches that cannot
succeed. They join this map with that issue.
"""

from __future__ import annotations

from typing import Any

from occ.openclaw.document import agent_template

STANDARD_OPENCLAW = "Standard OpenClaw"


def _standard_openclaw() -> dict[str, Any]:
    return {
        "variables": {
            "name": {"type": "string", "description": "Agent name"},
            "model": {"type": "string", "description": "OpenAI model", "default": "gpt-6-astra"},
            "apiKey": {"type": "password", "description": "OpenAI API key"},
        },
        "agent": {
            "name": "{{ vars.name }}",
            "executionMode": "embedded",
            "harnessAuth": {"method": "api_key", "secret": "{{ vars.apiKey }}"},
            "plugins": {},
        },
        "configuration": {
            "values": agent_template(provider="openai", model="{{ vars.model }}"),
            "secretBindings": {},
        },
    }


def default_presets() -> dict[str, dict[str, Any]]:
    """Name -> template (stored JSON), a fresh copy each call."""
    return {STANDARD_OPENCLAW: _standard_openclaw()}
