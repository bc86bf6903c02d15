"""The Installation's default Presets, seeded into every Namespace (at bootstrap and when a
Namespace is created). A seeded copy whose name and template still equal the bundled default
is "untouched": Namespace deletion removes it rather than refusing.

"Standard OpenClaw" is seeded. The Codex defaults (``default-codex``, "Standard Codex") are
bundled here, valid templates whose native values pass OCC's Configuration rules (the gateway's
mode, bind and password are OCC's, so the upstream template's are left out), but they launch
dedicated Codex Agents, which the Agent API refuses until the dedicated Codex harness exists:
seeding them now would offer launches that cannot succeed. ``DEDICATED_CODEX_HARNESS`` turns
their seeding on with that harness; the deletion exception already knows them.
"""

from __future__ import annotations

from typing import Any

from occ.openclaw.document import agent_template

STANDARD_OPENCLAW = "Standard OpenClaw"
DEFAULT_CODEX = "default-codex"
STANDARD_CODEX = "Standard Codex"
# Whether this installation runs the dedicated Codex harness (issue "dedicated Codex" sets it
# from the compute driver's capability); until then the Codex defaults are not seeded.
DEDICATED_CODEX_HARNESS = False


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


def _codex_values(*, sandbox: str, model: str | None = None) -> dict[str, Any]:
    """The Codex harness's native values: the gateway's Control UI and chat endpoint, and the
    Codex plugin reaching the harness's app-server (its URL and token are the runtime's)."""
    values: dict[str, Any] = {
        "gateway": {"controlUi": {"enabled": True,
                                  "allowedOrigins": ["http://127.0.0.1:18789", "http://localhost:18789"]},
                    "http": {"endpoints": {"chatCompletions": {"enabled": True}}}},
        "plugins": {"allow": ["codex"], "entries": {"codex": {"enabled": True, "config": {"appServer": {
            "mode": "guardian", "approvalPolicy": "on-request", "sandbox": sandbox, "transport": "websocket",
            "url": "${APP_SERVER_URL}", "authToken": "${APP_SERVER_TOKEN}"}}}}},
    }
    if model is not None:
        values["agents"] = {"defaults": {"skipBootstrap": True, "model": {"primary": f"codex/{model}"}}}
    return values


def _default_codex() -> dict[str, Any]:
    """No variables, name, model or credential: the form collects those."""
    return {"agent": {"executionMode": "dedicated", "backendId": None, "plugins": {}},
            "configuration": {"values": _codex_values(sandbox="read-only"), "secretBindings": {}}}


def _standard_codex() -> dict[str, Any]:
    return {
        "variables": {
            "name": {"type": "string", "description": "Agent name"},
            "model": {"type": "string", "description": "Codex model", "default": "gpt-6-astra"},
            "apiKey": {"type": "password", "description": "OpenAI API key"},
        },
        "agent": {"name": "{{ vars.name }}", "executionMode": "dedicated",
                  "harnessAuth": {"method": "api_key", "secret": "{{ vars.apiKey }}"}, "plugins": {}},
        "configuration": {"values": _codex_values(sandbox="workspace-write", model="{{ vars.model }}"),
                          "secretBindings": {}},
    }


def bundled_presets() -> dict[str, dict[str, Any]]:
    """Every default this OCC ships, seeded or not (Namespace deletion removes untouched copies)."""
    return {STANDARD_OPENCLAW: _standard_openclaw(), DEFAULT_CODEX: _default_codex(),
            STANDARD_CODEX: _standard_codex()}


def default_presets() -> dict[str, dict[str, Any]]:
    """The defaults seeded into a Namespace: name -> template (stored JSON), a fresh copy each
    call. The Codex ones only with the dedicated Codex harness."""
    bundled = bundled_presets()
    if DEDICATED_CODEX_HARNESS:
        return bundled
    return {STANDARD_OPENCLAW: bundled[STANDARD_OPENCLAW]}
