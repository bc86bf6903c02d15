"""The Create Agent form without HTTP (console/agent_form.py): ``AgentForm`` / ``AgentSubmitForm``
(django.forms) parsing and rules, the coupling rules over ``AgentChoices``, the Configuration
template."""

from __future__ import annotations

import json

import pytest
from django.http import QueryDict

from console.forms import agent_choices as ac
from console.forms.agent_choices import AgentChoices
from console.forms.agent_create import AgentForm, AgentSubmitForm
from console.pages.agent_create import (
    AUTH,
    BASE_URL,
    CONFIGURATION,
    CREDENTIAL,
    FEEDBACK,
    MODEL,
    OUTCOME,
    STATE,
    apply_change,
)
from occ.commands.agents import AgentDraftCreate, HarnessAuth
from occ.commands.base import NOT_FINITE_MESSAGE, NUL_MESSAGE
from occ.commands.common import SecretRef
from occ.commands.configurations import SecretBinding, SecretDelivery
from occ.commands.provisioning import REQUEST_ID, ProvisionCommand, ProvisionWithModelKey
from occ.errors import DependencyUnavailable, Detail, InvalidRequest
from occ.services import agent_drafts

SEC_A = "sec_00000000-0000-4000-8000-00000000000a"
SEC_B = "sec_00000000-0000-4000-8000-00000000000b"
KEY = "sk-test-0123456789abcdef"


def form_with(**changes) -> AgentChoices:
    form = AgentChoices.initial()
    for key, value in changes.items():
        setattr(form, key, value)
    return form


def document(form: AgentChoices) -> dict:
    parsed = ac.parse_json_object(form.configuration_json)
    assert parsed is not None
    return parsed


def posted(form: AgentChoices) -> QueryDict:
    """What the page posts for these choices (the template's field names)."""
    data = QueryDict(mutable=True)
    data.update({
        "name": form.name, "provider": form.provider, "base_url": form.base_url, "auth_choice": form.auth_choice,
        "api_key": form.api_key, "model_secret_id": form.model_secret_id,
        "model_mode": form.model_mode, "model": form.model, "model_manual": form.model_manual,
        "discovered_models": form.discovered_json, "configuration_json": form.configuration_json,
        "configuration_baseline": form.configuration_baseline, "request_id": form.request_id,
        **{fld: form.files.get(name, "") for name, fld, _ in ac.WORKSPACE_FILES},
        **{f"secret_binding__{env}": secret for env, secret in form.secret_bindings.items()},
        "plugins": form.plugins_json, "plugin_approvers": form.plugin_approvers,
    })
    return data


def submit_errors(form: AgentChoices) -> dict[str, list[str]]:
    """The submit form's errors for these choices ({} when valid)."""
    submitted = AgentSubmitForm(posted(form))
    submitted.is_valid()
    return {name: list(found) for name, found in submitted.errors.items()}


def submitted_form(form: AgentChoices) -> AgentSubmitForm:
    """The submit form of valid choices."""
    submitted = AgentSubmitForm(posted(form))
    assert submitted.is_valid(), submitted.errors
    return submitted


def valid_form(**changes) -> AgentChoices:
    form = form_with(name="helper", api_key=KEY, model="gpt-6-astra")
    ac.regenerate_configuration(form)
    for key, value in changes.items():
        setattr(form, key, value)
    return form


# --- the template ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("provider", "model", "base_url", "expected"), [
    pytest.param("openai", "gpt-6-astra", "", {
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-6-astra"}}}}, id="openai"),
    pytest.param("anthropic", "claude-sonnet-5", "", {
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "anthropic/claude-sonnet-5"}}}},
        id="anthropic"),
    pytest.param("openai_compatible", "llama-4", "http://127.0.0.1:18555/v1", {
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "compatible/llama-4"}}},
        "models": {"mode": "merge", "providers": {"compatible": {
            "baseUrl": "http://127.0.0.1:18555/v1", "api": "openai-completions",
            "models": [{"id": "llama-4", "name": "llama-4"}]}}}}, id="compatible"),
    pytest.param("openai", "", "", {"agents": {"defaults": {"skipBootstrap": True}}}, id="no-model-yet"),
])
def test_the_template_follows_the_selections(provider, model, base_url, expected):
    assert ac.configuration_template(provider, model, base_url) == expected


def test_the_template_never_holds_a_credential():
    text = json.dumps(ac.configuration_template("openai_compatible", "m", "https://x.example/v1")).lower()
    assert "apikey" not in text
    assert "token" not in text


def test_regenerating_keeps_channels_and_the_slack_plugin_entry():
    form = form_with(model="gpt-6-astra")
    current = document(form)
    current["channels"] = {"slack": {"enabled": True, "mode": "socket"}}
    current["plugins"] = {"entries": {"slack": {"enabled": True}, "other": {"enabled": True}}}
    form.configuration_json = json.dumps(current)
    form.provider, form.model = "anthropic", "claude-sonnet-5"
    ac.regenerate_configuration(form)
    regenerated = document(form)
    assert regenerated["channels"] == {"slack": {"enabled": True, "mode": "socket"}}
    assert regenerated["plugins"] == {"entries": {"slack": {"enabled": True}}}
    assert regenerated["agents"]["defaults"]["model"]["primary"] == "anthropic/claude-sonnet-5"


def test_the_channels_card_writing_its_keys_is_not_an_edit():
    form = form_with(model="gpt-6-astra")
    ac.regenerate_configuration(form)
    current = document(form)
    current["channels"] = {"slack": {"enabled": True}}
    current.setdefault("plugins", {}).setdefault("entries", {})["slack"] = {"enabled": True}
    form.configuration_json = json.dumps(current)
    assert not ac.configuration_edited(form)
    current["tools"] = {"profile": "coding"}
    form.configuration_json = json.dumps(current)
    assert ac.configuration_edited(form)


@pytest.mark.parametrize("text", ["{not json", "[]", '{"a": NaN}', "null"])
def test_unparseable_json_counts_as_edited_and_invalid(text):
    form = form_with(configuration_json=text)
    assert ac.configuration_edited(form)
    assert ac.parse_json_object(text) is None


# --- coupling -------------------------------------------------------------------------------------


def test_a_provider_change_clears_the_credential_and_the_model_and_regenerates():
    form = form_with(api_key=KEY, auth_choice=ac.AUTH_EXISTING, model_secret_id=SEC_A, saved_secret_id=SEC_B,
                     model="gpt-6-astra", discovered=[("gpt-6-astra", "gpt-6-astra")])
    ac.regenerate_configuration(form)
    form.provider = "anthropic"
    sections = apply_change(form, "provider")
    # AUTH: the service account token choice is OpenAI's only.
    assert sections == {BASE_URL, AUTH, CREDENTIAL, MODEL, CONFIGURATION, STATE, FEEDBACK, OUTCOME}
    assert (form.api_key, form.model_secret_id, form.saved_secret_id, form.auth_choice) == ("", "", "", "existing")


def test_leaving_openai_leaves_the_service_account_token_choice():
    form = form_with(api_key="at-typed-token-0123456789", auth_choice=ac.AUTH_TOKEN)
    form.provider = "anthropic"
    apply_change(form, "provider")
    assert (form.auth_choice, form.api_key) == (ac.AUTH_NEW_KEY, "")
    assert (form.model, form.discovered, form.model_mode) == ("", [], "list")
    assert "model" not in document(form)["agents"]["defaults"]


def test_a_compatible_endpoint_enters_the_model_id_manually():
    form = form_with(provider="openai_compatible", base_url="http://127.0.0.1:9/v1")
    apply_change(form, "provider")
    assert form.model_mode == "manual"
    assert not form.can_discover
    form.model_manual = "echo-model"
    assert apply_change(form, "model") == {CONFIGURATION, STATE}
    providers = document(form)["models"]["providers"]
    assert providers["compatible"]["baseUrl"] == "http://127.0.0.1:9/v1"
    assert document(form)["agents"]["defaults"]["model"]["primary"] == "compatible/echo-model"


def test_leaving_the_compatible_endpoint_drops_its_base_url():
    form = form_with(provider="openai", base_url="http://127.0.0.1:9/v1")
    apply_change(form, "provider")
    assert form.base_url == ""


def test_a_credential_change_drops_the_requests_saved_secret_with_a_new_request():
    form = form_with(saved_secret_id=SEC_A)
    before = form.request_id
    assert apply_change(form, "auth_choice") == {CREDENTIAL, MODEL, STATE, FEEDBACK, OUTCOME}
    assert form.saved_secret_id == ""
    assert form.request_id != before  # the saved Secret is the old request's: it is never reused now


def test_an_auth_choice_change_clears_the_credential_but_keeps_the_model():
    form = form_with(auth_choice=ac.AUTH_EXISTING, model_secret_id=SEC_A, model="gpt-6-luna",
                     discovered=[("gpt-6-luna", "Luna")])
    assert apply_change(form, "auth_choice") == {CREDENTIAL, MODEL}
    assert (form.model_secret_id, form.discovered, form.model) == ("", [], "gpt-6-luna")


def edited_form() -> tuple[AgentChoices, dict]:
    """A form whose JSON the person edited, then chose another model."""
    form = form_with(model="gpt-6-astra")
    ac.regenerate_configuration(form)
    edited = document(form)
    edited["tools"] = {"profile": "coding"}
    form.configuration_json = json.dumps(edited)
    form.model = "gpt-6-luna"
    return form, edited


def test_an_edited_json_is_left_alone_until_reset():
    form, edited = edited_form()
    assert apply_change(form, "model") == {CONFIGURATION}
    assert document(form) == edited
    assert apply_change(form, "reset") == {CONFIGURATION, STATE}
    assert "tools" not in document(form)
    assert document(form)["agents"]["defaults"]["model"]["primary"] == "openai/gpt-6-luna"
    assert not ac.configuration_edited(form)


def test_manual_entry_starts_from_the_chosen_model():
    form = form_with(model="gpt-6-sol")
    apply_change(form, "manual_model")
    assert (form.model_mode, form.model_manual, form.chosen_model) == ("manual", "gpt-6-sol", "gpt-6-sol")


def test_a_new_request_gets_a_new_request_id():
    form = form_with()
    before = form.request_id
    assert apply_change(form, "new_request") >= {STATE, OUTCOME}
    assert form.request_id != before
    assert REQUEST_ID.fullmatch(form.request_id)


def test_the_current_model_stays_listed_when_the_list_changes():
    form = form_with(model="my-private-model")
    assert form.model_options()[0] == ("my-private-model", "my-private-model")
    assert ("gpt-6-astra", "gpt-6-astra") in form.model_options()


def test_submit_applies_the_selections_to_an_unedited_json():
    form = valid_form()
    form.model = "gpt-6-luna"  # chosen, but the coupling's answer never arrived
    submitted = AgentSubmitForm(posted(form))
    assert submitted.is_valid(), submitted.errors
    assert document(submitted.choices)["agents"]["defaults"]["model"]["primary"] == "openai/gpt-6-luna"


def test_submit_leaves_an_edited_json_alone():
    form, edited = edited_form()
    form.name, form.api_key = "helper", KEY
    submitted = AgentSubmitForm(posted(form))
    assert not submitted.is_valid()
    assert document(submitted.choices) == edited
    assert submitted.errors["configuration_json"] == [ac.MESSAGES["json_model"]]


def test_a_coupling_post_applies_no_rule():
    form = AgentForm.choices_of(posted(form_with(name="", model="")))
    assert (form.name, form.model) == ("", "")


# --- parsing --------------------------------------------------------------------------------------


def test_parsing_keeps_what_was_typed_and_drops_what_is_not_an_id():
    data = QueryDict(mutable=True)
    data.update({"name": "  helper  ", "provider": "nonsense", "auth_choice": "weird", "model_secret_id": "not-an-id",
                 "saved_secret_id": SEC_A, "request_id": "bad id", "model": "gpt-6-sol",  # posted: ignored
                 "secret_binding__TEAM_TOKEN": SEC_B, "secret_binding__EMPTY": "",
                 "discovered_models": '[["gpt-6-astra", "Astra"], ["bad id", "x"], 7]'})
    form = AgentForm.choices_of(data)
    assert (form.name, form.provider, form.auth_choice) == ("helper", "openai", "new_key")
    assert (form.model_secret_id, form.saved_secret_id) == ("", "")
    assert REQUEST_ID.fullmatch(form.request_id)
    assert form.secret_bindings == {"TEAM_TOKEN": SEC_B}
    assert form.discovered == [("gpt-6-astra", "Astra")]


def test_parsing_keeps_a_valid_request_id():
    data = QueryDict(mutable=True)
    data["request_id"] = "req_0f6b2a4e-8d1c-4f5e-9a7b-3c2d1e0f9a8b"
    assert AgentForm.choices_of(data).request_id == "req_0f6b2a4e-8d1c-4f5e-9a7b-3c2d1e0f9a8b"


def test_slack_bindings_are_the_cards_and_the_rest_the_forms():
    form = form_with(secret_bindings={"SLACK_BOT_TOKEN": SEC_A, "TEAM_TOKEN": SEC_B})
    assert form.slack_bindings == {"SLACK_BOT_TOKEN": SEC_A}
    assert form.other_bindings == {"TEAM_TOKEN": SEC_B}


# --- validation -----------------------------------------------------------------------------------


def test_a_complete_form_is_valid():
    assert submit_errors(valid_form()) == {}


@pytest.mark.parametrize(("changes", "field", "message"), [
    pytest.param({"name": ""}, "name", ac.MESSAGES["name_required"], id="no-name"),
    pytest.param({"name": "x" * 201}, "name", "Name must be at most 200 characters.", id="long-name"),
    pytest.param({"api_key": ""}, "api_key", ac.MESSAGES["api_key_required"], id="no-key"),
    pytest.param({"api_key": "has space"}, "api_key", ac.MESSAGES["api_key_format"], id="bad-key"),
    pytest.param({"api_key": "x" * 4097}, "api_key", ac.MESSAGES["api_key_format"], id="long-key"),
    pytest.param({"auth_choice": "existing"}, "model_secret_id", ac.MESSAGES["secret_required"], id="no-secret"),
    pytest.param({"model": ""}, "model", ac.MESSAGES["model_required"], id="no-model"),
    pytest.param({"model_mode": "manual", "model_manual": "has space"}, "model", ac.MESSAGES["model_format"],
                 id="bad-model-id"),
    pytest.param({"configuration_json": "{"}, "configuration_json", ac.MESSAGES["json_invalid"], id="bad-json"),
    pytest.param({"model": "gpt-6-luna", "configuration_json": json.dumps({  # edited: kept as typed at submit
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-6-astra"}}},
        "tools": {"profile": "coding"}})}, "configuration_json", ac.MESSAGES["json_model"], id="json-model-mismatch"),
    pytest.param({"provider": "openai_compatible", "base_url": "not a url", "model_mode": "manual",
                  "model_manual": "gpt-6-astra"}, "base_url", ac.MESSAGES["base_url"], id="bad-base-url"),
    pytest.param({"files": {**ac.WORKSPACE_DEFAULTS, "SOUL.md": "x" * (16 * 1024 + 1)}}, "workspace_soul",
                 "A workspace file must be at most 16 KiB.", id="big-file"),
    pytest.param({"secret_bindings": {"OPENAI_API_KEY": SEC_A}}, "channels", ac.MESSAGES["binding"],
                 id="reserved-binding"),
])
def test_each_problem_lands_on_its_field(changes, field, message):
    errors = submit_errors(valid_form(**changes))
    assert message in errors.get(field, []), errors


@pytest.mark.parametrize(("changes", "field", "message"), [
    pytest.param({"name": "helper\x00"}, "name", "Null characters are not allowed.", id="nul-in-name"),
    pytest.param({"name": "help\u200ber"}, "name", "Name must not contain invisible or text-direction characters "
                 "(such as U+200B or U+202E).", id="invisible-name"),
    pytest.param({"configuration_json": '{"agents": {"defaults": {"model": {"primary": "openai/gpt-6-astra"}}}, '
                  '"ui": {"assistant": {"name": "a\\u0000b"}}}'}, "configuration_json", NUL_MESSAGE,
                 id="json-holds-nul"),
    pytest.param({"configuration_json": '{"agents": {"defaults": {"model": {"primary": "openai/gpt-6-astra"}}}, '
                  '"x": 1e400}'}, "configuration_json", NOT_FINITE_MESSAGE, id="json-number-out-of-range"),
    pytest.param({"files": {**ac.WORKSPACE_DEFAULTS, "USER.md": "me\x00"}}, "workspace_user",
                 "A workspace file must not contain NUL.", id="nul-in-file"),
    pytest.param({"secret_bindings": {"TEAM_TOKEN": "sec_not-an-id"}}, "channels", ac.MESSAGES["binding"],
                 id="binding-not-a-secret-id"),
    pytest.param({"plugins_json": "[]"}, "plugins", ac.MESSAGES["plugins_json"], id="selections-not-an-object"),
    pytest.param({"plugins_json": '{"has space": {"enabled": true}}'}, "plugins",
                 "Plugin keys must be qualified catalog ids.", id="selection-key"),
    pytest.param({"plugins_json": '{"occ-plugin:a": {"enabled": true, "toolDefaults": {"approval": "always"}}}'},
                 "plugins", "approval must be provider_default, all_actions, write_actions or none.",
                 id="selection-policy"),
    pytest.param({"plugin_approvers": "U" * 300}, "plugins", "At most 256 characters.", id="approver-too-long"),
])
def test_the_commands_rules_land_on_the_field_that_holds_them(changes, field, message):
    errors = submit_errors(valid_form(**changes))
    assert message in errors.get(field, []), errors


def test_a_post_holding_nul_is_read_without_a_rule():
    data = posted(valid_form())
    data["name"] = "helper\x00"
    assert AgentForm.choices_of(data).name == "helper\x00"


def test_the_commands_parts_are_typed_from_the_cleaned_data():
    form = valid_form(plugins_json='{"occ-plugin:a": {"enabled": true, "toolDefaults": {"approval": "none"}}}',
                      plugin_approvers="U456, U456 W789")
    submitted = submitted_form(form)
    assert submitted.cleaned_data["plugins"]["occ-plugin:a"].tool_defaults.approval == "none"
    command = submitted.provision_command(namespace_id="ns_x")
    assert [(a.channel, a.id) for a in command.plugin_approvers or []] == [("slack", "U456"), ("slack", "W789")]
    assert submitted_form(valid_form(plugin_approvers="")).provision_command(namespace_id="ns_x").plugin_approvers \
        is None


def test_all_problems_are_reported_at_once():
    errors = submit_errors(valid_form(name="", api_key="", model="", configuration_json="[]"))
    assert set(errors) == {"name", "api_key", "model", "configuration_json"}


def test_two_bindings_breaking_one_rule_say_it_once():
    errors = submit_errors(valid_form(secret_bindings={"OPENAI_API_KEY": SEC_A, "lower": SEC_B}))
    assert errors["channels"] == [ac.MESSAGES["binding"]]


def test_a_service_refusal_is_added_to_its_field():
    submitted = AgentSubmitForm(posted(valid_form()))
    assert submitted.is_valid()
    submitted.add_message("name", "taken")
    submitted.add_message("name", "taken")
    assert submitted.errors["name"] == ["taken"]
    assert not submitted.is_valid()


@pytest.mark.parametrize(("command", "path", "changes", "field"), [
    pytest.param(ProvisionWithModelKey, "/name", {}, "name", id="name"),
    pytest.param(ProvisionWithModelKey, "/configuration/values/channels/slack/botToken", {}, "channels",
                 id="a-channel-in-the-json"),
    pytest.param(ProvisionWithModelKey, "/configuration/secretBindings/TEAM_TOKEN/source/id", {}, "channels",
                 id="a-bound-secret"),
    pytest.param(ProvisionWithModelKey, "/configuration/values/gateway/tls", {}, "configuration_json",
                 id="the-json"),
    pytest.param(ProvisionWithModelKey, "/modelKey", {}, "api_key", id="the-typed-key"),
    pytest.param(ProvisionCommand, "/harnessAuth/source/id", {"auth_choice": "existing", "model_secret_id": SEC_A},
                 "model_secret_id", id="the-chosen-secret"),
    pytest.param(ProvisionWithModelKey, "/initialWorkspaceFiles/SOUL.md", {}, "workspace_soul", id="a-file"),
    pytest.param(ProvisionWithModelKey, "/plugins/occ-plugin:a/toolDefaults/approval", {}, "plugins",
                 id="a-selection"),
    pytest.param(ProvisionWithModelKey, "/pluginApprovers/0/id", {}, "plugins", id="an-approver"),
    pytest.param(ProvisionWithModelKey, "/requestId", {}, "__all__", id="no-field"),
    pytest.param(AgentDraftCreate, "/configuration/secretBindings/TEAM_TOKEN/source/id", {}, "channels",
                 id="draft-bound-secret"),
    pytest.param(AgentDraftCreate, "/harnessAuth/source/id", {}, "api_key", id="draft-key-secret"),
])
def test_a_service_refusal_lands_on_the_field_that_filled_its_place(command, path, changes, field):
    submitted = submitted_form(valid_form(**changes))
    submitted.refuse(InvalidRequest("Refused.", details=[Detail("INVALID_VALUE", path)]), command)
    assert dict(submitted.errors) == {field: ["Refused."]}


def test_a_refusal_with_a_next_step_is_said_once_on_its_field():
    submitted = submitted_form(valid_form())
    refusal = DependencyUnavailable("Slack is down.", code="CHANNEL_CREDENTIAL_UNAVAILABLE",
                                    details=[Detail("DEPENDENCY_UNAVAILABLE", "/configuration/values/channels/slack")])
    submitted.refuse(refusal, ProvisionWithModelKey)
    assert set(submitted.errors) == {"channels"}, "not again for the whole form (issue 27 item 3)"
    assert "Slack is down." not in str(submitted.errors)  # our words, never upstream text


def test_a_saved_secret_replaces_the_typed_key():
    saved = AgentSubmitForm(posted(valid_form(api_key="")), saved_secret_id=SEC_A)
    assert saved.is_valid(), saved.errors
    assert saved.choices.credential_secret_id == SEC_A
    assert valid_form(saved_secret_id=SEC_A).credential_secret_id == SEC_A
    chosen = valid_form(auth_choice="existing", model_secret_id=SEC_B, saved_secret_id=SEC_A)
    assert chosen.credential_secret_id == SEC_B


def test_a_driver_owned_gateway_key_is_refused_in_the_json():
    form = valid_form()
    doc = document(form)
    doc["gateway"] = {"port": 1}
    form.configuration_json = json.dumps(doc)
    assert "configuration_json" in submit_errors(form)


# --- the commands ---------------------------------------------------------------------------------


def test_the_provisioning_command_refers_to_secrets_and_carries_no_value():
    form = valid_form(auth_choice="existing", model_secret_id=SEC_A, secret_bindings={"TEAM_TOKEN": SEC_B})
    command = submitted_form(form).provision_command(namespace_id="ns_x")
    assert isinstance(command, ProvisionCommand)
    assert command.request_id == form.request_id
    assert command.execution_mode == "embedded"
    assert command.harness_auth == HarnessAuth(method="api_key", source=SecretRef(kind="secret", namespace_id="ns_x",
                                                                                  id=SEC_A))
    assert command.configuration.secret_bindings == {"TEAM_TOKEN": SecretBinding(
        source=SecretRef(kind="secret", namespace_id="ns_x", id=SEC_B), delivery=SecretDelivery(type="env"))}
    assert set(command.initial_workspace_files or {}) == {"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"}
    assert KEY not in command.model_dump_json()
    assert submitted_form(form).provision_command(namespace_id="ns_x") == command


def test_a_typed_key_is_the_commands_model_key_until_an_attempt_saved_it():
    typed = submitted_form(valid_form()).provision_command(namespace_id="ns_x")
    assert isinstance(typed, ProvisionWithModelKey)
    assert (typed.model_key, typed.harness_auth) == (KEY, None)
    saved = AgentSubmitForm(posted(valid_form(api_key="")), saved_secret_id=SEC_A)
    assert saved.is_valid(), saved.errors
    again = saved.provision_command(namespace_id="ns_x")
    assert isinstance(again, ProvisionWithModelKey)
    assert again.model_key is None  # the service finds the Secret by the request id


def test_granted_secrets_are_the_model_secret_and_each_bound_one_once():
    form = valid_form(secret_bindings={"A_TOKEN": SEC_B, "B_TOKEN": SEC_B})
    command = submitted_form(form).draft_command(namespace_id="ns_x", model_secret_id=SEC_A)
    assert agent_drafts._secret_ids(command) == [SEC_A, SEC_B]


@pytest.mark.parametrize(("agent_name", "expected"), [
    ("helper", "helper model credential"),
    ("", "Agent model credential"),
    ("x" * 200, "x" * (200 - len(" model credential")) + " model credential"),
])
def test_the_credential_secret_is_named_after_the_agent(agent_name, expected):
    assert ac.credential_secret_name(agent_name) == expected
    assert len(ac.credential_secret_name(agent_name)) <= 200
