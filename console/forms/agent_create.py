"""The Create Agent forms (django.forms): ``AgentForm`` reads what the page posts into
``AgentChoices`` (``console.forms.agent_choices``) and never refuses; ``AgentSubmitForm`` judges
those choices when the person creates the Agent or saves it as a draft (each field's rules, then
those across fields) and its cleaned data build the services' typed commands;
``ModelSecretForm`` is the "Create new Secret" dialog. A service's refusal of a command lands on
the field that filled the place it names (``console.forms.base.CommandForm``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from django import forms
from pydantic import TypeAdapter, ValidationError

from console.forms.agent_choices import (
    API_KEY,
    AUTH_CHOICES,
    AUTH_EXISTING,
    AUTH_NEW_KEY,
    AUTH_TOKEN,
    COMPATIBLE,
    DEFAULT_PROVIDER,
    DISCOVERED_MAX,
    MESSAGES,
    MODE_LIST,
    MODE_MANUAL,
    PROVIDERS,
    SECRET_BINDING_PREFIX,
    WORKSPACE_FIELDS,
    WORKSPACE_FILES,
    AgentChoices,
    checked_id,
    model_id_problem,
    model_ref,
    new_request_id,
    parse_json_object,
    sync_before_submit,
)
from console.forms.base import CommandForm
from console.forms.plugin_picker import approvers_from_text, parse_selections
from occ.commands.agents import AgentDraftCreate, HarnessAuth, WorkspaceFiles
from occ.commands.base import Loc, invalid_request
from occ.commands.common import Name, SecretRef
from occ.commands.configurations import ConfigurationDocument, SecretBinding, env_name_problem
from occ.commands.plugins import PluginApprovers, PluginSelections
from occ.commands.provisioning import REQUEST_ID, ProvisionCommand, ProvisionConfiguration, ProvisionWithModelKey
from occ.commands.secrets import SecretCreate, SecretValue
from occ.errors import InvalidRequest
from occ.ids import IdPrefix, is_valid_id
from occ.openclaw.document import primary_model
from occ.openclaw.validation import check_configuration_values, is_absolute_http_url


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
    slack_state = PostedText(400_000)
    plugins = PostedText(200_000)
    plugin_approvers = PostedText(20_000)
    credential_lock = PostedText(200)

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
        return checked_id(self._cut("model_secret_id"), IdPrefix.SECRET)

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
            request_id=data["request_id"], secret_bindings=data["channels"], slack_state=data["slack_state"],
            plugins_json=data["plugins"] or "{}", plugin_approvers=data["plugin_approvers"].strip(),
            credential_lock=data["credential_lock"].strip() if data["auth_choice"] == AUTH_EXISTING else "",
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
        elif data.get("auth_choice") == AUTH_TOKEN:  # refused before the token is saved anywhere
            if not self.has_error("api_key"):
                self.add_error("api_key", MESSAGES["token_unsupported"])
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


