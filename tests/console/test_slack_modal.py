"""The Slack setup modal of the Create Agent form, through the console's URLs with CSRF on:
the card, the modal, tokens saved as Secrets, directory search against the loopback fake
Slack (real HTTP), chips and exact ids, Apply staging the form, and Cancel."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.urls import reverse

from console.forms.slack import (
    BAD_CONFIGURATION,
    BAD_IDS,
    NO_CHANNEL,
    NO_DM_PEOPLE,
    NO_PEOPLE,
    TOKEN_REQUIRED,
    WILDCARD_CHANNEL,
    Pick,
    SlackDraft,
)
from console.views.slack import (
    CAN_SEARCH,
    DIRECTORY_BY_STATUS,
    DIRECTORY_MESSAGES,
    NO_BOT_TOKEN,
    SECRET_UNAVAILABLE,
)
from occ.commands.secrets import SecretCreate
from occ.models import AuditEvent, Namespace, Secret
from occ.services.secrets import secret_create, secret_value_use
from tests.console.conftest import ConsoleClient, fragment_root
from tests.factories import grant, human
from tests.fakes.fake_slack import READ_METHODS, FakeSlack, _fake_slack_server, channel, fake_slack, user  # noqa: F401

BOT_TOKEN = "xoxb-CANARY-console-bot-5c2e91"
APP_TOKEN = "xapp-CANARY-console-app-0b7d44"
CANARIES = (BOT_TOKEN, APP_TOKEN, "CANARY")
CONFIGURATION = {"agents": {"defaults": {"model": {"primary": "openai/gpt-5"}}}}


# --- fixtures and helpers -------------------------------------------------------------------


@pytest.fixture
def namespace(ready_namespace) -> Namespace:
    return ready_namespace


@pytest.fixture
def slack(fake_slack: FakeSlack) -> FakeSlack:  # noqa: F811
    fake_slack.add_token(BOT_TOKEN, team_id="T0ACME01", team_name="Acme")
    fake_slack.world.channels = [channel("C0GENERAL", "general"), channel("C0RANDOM", "random"),
                                 channel("G0CORE", "core-team", private=True)]
    fake_slack.world.users = [user("U0ALICE", "alice", display_name="Alice"), user("U0BOB", "bob")]
    return fake_slack


@pytest.fixture
def bot_secret(console_actor, namespace) -> Secret:
    return secret_create(actor=console_actor, namespace_id=namespace.id,
                         command=SecretCreate(name="existing bot", value=BOT_TOKEN))


@pytest.fixture
def app_secret(console_actor, namespace) -> Secret:
    return secret_create(actor=console_actor, namespace_id=namespace.id,
                         command=SecretCreate(name="existing app", value=APP_TOKEN))


def url(name: str, namespace: Namespace) -> str:
    return reverse(f"console:slack-{name}", args=[namespace.id])


def text(response) -> str:
    body = response.content.decode()
    for canary in CANARIES:
        assert canary not in body, "a token value came back in a response"
    return body


def hidden(body: str, name: str) -> str:
    match = re.search(rf'<input type="hidden"[^>]*name="{name}" value="([^"]*)"', body)
    assert match, f"no hidden input {name}"
    return html.unescape(match.group(1))


def textarea(body: str, element_id: str) -> str:
    match = re.search(rf'<textarea[^>]*id="{element_id}"[^>]*>(.*?)</textarea>', body, re.S)
    assert match, f"no textarea #{element_id}"
    return html.unescape(match.group(1))


def triggers(response) -> dict[str, Any]:
    return json.loads(response.headers.get("HX-Trigger", "{}"))


def toasts(response) -> list[str]:
    return [toast["text"] for toast in triggers(response).get("occ:toast", {}).get("messages", [])]


def picks(*items: tuple[str, ...]) -> str:
    return json.dumps([dict(zip(("id", "name", "display"), item, strict=False)) for item in items])


def complete_modal(bot: Secret, app: Secret, **overrides: str) -> dict[str, str]:
    """What Apply posts: the modal's fields and the Create form's."""
    return {"bot_secret_id": bot.id, "app_secret_id": app.id, "channels_json": picks(("C0GENERAL", "general")),
            "channel_access": "selected", "users_json": picks(("U0ALICE", "alice", "Alice")),
            "require_mention": "on", "dm_policy": "allowlist", "dm_users_json": picks(("U0BOB", "bob")),
            "name": "Support", "configuration_json": json.dumps(CONFIGURATION), "agent_name": "Support",
            **overrides}


# --- the card -------------------------------------------------------------------------------


def test_the_card_says_not_configured_and_opens_the_modal_with_the_form(namespace):
    request = RequestFactory().get("/")
    body = render_to_string("console/components/slack_card.html", {"namespace": namespace}, request=request)
    assert fragment_root(body) == "section#channels-card"
    assert "Slack: not configured" in body
    assert ">Configure Slack</button>" in body
    assert f'hx-post="{url("modal", namespace)}"' in body
    for attribute in ('hx-include="#create-agent-form"', 'hx-target="#modal-root"', 'hx-swap="innerHTML"',
                      "data-opens-modal"):
        assert attribute in body
    assert "secret_binding__" not in body


def test_a_configured_card_carries_the_bindings_and_the_state(namespace):
    staged = SlackDraft(bot_secret_id="sec_b", app_secret_id="sec_a",
                        channels=(Pick("C0GENERAL", "general"), Pick("C0RANDOM", "random")), channel_access="everyone")
    body = render_to_string("console/components/slack_card.html", {"namespace": namespace, "slack": staged},
                            request=RequestFactory().get("/"))
    assert "Slack: configured" in body
    assert "#general, #random" in body
    assert ">Edit Slack</button>" in body
    assert hidden(body, "secret_binding__SLACK_BOT_TOKEN") == "sec_b"
    assert hidden(body, "secret_binding__SLACK_APP_TOKEN") == "sec_a"
    assert json.loads(hidden(body, "slack_state"))["channelAccess"] == "everyone"


def staged_form(bot: str = "sec_b", app: str = "sec_a", **values: Any) -> dict[str, str]:
    """The Create form as the card left it after Apply: the JSON with Slack, the card's bindings and state."""
    document = {**CONFIGURATION, "channels": {"slack": {"enabled": True, "mode": "socket", "botToken": {
        "source": "env", "provider": "default", "id": "SLACK_BOT_TOKEN"}}},
        "plugins": {"entries": {"slack": {"enabled": True}}}, **values}
    return {"name": "Support", "configuration_json": json.dumps(document),
            "secret_binding__SLACK_BOT_TOKEN": bot, "secret_binding__SLACK_APP_TOKEN": app,
            "slack_state": json.dumps({"channels": [{"id": "C0GENERAL", "name": "general"}]})}


def card_of(body: str) -> str:
    match = re.search(r'<section [^>]*id="channels-card".*?</section>', body, re.S)
    assert match, "no Channels card"
    return match.group(0)


def test_remove_takes_slack_out_of_the_json_the_card_and_the_bindings(console, namespace):
    response = console.hx_post(reverse("console:agent-new-form", args=[namespace.id]),
                               {**staged_form(), "changed": "remove_slack"})
    body = text(response)
    card = card_of(body)
    assert 'hx-swap-oob="true"' in card
    assert "Slack: not configured" in card
    assert 'name="secret_binding__SLACK' not in body
    assert 'name="slack_state"' not in body
    assert "Remove Slack" not in card
    values = json.loads(textarea(body, "configuration-json"))
    assert values == CONFIGURATION, "channels.slack and the Slack plugin entry are gone, the rest stays"


def test_a_configured_card_offers_remove(namespace):
    staged = SlackDraft(bot_secret_id="sec_b", app_secret_id="sec_a", channels=(Pick("C0GENERAL", "general"),))
    body = render_to_string("console/components/slack_card.html", {"namespace": namespace, "slack": staged},
                            request=RequestFactory().get("/"))
    assert re.search(r'<button [^>]*id="remove-slack"[^>]*hx-vals=\'\{"changed": "remove_slack"\}\'', body)


def test_the_card_follows_the_json_when_slack_is_deleted_there(console, namespace):
    """One source: the card says what the Configuration JSON says, and drops the staged tokens
    once the JSON no longer enables Slack."""
    form = staged_form()
    form["configuration_json"] = json.dumps(CONFIGURATION)
    response = console.hx_post(reverse("console:agent-new-form", args=[namespace.id]),
                               {**form, "changed": "configuration_json"})
    body = text(response)
    assert fragment_root(body) == "section#channels-card"
    assert "Slack: not configured" in card_of(body)
    assert 'name="secret_binding__SLACK' not in body
    assert 'id="configuration-json"' not in body, "the JSON being typed is not swapped under the cursor"


def test_slack_written_by_hand_in_the_json_shows_on_the_card(console, namespace):
    form = staged_form()
    del form["slack_state"]
    response = console.hx_post(reverse("console:agent-new-form", args=[namespace.id]),
                               {**form, "changed": "configuration_json"})
    card = card_of(text(response))
    assert "Slack: set in the Configuration JSON" in card
    assert "Remove Slack" in card


def test_the_json_field_tells_the_card_when_it_changes(console, namespace):
    body = text(console.get(reverse("console:agent-new", args=[namespace.id])))
    assert re.search(r'<textarea id="configuration-json"[^>]*hx-trigger="change"[^>]*'
                     r'hx-vals=\'\{"changed": "configuration_json"\}\'', body)


# --- opening the modal ----------------------------------------------------------------------


def test_the_modal_opens_as_a_dialog_with_the_contract_controls(console, namespace, slack):
    response = console.hx_post(url("modal", namespace), {"name": "Support", "configuration_json": "{}"})
    body = text(response)
    assert response.status_code == 200
    assert fragment_root(body) == "dialog#slack-modal"
    assert re.search(r'<dialog data-modal id="slack-modal"[^>]*aria-labelledby="slack-modal-title"', body)
    assert '<h2 id="slack-modal-title">Slack setup</h2>' in body
    for element_id, label in (("slack-bot-token", "Slack bot token"), ("slack-app-token", "Slack app token"),
                              ("slack-channel-search", "Search channels"), ("slack-channel-id", "Channel ID"),
                              ("slack-channel-access", "Who can use the agent in these channels?"),
                              ("slack-user-search", "Search people"), ("slack-require-mention", "Require a mention"),
                              ("slack-dm-policy", "Direct-message policy")):
        assert f'<label for="{element_id}">{label}</label>' in body
        assert f'id="{element_id}"' in body
    assert re.search(r'type="password" id="slack-bot-token" name="bot_token" value=""', body)
    for button in ("Save bot token", "Save app token", "Add channel ID", "Apply channel settings"):
        assert f">{button}</button>" in body
    assert re.search(r'<button type="button" data-close-modal>Cancel</button>', body), "Cancel only closes"
    assert '<option value="selected" selected>Specific people</option>' in body
    assert '<option value="everyone">Everyone in these channels</option>' in body
    assert '<option value="pairing" selected>' in body, "new setups default to pairing, which needs no ids"
    assert re.search(r'id="slack-require-mention" name="require_mention" value="on" checked', body)
    assert NO_BOT_TOKEN in body
    assert 'hx-trigger="input changed delay:300ms, search"' in body
    assert hidden(body, "agent_name") == "Support"
    assert slack.requests == [], "opening the modal asks Slack nothing"


def test_the_modal_reopens_with_the_staged_selections(console, namespace, bot_secret, app_secret, slack):
    staged = SlackDraft(bot_secret_id=bot_secret.id, app_secret_id=app_secret.id,
                        channels=(Pick("C0GENERAL", "general"),), channel_access="everyone",
                        require_mention=False, dm_policy="open")
    response = console.hx_post(url("modal", namespace), {
        "slack_state": staged.state_json(), "secret_binding__SLACK_BOT_TOKEN": bot_secret.id,
        "secret_binding__SLACK_APP_TOKEN": app_secret.id})
    body = text(response)
    assert f'<option value="{bot_secret.id}" selected>existing bot · {bot_secret.id}</option>' in body
    assert f'<option value="{app_secret.id}" selected>existing app · {app_secret.id}</option>' in body
    assert 'aria-label="Remove #general"' in body
    assert '<option value="everyone" selected>' in body
    assert '<option value="open" selected>' in body
    assert not re.search(r'id="slack-require-mention"[^>]*checked', body)
    assert CAN_SEARCH in body


def test_the_modal_url_without_htmx_is_a_full_page(console, namespace):
    for response in (console.get(url("modal", namespace)), console.post(url("modal", namespace), {"name": "x"})):
        body = text(response)
        assert response.status_code == 200
        assert body.lstrip().lower().startswith("<!doctype html>")
        assert 'id="slack-modal"' in body
        assert "Slack setup" in body


def test_an_unknown_namespace_is_unavailable(console, namespace):
    response = console.hx_post(reverse("console:slack-modal", args=["ns_00000000-0000-4000-8000-000000000000"]))
    assert response.status_code == 404
    assert "Namespace is unavailable" in response.content.decode()


# --- tokens ---------------------------------------------------------------------------------


def test_a_bot_token_is_saved_as_a_secret_at_once_and_never_rendered(console, namespace):
    response = console.hx_post(url("token", namespace), {"role": "bot", "bot_token": BOT_TOKEN,
                                                         "agent_name": "Support"})
    body = text(response)
    assert response.status_code == 200
    assert fragment_root(body) == "div#slack-bot-token-field"
    secret = Secret.objects.get(namespace=namespace)
    assert secret.name == "Support Slack bot token"
    assert secret_value_use(secret=secret, consumer=lambda value: value) == BOT_TOKEN
    assert "Bot token saved as Secret Support Slack bot token" in body
    assert f'<option value="{secret.id}" selected>' in body
    assert re.search(r'type="password" id="slack-bot-token" name="bot_token" value=""', body)
    assert re.search(r'<p id="slack-directory-status"[^>]*hx-swap-oob="true">' + re.escape(CAN_SEARCH), body)
    assert toasts(response) == [], "the field's status line says it; a toast would repeat it"
    assert AuditEvent.objects.filter(action="openclaw.secrets.create", resource_id=secret.id).exists()
    assert BOT_TOKEN not in json.dumps(list(AuditEvent.objects.values("details")))


def test_an_app_token_is_saved_with_a_free_name(console, namespace, console_actor):
    secret_create(actor=console_actor, namespace_id=namespace.id,
                  command=SecretCreate(name="Slack app token", value="xapp-other"))
    response = console.hx_post(url("token", namespace), {"role": "app", "app_token": APP_TOKEN, "agent_name": ""})
    body = text(response)
    assert fragment_root(body) == "div#slack-app-token-field"
    saved = Secret.objects.get(namespace=namespace, name="Slack app token (2)")
    assert "App token saved as Secret Slack app token (2)" in body
    assert f'<option value="{saved.id}" selected>' in body
    assert "slack-directory-status" not in body, "only the bot token enables search"


@pytest.mark.parametrize(("role", "value", "message"), [
    pytest.param("bot", APP_TOKEN, "A Slack bot token starts with xoxb-.", id="app-token-in-bot-field"),
    pytest.param("app", BOT_TOKEN, "A Slack app-level token starts with xapp-.", id="bot-token-in-app-field"),
    pytest.param("bot", "   ", "Enter the Slack bot token before saving it.", id="empty"),
])
def test_a_wrong_token_is_refused_nothing_saved_and_the_input_cleared(console, namespace, role, value, message):
    response = console.hx_post(url("token", namespace), {"role": role, f"{role}_token": value})
    body = text(response)
    assert response.status_code == 200
    assert fragment_root(body) == f"div#slack-{role}-token-field"
    assert message in body
    assert re.search(r'class="field-errors" id="slack-' + role + '-token-field-errors" role="alert"', body)
    assert re.search(rf'type="password" id="slack-{role}-token" name="{role}_token" value=""', body)
    assert not Secret.objects.exists()


def test_a_token_save_without_htmx_renders_the_page(console, namespace):
    response = console.post(url("token", namespace), {"role": "bot", "bot_token": BOT_TOKEN})
    body = text(response)
    assert body.lstrip().lower().startswith("<!doctype html>")
    secret = Secret.objects.get(namespace=namespace)
    assert f'<option value="{secret.id}" selected>' in body
    assert "Bot token saved as Secret Slack bot token" in body


def test_a_token_cannot_be_saved_in_a_namespace_that_is_not_ready(console, namespace):
    Namespace.objects.filter(id=namespace.id).update(status="provisioning")
    response = console.hx_post(url("token", namespace), {"role": "bot", "bot_token": BOT_TOKEN})
    body = text(response)
    assert "The token was not saved." in body
    assert not Secret.objects.exists()


def test_token_endpoints_refuse_get_and_unknown_roles(console, namespace):
    assert console.get(url("token", namespace)).status_code == 405
    response = console.hx_post(url("token", namespace), {"role": "user", "user_token": BOT_TOKEN})
    assert response.status_code == 400
    text(response)
    assert not Secret.objects.exists()


def test_the_directory_hint_follows_the_bot_token_select(console, namespace, bot_secret):
    chosen = console.hx_post(url("status", namespace), {"bot_secret_id": bot_secret.id})
    assert fragment_root(text(chosen)) == "p#slack-directory-status"
    assert CAN_SEARCH in chosen.content.decode()
    cleared = console.hx_post(url("status", namespace), {"bot_secret_id": ""})
    assert NO_BOT_TOKEN in text(cleared)
    page = console.post(url("status", namespace), {"bot_secret_id": ""})
    assert text(page).lstrip().lower().startswith("<!doctype html>")


# --- the directory --------------------------------------------------------------------------


def test_search_without_a_bot_token_explains_and_asks_slack_nothing(console, namespace, slack):
    response = console.hx_post(url("search", namespace), {"list": "channels", "query": "gen"})
    body = text(response)
    assert fragment_root(body) == "div#slack-channels-results"
    assert NO_BOT_TOKEN in body
    assert slack.requests == []


def test_channel_search_finds_channels_through_slack(console, namespace, slack, bot_secret):
    response = console.hx_post(url("search", namespace), {"list": "channels", "query": "#gen",
                                                          "bot_secret_id": bot_secret.id})
    body = text(response)
    assert response.status_code == 200
    assert fragment_root(body) == "div#slack-channels-results"
    assert ">Add #general</button>" in body
    assert "Add #random" not in body
    vals = re.search(r'hx-vals="([^"]*)"[^>]*>Add #general<', body)
    assert json.loads(html.unescape(vals.group(1))) == {"list": "channels", "op": "add", "id": "C0GENERAL",
                                                        "name": "general"}
    assert "More results" not in body
    assert set(slack.methods_called()) == {"auth.test", "conversations.list"}
    assert set(slack.methods_called()) <= READ_METHODS
    assert AuditEvent.objects.filter(action="openclaw.channels.directory.lookup", resource_id=bot_secret.id).exists()
    assert not Secret.objects.exclude(id=bot_secret.id).exists()


def test_people_search_shows_handles_and_display_names(console, namespace, slack, bot_secret):
    response = console.hx_post(url("search", namespace), {"list": "users", "query": "",
                                                          "bot_secret_id": bot_secret.id})
    body = text(response)
    assert fragment_root(body) == "div#slack-users-results"
    assert ">Add @alice</button>" in body
    assert '<span class="hint">Alice</span>' in body
    assert ">Add @bob</button>" in body
    dm = console.hx_post(url("search", namespace), {"list": "dm_users", "query": "bob",
                                                    "bot_secret_id": bot_secret.id})
    assert fragment_root(text(dm)) == "div#slack-dm-users-results"
    assert ">Add @bob</button>" in dm.content.decode()
    assert "Add @alice" not in dm.content.decode()


def test_results_page_with_the_provider_cursor(console, namespace, slack, bot_secret):
    slack.world.page_size = 2
    slack.world.channels += [channel("C0FOURTH", "fourth"), channel("C0FIFTH", "fifth")]
    first = text(console.hx_post(url("search", namespace), {"list": "channels", "bot_secret_id": bot_secret.id}))
    assert re.findall(r">Add (#[\w-]+)</button>", first) == ["#general", "#random"]
    more = re.search(r'hx-vals="([^"]*)"[^>]*>More results</button>', first)
    assert more, "a next page is offered"
    vals = json.loads(html.unescape(more.group(1)))
    assert vals["list"] == "channels"
    assert vals["cursor"]
    second = text(console.hx_post(url("search", namespace), {**vals, "bot_secret_id": bot_secret.id}))
    assert fragment_root(second) == "div#slack-channels-results"
    assert re.findall(r">Add (#[\w-]+)</button>", second) == ["#core-team", "#fourth"]
    cursors = [r["params"].get("cursor") for r in slack.requests if r["method"] == "conversations.list"]
    assert cursors == [None, vals["cursor"]]
    third_vals = json.loads(html.unescape(re.search(r'hx-vals="([^"]*)"[^>]*>More results', second).group(1)))
    third = text(console.hx_post(url("search", namespace), {**third_vals, "bot_secret_id": bot_secret.id}))
    assert re.findall(r">Add (#[\w-]+)</button>", third) == ["#fifth"]
    assert "More results" not in third


@pytest.mark.parametrize(("mode", "code", "upstream"), [
    pytest.param("invalid_auth", "CHANNEL_DIRECTORY_CREDENTIALS_REJECTED", "invalid_auth", id="rejected"),
    pytest.param("missing_scope", "CHANNEL_DIRECTORY_MISSING_SCOPE", "missing_scope", id="scope"),
    pytest.param("ratelimited", "CHANNEL_DIRECTORY_RATE_LIMITED", "ratelimited", id="rate-limited"),
    pytest.param("http_500", "CHANNEL_DIRECTORY_UNAVAILABLE", "internal error", id="unavailable"),
    pytest.param("bad_json", "CHANNEL_DIRECTORY_INVALID_RESPONSE", "members", id="invalid-response"),
])
def test_directory_errors_are_shown_in_our_words(console, namespace, slack, bot_secret, mode, code, upstream):
    slack.fail("conversations.list", mode)
    response = console.hx_post(url("search", namespace), {"list": "channels", "query": "gen",
                                                          "bot_secret_id": bot_secret.id})
    body = text(response)
    assert response.status_code == 200, "the results region shows the error in place"
    assert fragment_root(body) == "div#slack-channels-results"
    assert f'<p class="field-errors" role="alert">{html.escape(DIRECTORY_MESSAGES[code])}</p>' in body
    assert upstream not in body
    assert "Add #" not in body


def test_a_missing_bot_secret_and_a_missing_directory_are_explained(console, namespace, slack, bot_secret, monkeypatch):
    gone = console.hx_post(url("search", namespace), {"list": "users", "query": "a",
                                                      "bot_secret_id": "sec_00000000-0000-4000-8000-000000000000"})
    assert html.escape(DIRECTORY_BY_STATUS[404]) in text(gone)
    monkeypatch.setattr("occ.services.channel_directory.channel_drivers", lambda: {})
    none = console.hx_post(url("search", namespace), {"list": "users", "query": "a", "bot_secret_id": bot_secret.id})
    assert html.escape(DIRECTORY_BY_STATUS[501]) in text(none)
    assert slack.requests == []


def test_a_person_without_agent_create_rights_cannot_search(namespace, slack, bot_secret):
    reader = human("reader")
    grant(reader, "read:namespace", "read:secret", namespace=namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    response = client.hx_post(url("search", namespace), {"list": "channels", "bot_secret_id": bot_secret.id})
    assert html.escape(DIRECTORY_BY_STATUS[403]) in text(response)
    assert slack.requests == []
    saved = client.hx_post(url("token", namespace), {"role": "bot", "bot_token": BOT_TOKEN})
    assert "You may not create Secrets in this Namespace." in text(saved)
    assert list(Secret.objects.values_list("id", flat=True)) == [bot_secret.id]


# --- chips and exact ids ----------------------------------------------------------------------


def test_adding_and_removing_chips_rewrites_the_hidden_list(console, namespace):
    added = console.hx_post(url("pick", namespace), {"list": "channels", "op": "add", "id": "C0GENERAL",
                                                     "name": "general", "channels_json": picks(("C0RANDOM", "random"))})
    body = text(added)
    assert fragment_root(body) == "div#slack-channels-selection"
    assert json.loads(hidden(body, "channels_json")) == [{"id": "C0RANDOM", "name": "random"},
                                                         {"id": "C0GENERAL", "name": "general"}]
    assert 'aria-label="Remove #general"' in body
    assert 'aria-label="Remove #random"' in body
    removed = console.hx_post(url("pick", namespace), {"list": "channels", "op": "remove", "id": "C0RANDOM",
                                                       "channels_json": hidden(body, "channels_json")})
    assert json.loads(hidden(text(removed), "channels_json")) == [{"id": "C0GENERAL", "name": "general"}]
    person = console.hx_post(url("pick", namespace), {"list": "users", "op": "add", "id": "U0ALICE", "name": "alice",
                                                      "display": "Alice"})
    body = text(person)
    assert fragment_root(body) == "div#slack-users-selection"
    assert "Alice (@alice)" in body
    assert 'aria-label="Remove @alice"' in body
    assert not Secret.objects.exists()


def test_an_exact_channel_id_is_named_through_slack_when_a_bot_token_is_chosen(console, namespace, slack, bot_secret):
    response = console.hx_post(url("pick", namespace), {"list": "channels", "op": "add_exact",
                                                        "exact_id": "channel:c0general",
                                                        "bot_secret_id": bot_secret.id})
    body = text(response)
    assert json.loads(hidden(body, "channels_json")) == [{"id": "C0GENERAL", "name": "general"}]
    assert 'id="slack-channel-id" name="exact_id" value=""' in body, "the entry clears after adding"
    assert "conversations.info" in slack.methods_called()


def test_exact_ids_without_a_bot_token_stay_unnamed(console, namespace, slack):
    response = console.hx_post(url("pick", namespace), {"list": "dm_users", "op": "add_exact",
                                                        "exact_id": "<@U0ALICE>, U0BOB"})
    body = text(response)
    assert fragment_root(body) == "div#slack-dm-users-selection"
    assert json.loads(hidden(body, "dm_users_json")) == [{"id": "U0ALICE"}, {"id": "U0BOB"}]
    assert 'aria-label="Remove U0ALICE"' in body
    assert slack.requests == []


@pytest.mark.parametrize(("exact", "message"), [
    pytest.param("#general", BAD_IDS["channels"], id="a-name"),
    pytest.param("*", WILDCARD_CHANNEL, id="wildcard"),
    pytest.param("U0ALICE", BAD_IDS["channels"], id="a-person"),
])
def test_a_bad_exact_id_is_explained_and_kept_for_correction(console, namespace, exact, message):
    response = console.hx_post(url("pick", namespace), {"list": "channels", "op": "add_exact", "exact_id": exact,
                                                        "channels_json": picks(("C0RANDOM", "random"))})
    body = text(response)
    assert response.status_code == 200
    assert html.escape(message) in body
    assert f'id="slack-channel-id" name="exact_id" value="{html.escape(exact)}"' in body
    assert json.loads(hidden(body, "channels_json")) == [{"id": "C0RANDOM", "name": "random"}]


def test_pick_refuses_unknown_lists_and_answers_a_page_without_htmx(console, namespace):
    assert console.hx_post(url("pick", namespace), {"list": "teams", "op": "add", "id": "C0X"}).status_code == 400
    page = console.post(url("pick", namespace), {"list": "channels", "op": "add", "id": "C0GENERAL", "name": "general"})
    body = text(page)
    assert body.lstrip().lower().startswith("<!doctype html>")
    assert 'aria-label="Remove #general"' in body
    refused = text(console.post(url("pick", namespace), {"list": "users", "op": "add_exact", "exact_id": "@bob"}))
    assert html.escape(BAD_IDS["users"]) in refused
    assert 'id="slack-user-id" name="exact_id" value="@bob"' in refused


# --- apply ----------------------------------------------------------------------------------


def test_apply_stages_the_card_and_the_configuration_and_closes_the_modal(console, namespace, bot_secret, app_secret):
    before = set(Secret.objects.values_list("id", flat=True))
    response = console.hx_post(url("apply", namespace), {**complete_modal(bot_secret, app_secret),
                                                         "bot_token": BOT_TOKEN, "api_key": "sk-CANARY-model"})
    body = text(response)
    assert response.status_code == 200
    assert fragment_root(body) == "section#channels-card"
    assert re.search(r'<section [^>]*id="channels-card"[^>]*hx-swap-oob="true"', body)
    assert "Slack: configured" in body
    assert "#general" in body
    assert hidden(body, "secret_binding__SLACK_BOT_TOKEN") == bot_secret.id
    assert hidden(body, "secret_binding__SLACK_APP_TOKEN") == app_secret.id
    state = json.loads(hidden(body, "slack_state"))
    assert state["channels"] == [{"id": "C0GENERAL", "name": "general"}]
    assert re.search(r'id="configuration-json-field"[^>]*hx-swap-oob="true"', body)
    configuration = textarea(body, "configuration-json")
    assert configuration.startswith('{\n  "agents"'), "pretty-printed with an indent of 2"
    values = json.loads(configuration)
    assert values["agents"] == CONFIGURATION["agents"]
    assert values["channels"]["slack"] == {
        "enabled": True, "mode": "socket", "groupPolicy": "allowlist",
        "botToken": {"source": "env", "provider": "default", "id": "SLACK_BOT_TOKEN"},
        "appToken": {"source": "env", "provider": "default", "id": "SLACK_APP_TOKEN"},
        "channels": {"C0GENERAL": {"enabled": True, "requireMention": True, "users": ["U0ALICE"]}},
        "dmPolicy": "allowlist", "allowFrom": ["U0BOB"],
    }
    assert values["plugins"] == {"entries": {"slack": {"enabled": True}}}
    assert "occ:close-modal" in triggers(response)
    assert response.headers["HX-Reswap"] == "none"
    assert toasts(response) == ["Slack settings staged in the form. They are saved when you create the Agent."]
    assert "sk-CANARY" not in body
    assert set(Secret.objects.values_list("id", flat=True)) == before, "Apply creates nothing"


def test_apply_passes_with_the_modals_default_dm_policy(console, namespace, bot_secret, app_secret):
    """Issue 27 item 10: the default DM policy used to be an allowlist with nobody on it, which
    Apply refused. Post the policy the modal renders as selected, with no DM people."""
    opened = text(console.hx_post(url("modal", namespace), {"name": "Support", "configuration_json": "{}"}))
    default = re.search(r'<select id="slack-dm-policy".*?<option value="([^"]+)" selected>', opened, re.S)
    assert default, "the modal selects a DM policy"
    response = console.hx_post(url("apply", namespace), complete_modal(
        bot_secret, app_secret, dm_policy=default.group(1), dm_users_json=""))
    body = text(response)
    assert "occ:close-modal" in triggers(response), body[:500]
    assert json.loads(textarea(body, "configuration-json"))["channels"]["slack"]["dmPolicy"] == "pairing"


def test_apply_for_everyone_without_a_mention(console, namespace, bot_secret, app_secret):
    response = console.hx_post(url("apply", namespace), complete_modal(
        bot_secret, app_secret, channel_access="everyone", users_json="", require_mention="", dm_policy="disabled",
        dm_users_json=""))
    slack = json.loads(textarea(text(response), "configuration-json"))["channels"]["slack"]
    assert slack["channels"] == {"C0GENERAL": {"enabled": True, "requireMention": False}}
    assert slack["dmPolicy"] == "disabled"


@pytest.mark.parametrize(("overrides", "field_id", "message"), [
    pytest.param({"channels_json": ""}, "slack-channels-errors", NO_CHANNEL, id="no-channel"),
    pytest.param({"users_json": ""}, "slack-users-errors", NO_PEOPLE, id="specific-people-none"),
    pytest.param({"dm_users_json": ""}, "slack-dm-users-errors", NO_DM_PEOPLE, id="dm-allowlist-empty"),
    pytest.param({"bot_secret_id": ""}, "slack-bot-token-field-errors", TOKEN_REQUIRED["bot"], id="no-bot-token"),
    pytest.param({"app_secret_id": ""}, "slack-app-token-field-errors", TOKEN_REQUIRED["app"], id="no-app-token"),
    pytest.param({"bot_secret_id": "sec_00000000-0000-4000-8000-000000000000"}, "slack-bot-token-field-errors",
                 SECRET_UNAVAILABLE, id="unknown-secret"),
    pytest.param({"configuration_json": "[1, 2]"}, "slack-form-errors", BAD_CONFIGURATION, id="not-an-object"),
    pytest.param({"configuration_json": "{"}, "slack-form-errors", BAD_CONFIGURATION, id="not-json"),
])
def test_apply_errors_re_render_the_modal_next_to_the_field(console, namespace, bot_secret, app_secret,
                                                            overrides, field_id, message):
    response = console.hx_post(url("apply", namespace), {**complete_modal(bot_secret, app_secret, **overrides),
                                                         "bot_token": BOT_TOKEN})
    body = text(response)
    assert response.status_code == 200
    assert fragment_root(body) == "div#slack-modal-body"
    found = re.search(rf'id="{field_id}"[^>]*>(.*?)</(?:ul|div)>', body, re.S)
    assert found, f"no errors at #{field_id}"
    assert html.escape(message) in found.group(1)
    assert "HX-Trigger" not in response.headers or "occ:close-modal" not in triggers(response)
    assert "channels-card" not in body
    if "channels_json" not in overrides:
        assert 'aria-label="Remove #general"' in body, "the selections are kept"
    assert re.search(r'type="password" id="slack-bot-token" name="bot_token" value=""', body)


def test_apply_with_nothing_chosen_lists_every_problem(console, namespace):
    response = console.hx_post(url("apply", namespace), {"configuration_json": "{}", "dm_policy": "allowlist"})
    body = text(response)
    for message in (TOKEN_REQUIRED["bot"], TOKEN_REQUIRED["app"], NO_CHANNEL):
        assert html.escape(message) in body
    assert html.escape(NO_DM_PEOPLE) in body


def test_apply_without_htmx_shows_the_staged_result_on_a_page(console, namespace, bot_secret, app_secret):
    response = console.post(url("apply", namespace), complete_modal(bot_secret, app_secret))
    body = text(response)
    assert body.lstrip().lower().startswith("<!doctype html>")
    assert "Slack: configured" in body
    staged = re.search(r'<pre id="slack-configuration-json">(.*?)</pre>', body, re.S)
    assert json.loads(html.unescape(staged.group(1)))["channels"]["slack"]["botToken"]["id"] == "SLACK_BOT_TOKEN"
    invalid = console.post(url("apply", namespace), {"configuration_json": "{}"})
    assert 'id="slack-modal"' in text(invalid)
    assert html.escape(NO_CHANNEL) in invalid.content.decode()


# --- the whole flow, and Cancel -----------------------------------------------------------------


def test_a_person_saves_tokens_picks_and_applies(console, namespace, slack):
    form = {"name": "Support", "configuration_json": json.dumps(CONFIGURATION)}
    text(console.hx_post(url("modal", namespace), form))
    bot = text(console.hx_post(url("token", namespace), {"role": "bot", "bot_token": BOT_TOKEN,
                                                         "agent_name": "Support"}))
    bot_id = re.search(r'<option value="(sec_[^"]+)" selected>', bot).group(1)
    app = text(console.hx_post(url("token", namespace), {"role": "app", "app_token": APP_TOKEN,
                                                         "agent_name": "Support"}))
    app_id = re.search(r'<option value="(sec_[^"]+)" selected>', app).group(1)
    results = text(console.hx_post(url("search", namespace), {"list": "channels", "query": "general",
                                                              "bot_secret_id": bot_id}))
    add = json.loads(html.unescape(re.search(r'hx-vals="([^"]*)"[^>]*>Add #general<', results).group(1)))
    channels = text(console.hx_post(url("pick", namespace), add))
    people = text(console.hx_post(url("pick", namespace), {"list": "users", "op": "add_exact", "exact_id": "U0ALICE",
                                                           "bot_secret_id": bot_id}))
    assert "Alice (@alice)" in people
    applied = console.hx_post(url("apply", namespace), {
        **form, "agent_name": "Support", "bot_secret_id": bot_id, "app_secret_id": app_id,
        "channels_json": hidden(channels, "channels_json"), "users_json": hidden(people, "users_json"),
        "require_mention": "on", "channel_access": "selected", "dm_policy": "pairing"})
    body = text(applied)
    assert "Slack: configured" in body
    assert "#general" in body
    assert sorted(Secret.objects.values_list("name", flat=True)) == ["Support Slack app token",
                                                                     "Support Slack bot token"]
    reopened = text(console.hx_post(url("modal", namespace), {
        **form, "slack_state": hidden(body, "slack_state"),
        "secret_binding__SLACK_BOT_TOKEN": hidden(body, "secret_binding__SLACK_BOT_TOKEN"),
        "secret_binding__SLACK_APP_TOKEN": hidden(body, "secret_binding__SLACK_APP_TOKEN")}))
    assert 'aria-label="Remove #general"' in reopened
    assert 'aria-label="Remove @alice"' in reopened
    assert f'<option value="{bot_id}" selected>' in reopened


def test_cancel_discards_the_selections_but_the_saved_secrets_stay(console, namespace):
    """Cancel only closes the dialog (no request); reopening from the unchanged form starts
    over, while the Secrets saved meanwhile remain ordinary, selectable Secrets."""
    form = {"name": "Support", "configuration_json": "{}"}
    opened = text(console.hx_post(url("modal", namespace), form))
    assert re.search(r'<button type="button" data-close-modal>Cancel</button>', opened)
    text(console.hx_post(url("token", namespace), {"role": "bot", "bot_token": BOT_TOKEN, "agent_name": "Support"}))
    text(console.hx_post(url("pick", namespace), {"list": "channels", "op": "add", "id": "C0GENERAL"}))
    reopened = text(console.hx_post(url("modal", namespace), form))
    secret = Secret.objects.get(namespace=namespace)
    assert secret.name == "Support Slack bot token"
    assert f'<option value="{secret.id}">Support Slack bot token · {secret.id}</option>' in reopened
    assert not re.search(r'<option value="sec_[^"]+" selected>', reopened), "no Secret chosen after Cancel"
    assert "Remove #" not in reopened
    assert NO_BOT_TOKEN in reopened
