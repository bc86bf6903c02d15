"""The Create Agent form without HTTP: ``AgentForm`` reads what the page posts into
``AgentChoices`` (what the page holds, which the coupling rules change and the template
renders); ``AgentSubmitForm`` judges those choices when the person creates the Agent or saves
it as a draft (django.forms: each field's rules, then those across fields) and its cleaned data
build the typed commands of the services. The Configuration template is a pure function. The
view (``console/views/agent_create.py``) renders and calls the services.

The form is the whole state of the page: what the person chose, plus hidden fields the
server writes (the client request id, the fingerprint of the last generated Configuration).
A typed key's Secret is not among them: it is found by the request id
(``occ.selectors.secrets.model_key_secret_find``). A secret value lives only in ``api_key``
for the one request that carries it and is never rendered back.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django import forms
from pydantic import TypeAdapter, ValidationError

from console.common import CommandForm
from console.plugin_picker import approvers_from_text, parse_selections
from occ.commands.agents import AgentDraftCreate, HarnessAuth, WorkspaceFiles
from occ.commands.base import Loc, invalid_request
from occ.commands.common import NAME_MAX_CODE_POINTS, Name, SecretRef
from occ.commands.configurations import ConfigurationDocument, SecretBinding, env_name_problem
from occ.commands.plugins import PluginApprovers, PluginSelections
from occ.commands.provisioning import REQUEST_ID, ProvisionCommand, ProvisionConfiguration, ProvisionWithModelKey
from occ.commands.secrets import SecretCreate, SecretValue
from occ.errors import InvalidRequest
from occ.ids import IdPrefix, is_valid_id
from occ.openclaw.document import COMPATIBLE_PROVIDER_ID, agent_template, primary_model
from occ.openclaw.validation import check_configuration_values, is_absolute_http_url

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

AUTH_NEW_KEY, AUTH_EXISTING = "new_key", "existing"
AUTH_CHOICES = (AUTH_NEW_KEY, AUTH_EXISTING)
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
CREDENTIAL_SECRET_SUFFIX = " model credential"
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


def _checked_id(value: str, prefix: IdPrefix) -> str:
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
    def slack_bindings(self) -> dict[str, str]:
        return {k: v for k, v in self.secret_bindings.items() if k.startswith(SLACK_BINDING_PREFIX)}

    @property
    def other_bindings(self) -> dict[str, str]:
        """Bindings the Channels card does not render itself (this form keeps them)."""
        return {k: v for k, v in self.secret_bindings.items() if not k.startswith(SLACK_BINDING_PREFIX)}

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
            "channels": self.secret_bindings, "plugins": self.plugins_json, "plugin_approvers": self.plugin_approvers,
            **{fld: self.files.get(name, "") for name, fld, _ in WORKSPACE_FILES},
        }

    def model_options(self) -> list[tuple[str, str]]:
        """(id, label) for the Model select: discovered models, else the starter list; the
        current choice stays listed even when the list changed under it."""
        options = list(self.discovered) or [(m, m) for m in STATIC_MODELS.get(self.provider, ())]
        if self.model and all(self.model != mid for mid, _ in options):
            options.insert(0, (self.model, self.model))
        return options


# --- the form (django.forms) -------------------------------------------------------------------------


class SecretBindingsWidget(forms.Widget):
    """The Channels card posts one ``secret_binding__<ENV>`` input per bound Secret; this widget
    reads them as one value ``{ENV: secret id}``."""

    def value_from_datadict(self, data: Mapping[str, Any], files: Any, name: str) -> dict[str, str]:
        return {key[len(SECRET_BINDING_PREFIX):]: str(data.get(key, "")).strip()
                for key in data if isinstance(key, str) and key.startswith(SECRET_BINDING_PREFIX)}

    def value_omitted_from_data(self, data: Mapping[str, Any], files: Any, name: str) -> bool:
        return False


class PostedText(forms.CharField):
    """A posted text cut at ``limit`` and never "required": an empty or missing input is a
    choice the submit's rules judge, in the page's own words."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(required=False, strip=False)
        self.validators = []  # not even CharField's NUL check: the submit's fields judge that

    def to_python(self, value: Any) -> str:
        return str(super().to_python(value))[: self.limit]


def _discovered(raw: str) -> list[tuple[str, str]]:
    try:
        items = json.loads(raw) if raw else []
    except ValueError:
        return []
    if not isinstance(items, list):
        return []
    return [(item[0], item[1][:200] or item[0]) for item in items[:DISCOVERED_MAX]
            if isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)
            and model_id_problem(item[0]) is None]


class AgentForm(forms.Form):
    """The Create Agent form as posted: what the person chose, plus the hidden fields the
    server writes (the client ``requestId``, the fingerprint of the last generated
    Configuration).

    Each ``clean_<field>`` normalizes (an unknown choice falls back to the default, an id that
    is not an id is dropped) and never refuses: a control that changed posts this form too, and
    the page re-renders what was typed. ``clean()`` gathers ``self.choices``. The rules of a
    submit are ``AgentSubmitForm``'s, over these choices.
    """

    name = PostedText(1000)
    provider = PostedText(64)
    base_url = PostedText(2048)
    auth_choice = PostedText(16)
    api_key = PostedText(8192)
    model_secret_id = PostedText(128)
    model_mode = PostedText(16)
    model = PostedText(1000)
    model_manual = PostedText(1000)
    discovered_models = PostedText(400_000)
    configuration_json = PostedText(500_000)
    configuration_baseline = PostedText(128)
    request_id = PostedText(64)
    workspace_agents = PostedText(200_000)
    workspace_soul = PostedText(200_000)
    workspace_identity = PostedText(200_000)
    workspace_user = PostedText(200_000)
    channels = forms.Field(required=False, widget=SecretBindingsWidget)
    plugins = PostedText(200_000)
    plugin_approvers = PostedText(20_000)

    choices: AgentChoices

    def __init__(self, *args: Any, saved_secret_id: str = "", **kwargs: Any) -> None:
        """``saved_secret_id``: the Secret an earlier attempt of the posted request saved the
        typed key as (the view looks it up by requestId; nothing posted names it)."""
        super().__init__(*args, **kwargs)
        self.saved_secret_id = saved_secret_id

    def _cut(self, name: str) -> str:
        return str(self.cleaned_data.get(name, ""))

    def clean_name(self) -> str:
        return self._cut("name").strip()

    def clean_provider(self) -> str:
        provider = self._cut("provider")
        return provider if provider in PROVIDERS else DEFAULT_PROVIDER

    def clean_base_url(self) -> str:
        return self._cut("base_url").strip()

    def clean_auth_choice(self) -> str:
        choice = self._cut("auth_choice")
        return choice if choice in AUTH_CHOICES else AUTH_NEW_KEY

    def clean_model_secret_id(self) -> str:
        return _checked_id(self._cut("model_secret_id"), IdPrefix.SECRET)

    def clean_model(self) -> str:
        return self._cut("model").strip()

    def clean_model_manual(self) -> str:
        return self._cut("model_manual").strip()

    def clean_request_id(self) -> str:
        request_id = self._cut("request_id")
        return request_id if REQUEST_ID.fullmatch(request_id) else new_request_id()

    def clean_channels(self) -> dict[str, str]:
        bindings = self.cleaned_data.get("channels") or {}
        return {env: secret for env, secret in bindings.items() if env and secret}

    def clean(self) -> dict[str, Any]:
        data = self.cleaned_data  # every field cleans to a value: nothing here refuses
        mode = data["model_mode"]
        self.choices = AgentChoices(
            name=data["name"], provider=data["provider"], base_url=data["base_url"],
            auth_choice=data["auth_choice"], api_key=data["api_key"],
            model_secret_id=data["model_secret_id"], saved_secret_id=self.saved_secret_id,
            model_mode=MODE_MANUAL if mode == MODE_MANUAL or data["provider"] == COMPATIBLE else MODE_LIST,
            model=data["model"], model_manual=data["model_manual"],
            discovered=_discovered(data["discovered_models"]),
            configuration_json=data["configuration_json"], configuration_baseline=data["configuration_baseline"],
            files={name: data[fld] for name, fld, _ in WORKSPACE_FILES},
            request_id=data["request_id"], secret_bindings=data["channels"],
            plugins_json=data["plugins"] or "{}", plugin_approvers=data["plugin_approvers"].strip(),
        )
        return data

    @classmethod
    def choices_of(cls, data: Mapping[str, Any], *, saved_secret_id: str = "") -> AgentChoices:
        """The page's choices as posted: no rule is applied."""
        form = cls(data, saved_secret_id=saved_secret_id)
        form.full_clean()
        return form.choices


D = TypeVar("D", bound=ConfigurationDocument)
# The commands' types whose rules the fields apply.
NAME_TYPE, VALUE_TYPE, DOCUMENT_TYPE = TypeAdapter(Name), TypeAdapter(SecretValue), TypeAdapter(ConfigurationDocument)
WORKSPACE_TYPE, SELECTIONS_TYPE, APPROVERS_TYPE = (TypeAdapter(WorkspaceFiles), TypeAdapter(PluginSelections),
                                                   TypeAdapter(PluginApprovers))


def command_rule(kind: TypeAdapter[Any], value: Any) -> Any:
    """``value`` as the commands hold it (``kind``: one of their types), or their refusal, in
    their words, as a field's error."""
    try:
        return kind.validate_python(value)
    except ValidationError as exc:
        raise forms.ValidationError(invalid_request(exc.errors()).message, code="invalid") from None


class WorkspaceFileField(forms.CharField):
    """One workspace file the first deployment writes (``file_name``), held to the command's rule."""

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        super().__init__(required=False, strip=False)

    def validate(self, value: Any) -> None:
        super().validate(value)
        command_rule(WORKSPACE_TYPE, {self.file_name: value})


def harness_auth(namespace_id: str, secret_id: str) -> HarnessAuth:
    return HarnessAuth(method="api_key", source=SecretRef.to(namespace_id, secret_id))


class AgentSubmitForm(CommandForm):
    """The form as Create Agent or Save as draft posts it. What it judges are the page's
    choices (``choices``: ``AgentForm``'s reading of the post, the selections applied to a JSON
    nobody edited), by the page's rules and the commands' own, every problem at once, each on
    its field. Its cleaned data build the services' commands (``provision_command``,
    ``draft_command``); the views add a service's refusal of one with ``refuse``.
    """

    name = forms.CharField(strip=False, error_messages={"required": MESSAGES["name_required"]})
    provider = forms.ChoiceField(choices=list(PROVIDERS.items()))
    base_url = forms.CharField(required=False, strip=False)
    auth_choice = forms.ChoiceField(choices=[(choice, choice) for choice in AUTH_CHOICES])
    api_key = forms.CharField(required=False, strip=False)
    model_secret_id = forms.CharField(required=False)
    model = forms.CharField(strip=False, error_messages={"required": MESSAGES["model_required"]})
    configuration_json = forms.CharField(strip=False, error_messages={"required": MESSAGES["json_invalid"]})
    request_id = forms.RegexField(REQUEST_ID)
    channels = forms.Field(required=False)  # {ENV: secret id}
    plugins = forms.CharField(required=False, strip=False)
    plugin_approvers = forms.CharField(required=False)
    # and one WorkspaceFileField per workspace file (WORKSPACE_FILES)

    def __init__(self, data: Mapping[str, Any], *, saved_secret_id: str = "") -> None:
        """``saved_secret_id``: the Secret an earlier attempt of the posted request saved the
        typed key as (the view looks it up by request id; nothing posted names it)."""
        self.choices = AgentForm.choices_of(data, saved_secret_id=saved_secret_id)
        sync_before_submit(self.choices)
        super().__init__(self.choices.submitted())
        for name, fld, _ in WORKSPACE_FILES:
            self.fields[fld] = WorkspaceFileField(name)

    def clean_name(self) -> str:
        return str(command_rule(NAME_TYPE, self.cleaned_data["name"]))

    def clean_api_key(self) -> str:
        key = str(self.cleaned_data["api_key"])
        if key and not API_KEY.fullmatch(key):
            raise forms.ValidationError(MESSAGES["api_key_format"], code="invalid")
        return key

    def clean_model(self) -> str:
        problem = model_id_problem(self.cleaned_data["model"])
        if problem is not None:
            raise forms.ValidationError(problem, code="invalid")
        return str(self.cleaned_data["model"])

    def clean_configuration_json(self) -> dict[str, Any]:
        document = parse_json_object(self.cleaned_data["configuration_json"])
        if document is None:
            raise forms.ValidationError(MESSAGES["json_invalid"], code="invalid")
        command_rule(DOCUMENT_TYPE, {"kind": "agent", "values": document})
        try:
            check_configuration_values(document, path="/configuration/values")
        except InvalidRequest as exc:
            raise forms.ValidationError(exc.message, code="invalid") from None
        return document

    def clean_channels(self) -> dict[str, str]:
        bindings: dict[str, str] = self.cleaned_data["channels"] or {}
        if any(env_name_problem(env) or not is_valid_id(secret_id, IdPrefix.SECRET)
               for env, secret_id in bindings.items()):
            raise forms.ValidationError(MESSAGES["binding"], code="invalid")
        return bindings

    def clean_plugins(self) -> dict[str, Any]:
        selections = parse_selections(self.cleaned_data["plugins"])
        if selections is None:
            raise forms.ValidationError(MESSAGES["plugins_json"], code="invalid")
        return dict(command_rule(SELECTIONS_TYPE, selections))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("provider") == COMPATIBLE and not is_absolute_http_url(data.get("base_url", "")):
            self.add_error("base_url", MESSAGES["base_url"])
        if data.get("auth_choice") == AUTH_EXISTING:
            if not data.get("model_secret_id"):
                self.add_error("model_secret_id", MESSAGES["secret_required"])
        elif not self.choices.saved_secret_id and not self.has_error("api_key") and not data.get("api_key"):
            self.add_error("api_key", MESSAGES["api_key_required"])
        document, model = data.get("configuration_json"), data.get("model")
        if document is not None and model and primary_model(document) != model_ref(data["provider"], model):
            self.add_error("configuration_json", MESSAGES["json_model"])
        try:  # the picker's Default plugin approvers, shown with its selections
            approvers = command_rule(APPROVERS_TYPE, approvers_from_text(data["plugin_approvers"]))
            data["plugin_approvers"] = approvers or None
        except forms.ValidationError as error:
            self.add_error("plugins", error)
        return data

    def field_of(self, at: Loc) -> str | None:
        match at:
            case ("name", *_):
                return "name"
            case ("configuration", "secret_bindings", *_) | ("configuration", "values", "channels", *_):
                return "channels"
            case ("configuration", *_):
                return "configuration_json"
            case ("harness_auth" | "model_key", *_):
                return "model_secret_id" if self.choices.auth_choice == AUTH_EXISTING else "api_key"
            case ("initial_workspace_files", file_name, *_):
                return WORKSPACE_FIELDS.get(str(file_name))
            case ("plugins" | "plugin_approvers", *_):
                return "plugins"
        return None

    # --- the commands (a valid form) ---

    def _configuration(self, document: type[D], *, namespace_id: str) -> D:
        bindings = {env: SecretBinding(source=SecretRef.to(namespace_id, secret_id))
                    for env, secret_id in sorted(self.cleaned_data["channels"].items())}
        return document(kind="agent", values=self.cleaned_data["configuration_json"], secret_bindings=bindings)

    def _agent(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"name": data["name"], "initial_workspace_files": {name: data[fld] for name, fld, _ in WORKSPACE_FILES},
                "plugins": data["plugins"], "plugin_approvers": data["plugin_approvers"]}

    def provision_command(self, *, namespace_id: str) -> ProvisionCommand | ProvisionWithModelKey:
        """Create Agent's request: the chosen Secret as ``harness_auth``, or the typed key as
        ``model_key`` (None once an attempt of this request saved it). Built from the form
        alone, so the same form gives the same command (the same request id then finds the
        same work)."""
        data = self.cleaned_data
        fields = {"request_id": data["request_id"], **self._agent(),
                  "configuration": self._configuration(ProvisionConfiguration, namespace_id=namespace_id)}
        if data["auth_choice"] == AUTH_EXISTING:
            return ProvisionCommand(harness_auth=harness_auth(namespace_id, data["model_secret_id"]), **fields)
        return ProvisionWithModelKey(model_key=data["api_key"] or None, **fields)

    def draft_command(self, *, namespace_id: str, model_secret_id: str) -> AgentDraftCreate:
        """Save as draft's request, the model key held in ``model_secret_id``."""
        return AgentDraftCreate(configuration=self._configuration(ConfigurationDocument, namespace_id=namespace_id),
                                harness_auth=harness_auth(namespace_id, model_secret_id), **self._agent())


class ModelSecretForm(CommandForm):
    """The "Create new Secret" dialog: a Secret for the model key, made before the Agent."""

    secret_name = forms.CharField(error_messages={"required": "Enter a name for the Secret."})
    secret_value = forms.CharField(strip=False, error_messages={"required": "Enter the Secret value."})
    provider = forms.CharField(required=False)

    def clean_secret_name(self) -> str:
        return str(command_rule(NAME_TYPE, self.cleaned_data["secret_name"]))

    def clean_secret_value(self) -> str:
        return str(command_rule(VALUE_TYPE, self.cleaned_data["secret_value"]))

    def clean_provider(self) -> str:
        provider = self.cleaned_data["provider"]
        return provider if provider in PROVIDERS else DEFAULT_PROVIDER

    def field_of(self, at: Loc) -> str | None:
        return {"name": "secret_name", "value": "secret_value"}.get(str(at[0])) if at else None

    def command(self) -> SecretCreate:
        return SecretCreate(name=self.cleaned_data["secret_name"], value=self.cleaned_data["secret_value"])


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
    stripped = copy.deepcopy(dict(document))
    stripped.pop("channels", None)
    plugins = stripped.get("plugins")
    if isinstance(plugins, dict):
        entries = plugins.get("entries")
        if isinstance(entries, dict):
            entries.pop("slack", None)
            if not entries:
                plugins.pop("entries")
        if not plugins:
            stripped.pop("plugins")
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


def parse_json_object(text: str) -> dict[str, Any] | None:
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


# --- coupling rules -----------------------------------------------------------------------------

# The sections a change re-renders (the view maps each to its fragment).
# A control's own section is never among them: it may already hold a newer choice.
BASE_URL, AUTH, CREDENTIAL, MODEL, CONFIGURATION, STATE, FEEDBACK, ACTIONS, PROGRESS, OUTCOME = (
    "base_url", "auth", "credential", "model", "configuration", "state", "feedback", "actions", "progress", "outcome")
CHANGES = frozenset({"provider", "base_url", "auth_choice", "model", "manual_model", "list_model", "reset",
                     "new_request"})


def _clear_credential(form: AgentChoices) -> set[str]:
    """Never carry a key to another provider or method: typed key, picked and saved Secret go.
    A saved Secret is the request's (found by its requestId), so it goes with a new request."""
    form.api_key = ""
    form.model_secret_id = ""
    if not form.saved_secret_id:
        return set()
    form.saved_secret_id = ""
    form.request_id = new_request_id()
    return {STATE, FEEDBACK, OUTCOME}


def _sync_configuration(form: AgentChoices, *, force: bool = False) -> set[str]:
    if force or not configuration_edited(form):
        regenerate_configuration(form)
        return {CONFIGURATION, STATE}
    return {CONFIGURATION}


def apply_change(form: AgentChoices, changed: str) -> set[str]:
    """Apply the rule for one changed control; return the sections to render again."""
    if changed == "provider":
        renewed = _clear_credential(form)
        form.discovered = []
        form.model = form.model_manual = ""
        form.model_mode = MODE_MANUAL if form.is_compatible else MODE_LIST
        if not form.is_compatible:
            form.base_url = ""
        return {BASE_URL, CREDENTIAL, MODEL} | renewed | _sync_configuration(form)
    if changed == "auth_choice":
        renewed = _clear_credential(form)
        form.discovered = []
        return {CREDENTIAL, MODEL} | renewed
    if changed == "manual_model":
        form.model_mode = MODE_MANUAL
        form.model_manual = form.model_manual or form.model
        return {MODEL} | _sync_configuration(form)
    if changed == "list_model":
        if not form.is_compatible:
            form.model_mode = MODE_LIST
        return {MODEL} | _sync_configuration(form)
    if changed in {"base_url", "model"}:
        return _sync_configuration(form)
    if changed == "reset":
        return _sync_configuration(form, force=True)
    if changed == "new_request":
        form.request_id = new_request_id()
        return {STATE, FEEDBACK, OUTCOME, PROGRESS, ACTIONS}
    return set()


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
    head = (agent_name or "Agent")[: NAME_MAX_CODE_POINTS - len(CREDENTIAL_SECRET_SUFFIX)].rstrip()
    return head + CREDENTIAL_SECRET_SUFFIX
