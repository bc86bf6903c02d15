"""What the Create Agent page holds: ``AgentChoices`` (what the person chose, plus the hidden
fields the server writes: the client request id, the fingerprint of the last generated
Configuration), the page's constants and messages, and the Configuration template (the native
JSON follows the selections until the person edits it).

``console.forms.agent_create`` reads a post into these choices and judges them; the coupling
rules (``console.pages.agent_create``) change them; the templates render them. A typed key's
Secret is not among them: it is found by the request id
(``occ.selectors.secrets.model_key_secret_find``). A secret value lives only in ``api_key`` for
the one request that carries it and is never rendered back.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from occ.ids import IdPrefix, is_valid_id
from occ.openclaw.document import COMPATIBLE_PROVIDER_ID, agent_template
from occ.openclaw.slack import slack_enabled, without_slack_settings
from occ.selectors.secrets import model_key_secret_name

# --- configurable data ------------------------------------------------------------------------

OPENAI, ANTHROPIC, COMPATIBLE = "openai", "anthropic", "openai_compatible"
PROVIDERS: dict[str, str] = {
    OPENAI: "OpenAI",
    ANTHROPIC: "Anthropic",
    COMPATIBLE: "OpenAI-compatible endpoint",
}
DEFAULT_PROVIDER = OPENAI

# A starter list per provider (no discovery call). It proves neither that the runtime
# supports a model nor that a key may use it; discovery or manual entry cover the rest.
STATIC_MODELS: dict[str, tuple[str, ...]] = {
    OPENAI: ("gpt-6-astra", "gpt-6-sol", "gpt-6-luna", "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"),
    ANTHROPIC: ("claude-opus-5-5", "claude-fable-5-1", "claude-mythos-5-1", "claude-opus-5", "claude-sonnet-5",
                "claude-haiku-4-5", "claude-opus-4-8", "claude-sonnet-4-6"),
}

AUTH_NEW_KEY, AUTH_EXISTING, AUTH_TOKEN = "new_key", "existing", "token"
# AUTH_TOKEN: a ChatGPT workspace's service account token (codex_pat), OpenAI only. It lists the
# workspace's models; an Agent cannot run with it until the dedicated Codex harness exists.
AUTH_CHOICES = (AUTH_NEW_KEY, AUTH_EXISTING, AUTH_TOKEN)
MODE_LIST, MODE_MANUAL = "list", "manual"

# (file name, form field, element id); all four are always sent (empty = an empty file).
WORKSPACE_FILES: tuple[tuple[str, str, str], ...] = (
    ("AGENTS.md", "workspace_agents", "workspace-agents"),
    ("SOUL.md", "workspace_soul", "workspace-soul"),
    ("IDENTITY.md", "workspace_identity", "workspace-identity"),
    ("USER.md", "workspace_user", "workspace-user"),
)
WORKSPACE_FIELDS = {name: fld for name, fld, _ in WORKSPACE_FILES}  # file name -> form field
WORKSPACE_DEFAULTS: dict[str, str] = {
    "AGENTS.md": "# AGENTS.md\n\nYou are a helpful teammate. Read SOUL.md and USER.md at the start of each "
                 "session, keep answers short, and say when you are unsure.\n",
    "SOUL.md": "# SOUL.md\n\nBe honest, kind and concise. Ask before doing anything that cannot be undone.\n",
    "IDENTITY.md": "# IDENTITY.md\n\nYou are an OpenClaw agent working for this team.\n",
    "USER.md": "# USER.md\n\nDescribe the people you help and how they like to work.\n",
}

SECRET_BINDING_PREFIX = "secret_binding__"
SLACK_BINDING_PREFIX = "SLACK_"
MODEL_ID_MAX = 200
# Any key a provider might issue, and any placeholder an endpoint that ignores keys gets (the
# README's no-internet path: "any key", such as ``any-key``). Whether a provider accepts it is
# the provider's call (discovery, the first deployment), not a length rule of ours.
API_KEY = re.compile(r"[\x21-\x7e]{1,4096}")
DISCOVERED_MAX = 1000

MESSAGES = {
    "name_required": "Enter a name for the Agent.",
    "provider": "Choose OpenAI, Anthropic or an OpenAI-compatible endpoint.",
    "base_url": "Enter the endpoint's Base URL, an absolute http:// or https:// address.",
    "api_key_required": "Enter an API key, or choose an existing Secret, before creating the Agent.",
    "api_key_format": "The API key must be at most 4,096 printable ASCII characters without spaces.",
    "secret_required": "Choose a model credential Secret before creating the Agent.",
    "token_unsupported": ("An Agent cannot run with a service account token yet: it needs the dedicated Codex "
                          "harness, which this installation does not offer. The token lists the models; to create "
                          "the Agent, enter an OpenAI API key or choose its Secret."),
    "model_required": "Choose an available model or enter a model ID before creating the Agent.",
    "model_format": f"A model ID has no spaces and at most {MODEL_ID_MAX} characters.",
    "json_invalid": "Enter a valid JSON object.",
    "json_model": ("Configuration must use the selected provider and model. Update the JSON or reset the "
                   "template before saving."),
    "binding": "A channel Secret binding is not valid. Configure the channel again.",
    "plugins_json": "Fix Plugin selections JSON: it must be an object of plugin ids to selections.",
}


def new_request_id() -> str:
    return f"req_{uuid.uuid4()}"


def checked_id(value: str, prefix: IdPrefix) -> str:
    value = value.strip()
    return value if is_valid_id(value, prefix) else ""


# --- the page's choices ---------------------------------------------------------------------------


@dataclass
class AgentChoices:
    """What the Create Agent page holds, normalized by ``AgentForm``; the coupling rules change
    it and the template renders it. ``api_key`` is never rendered."""

    name: str = ""
    provider: str = DEFAULT_PROVIDER
    base_url: str = ""
    auth_choice: str = AUTH_NEW_KEY
    api_key: str = ""
    model_secret_id: str = ""
    saved_secret_id: str = ""  # the Secret an attempt of this request saved the typed key as (found by requestId)
    model_mode: str = MODE_LIST
    model: str = ""
    model_manual: str = ""
    discovered: list[tuple[str, str]] = field(default_factory=list)
    configuration_json: str = ""
    configuration_baseline: str = ""
    files: dict[str, str] = field(default_factory=lambda: dict(WORKSPACE_DEFAULTS))
    request_id: str = field(default_factory=new_request_id)
    secret_bindings: dict[str, str] = field(default_factory=dict)
    plugins_json: str = "{}"  # the plugin picker's selections, as typed (parsed on submit)
    plugin_approvers: str = ""  # the picker's Default plugin approvers field, as typed
    slack_state: str = ""  # the Channels card's staged Slack settings, as posted (console.forms.slack)
    # The Preset this draft started from when it binds the model credential itself: the
    # provider and credential are then shown, not chosen (Start over chooses again).
    credential_lock: str = ""

    @classmethod
    def initial(cls) -> AgentChoices:
        choices = cls()
        regenerate_configuration(choices)
        return choices

    @property
    def is_compatible(self) -> bool:
        return self.provider == COMPATIBLE

    @property
    def chosen_model(self) -> str:
        return (self.model_manual if self.model_mode == MODE_MANUAL else self.model).strip()

    @property
    def credential_secret_id(self) -> str:
        """The Secret holding the model key: the chosen one, or the one saved from a typed key."""
        return self.model_secret_id if self.auth_choice == AUTH_EXISTING else self.saved_secret_id

    @property
    def can_discover(self) -> bool:
        return not self.is_compatible

    @property
    def offers_token(self) -> bool:
        """Service account tokens are OpenAI's (ChatGPT workspaces)."""
        return self.provider == OPENAI

    @property
    def slack_bindings(self) -> dict[str, str]:
        return {k: v for k, v in self.secret_bindings.items() if k.startswith(SLACK_BINDING_PREFIX)}

    @property
    def other_bindings(self) -> dict[str, str]:
        """Bindings the Channels card does not render itself (this form keeps them)."""
        return {k: v for k, v in self.secret_bindings.items() if not k.startswith(SLACK_BINDING_PREFIX)}

    @property
    def slack_in_configuration(self) -> bool:
        """Whether the Configuration JSON enables Slack: the one source of the page's Slack
        state (the card shows it, the request carries Slack's bindings only then)."""
        document = parse_json_object(self.configuration_json)
        return document is not None and slack_enabled(document)

    @property
    def requested_bindings(self) -> dict[str, str]:
        """The Secret bindings the request carries: the Slack tokens only while the JSON
        enables Slack, so tokens of a Slack setup deleted from the JSON never reach the runtime."""
        return dict(self.secret_bindings) if self.slack_in_configuration else self.other_bindings

    def remove_slack(self) -> None:
        """The Channels card's Remove: Slack leaves the JSON, the card and the bindings."""
        document = parse_json_object(self.configuration_json)
        if document is not None:
            self.configuration_json = dump_configuration(without_slack_settings(document))
        self.slack_state = ""
        self.secret_bindings = self.other_bindings

    @property
    def discovered_json(self) -> str:
        return json.dumps([list(pair) for pair in self.discovered], separators=(",", ":"))

    def submitted(self) -> dict[str, Any]:
        """These choices as ``AgentSubmitForm`` judges them, by its field names (the model: the
        chosen one)."""
        return {
            "name": self.name, "provider": self.provider, "base_url": self.base_url, "auth_choice": self.auth_choice,
            "api_key": self.api_key, "model_secret_id": self.model_secret_id, "model": self.chosen_model,
            "configuration_json": self.configuration_json, "request_id": self.request_id,
            "channels": self.requested_bindings, "plugins": self.plugins_json,
            "plugin_approvers": self.plugin_approvers,
            **{fld: self.files.get(name, "") for name, fld, _ in WORKSPACE_FILES},
        }

    def model_options(self) -> list[tuple[str, str]]:
        """(id, label) for the Model select: discovered models, else the starter list; the
        current choice stays listed even when the list changed under it."""
        options = list(self.discovered) or [(m, m) for m in STATIC_MODELS.get(self.provider, ())]
        if self.model and all(self.model != mid for mid, _ in options):
            options.insert(0, (self.model, self.model))
        return options


# --- the Configuration template ----------------------------------------------------------------


def provider_id(provider: str) -> str:
    return COMPATIBLE_PROVIDER_ID if provider == COMPATIBLE else provider


def model_ref(provider: str, model: str) -> str:
    return f"{provider_id(provider)}/{model}"


def configuration_template(provider: str, model: str, base_url: str = "") -> dict[str, Any]:
    """The native OpenClaw document for the selections (``occ.openclaw.document.agent_template``)."""
    return agent_template(provider=provider_id(provider), model=model, base_url=base_url)


def without_channel_settings(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document minus what the Channels card writes (``channels``, ``plugins.entries.slack``)."""
    stripped = without_slack_settings(document)
    stripped.pop("channels", None)
    return stripped


def carry_channel_settings(target: dict[str, Any], source: Mapping[str, Any]) -> dict[str, Any]:
    """Copy the Channels card's keys from ``source`` into ``target`` (a regenerated template)."""
    if "channels" in source:
        target["channels"] = copy.deepcopy(source["channels"])
    plugins = source.get("plugins")
    entries = plugins.get("entries") if isinstance(plugins, Mapping) else None
    if isinstance(entries, Mapping) and "slack" in entries:
        target_plugins = target.setdefault("plugins", {})
        if isinstance(target_plugins, dict):
            target_plugins.setdefault("entries", {})["slack"] = copy.deepcopy(entries["slack"])
    return target


def template_fingerprint(document: Mapping[str, Any]) -> str:
    canonical = json.dumps(without_channel_settings(document), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json_object(text: object) -> dict[str, Any] | None:
    """The Configuration JSON as an object, or None when it is not one (nor text at all)."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def dump_configuration(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


def configuration_edited(form: AgentChoices) -> bool:
    """Whether the person edited the JSON since it was last generated (the Channels card's
    keys do not count: its Apply writes them)."""
    if not form.configuration_json.strip():
        return False
    document = parse_json_object(form.configuration_json)
    return document is None or template_fingerprint(document) != form.configuration_baseline


def regenerate_configuration(form: AgentChoices) -> None:
    """Write the template for the selections, keeping the current channel settings."""
    current = parse_json_object(form.configuration_json) or {}
    document = carry_channel_settings(
        configuration_template(form.provider, form.chosen_model, form.base_url), current)
    form.configuration_json = dump_configuration(document)
    form.configuration_baseline = template_fingerprint(document)


def sync_before_submit(form: AgentChoices) -> None:
    """Apply the selections to a JSON nobody edited, as the coupling would have: a change whose
    re-render the browser lost (a click faster than the swap) must not fail the submit."""
    if not configuration_edited(form):
        regenerate_configuration(form)


# --- validation ---------------------------------------------------------------------------------


def model_id_problem(model: str) -> str | None:
    if not model:
        return MESSAGES["model_required"]
    if len(model) > MODEL_ID_MAX or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in model):
        return MESSAGES["model_format"]
    return None


def credential_secret_name(agent_name: str) -> str:
    """The name of the Secret a typed key is saved as: "<agent name> model credential"."""
    return model_key_secret_name(agent_name)
