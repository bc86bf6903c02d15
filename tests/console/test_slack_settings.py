"""The Slack modal's pure functions: exact ids, the hidden lists, the drawer checks, token
checks and Secret names, and the merge into the native Configuration values."""

from __future__ import annotations

import json

import pytest

from console.forms.agent_choices import dump_configuration, parse_json_object
from console.forms.slack import (
    BAD_CONFIGURATION,
    BAD_IDS,
    NO_CHANNEL,
    NO_DM_PEOPLE,
    NO_PEOPLE,
    SAME_SECRET,
    TOKEN_REQUIRED,
    WILDCARD_CHANNEL,
    WILDCARD_USER,
    Pick,
    SlackDraft,
    SlackInputError,
    add_picks,
    check_draft,
    check_token,
    free_secret_name,
    merge_slack_settings,
    parse_channel_id,
    parse_exact_ids,
    parse_picks,
    parse_user_id,
    pick_label,
    picks_json,
    read_modal,
    remove_pick,
    staged_draft,
)

ENV_BOT = {"source": "env", "provider": "default", "id": "SLACK_BOT_TOKEN"}
ENV_APP = {"source": "env", "provider": "default", "id": "SLACK_APP_TOKEN"}


def draft(**overrides) -> SlackDraft:
    base = {"bot_secret_id": "sec_bot", "app_secret_id": "sec_app", "channels": (Pick("C0GENERAL", "general"),),
            "users": (Pick("U0ALICE", "alice", "Alice"),), "dm_policy": "allowlist",
            "dm_users": (Pick("U0BOB", "bob"),)}
    return SlackDraft(**{**base, **overrides})


# --- ids ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("C0123ABCD", "C0123ABCD", id="public"),
    pytest.param("G0123ABCD", "G0123ABCD", id="private"),
    pytest.param("  c0123abcd ", "C0123ABCD", id="case-and-space"),
    pytest.param("channel:C0123ABCD", "C0123ABCD", id="channel-prefix"),
    pytest.param("team:T0ACME01:channel:C0123ABCD", "C0123ABCD", id="team-target"),
])
def test_accepted_channel_id_forms(text, expected):
    assert parse_channel_id(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("*", WILDCARD_CHANNEL, id="wildcard"),
    pytest.param("#general", BAD_IDS["channels"], id="a-name"),
    pytest.param("U0123ABCD", BAD_IDS["channels"], id="a-user"),
    pytest.param("D0123ABCD", BAD_IDS["channels"], id="a-dm"),
    pytest.param("C", BAD_IDS["channels"], id="too-short"),
    pytest.param("C01-23", BAD_IDS["channels"], id="punctuation"),
    pytest.param("team:T1:channel:U0123", BAD_IDS["channels"], id="team-user"),
])
def test_refused_channel_ids(text, message):
    with pytest.raises(SlackInputError) as caught:
        parse_channel_id(text)
    assert caught.value.message == message


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("U0123ABCD", "U0123ABCD", id="user"),
    pytest.param("W0123ABCD", "W0123ABCD", id="enterprise-user"),
    pytest.param("B0123ABCD", "B0123ABCD", id="bot"),
    pytest.param("user:U0123ABCD", "U0123ABCD", id="user-prefix"),
    pytest.param("slack:U0123ABCD", "U0123ABCD", id="slack-prefix"),
    pytest.param("<@U0123ABCD>", "U0123ABCD", id="mention"),
    pytest.param("<@U0123ABCD|alice>", "U0123ABCD", id="mention-with-name"),
    pytest.param("team:T0ACME01:user:U0123ABCD", "U0123ABCD", id="team-target"),
])
def test_accepted_user_id_forms(text, expected):
    assert parse_user_id(text) == expected


def test_a_wildcard_person_is_refused_with_the_everyone_hint():
    with pytest.raises(SlackInputError) as caught:
        parse_user_id("*")
    assert caught.value.message == WILDCARD_USER
    with pytest.raises(SlackInputError) as caught:
        parse_user_id("*", key="dm_users")
    assert caught.value.message == NO_DM_PEOPLE
    with pytest.raises(SlackInputError) as caught:
        parse_user_id("@alice")
    assert caught.value.message == BAD_IDS["users"]


def test_several_pasted_ids_are_all_valid_or_none():
    assert parse_exact_ids("channels", "C0AAA, channel:C0BBB\nC0AAA") == ["C0AAA", "C0BBB"]
    with pytest.raises(SlackInputError):
        parse_exact_ids("channels", "C0AAA nope")
    with pytest.raises(SlackInputError):
        parse_exact_ids("users", "   ")


# --- picks ----------------------------------------------------------------------------------


def test_picks_round_trip_through_the_hidden_json_and_are_checked_again():
    picks = (Pick("C0GENERAL", "general"), Pick("G0CORE", "core-team"))
    assert parse_picks("channels", picks_json(picks)) == picks
    assert parse_picks("channels", "") == ()
    assert parse_picks("channels", '[{"id": "C0X"}, {"id": "C0X", "name": "dup"}]') == (Pick("C0X"),)
    for tampered in ('[{"id": "U0ALICE"}]', '{"id": "C0X"}', "[1]", "not json", '[{"name": "general"}]'):
        with pytest.raises(SlackInputError) as caught:
            parse_picks("channels", tampered)
        assert caught.value.message == BAD_IDS["channels"]


def test_add_keeps_order_fills_unknown_names_and_remove_drops_one():
    current = (Pick("C0A"), Pick("C0B", "beta"))
    added = add_picks(current, [Pick("C0A", "alpha"), Pick("C0B", "other"), Pick("C0C", "gamma")])
    assert added == (Pick("C0A", "alpha"), Pick("C0B", "beta"), Pick("C0C", "gamma"))
    assert remove_pick(added, "C0B") == (Pick("C0A", "alpha"), Pick("C0C", "gamma"))


@pytest.mark.parametrize(("key", "pick", "label"), [
    pytest.param("channels", Pick("C0G", "general"), "#general", id="channel"),
    pytest.param("channels", Pick("C0G"), "C0G", id="unnamed-channel"),
    pytest.param("users", Pick("U0A", "alice", "Alice"), "Alice (@alice)", id="person"),
    pytest.param("users", Pick("U0A", "alice"), "@alice", id="handle-only"),
    pytest.param("dm_users", Pick("U0A"), "U0A", id="unnamed-person"),
])
def test_chip_labels(key, pick, label):
    assert pick_label(key, pick) == label


# --- reading the modal and the staged state ---------------------------------------------------


def test_read_modal_reports_a_tampered_list_and_keeps_the_rest():
    read = read_modal({"bot_secret_id": "sec_b", "channels_json": '[{"id": "C0G", "name": "general"}]',
                       "users_json": '[{"id": "nope"}]', "channel_access": "bogus", "dm_policy": "open"})
    assert read.draft.channels == (Pick("C0G", "general"),)
    assert read.draft.users == ()
    assert read.draft.channel_access == "selected"
    assert read.draft.require_mention is False  # an unchecked box is not posted
    assert read.errors == {"users": [BAD_IDS["users"]]}


def test_staged_state_round_trips_without_secret_values():
    staged = draft(channel_access="everyone", require_mention=False, dm_policy="pairing")
    form = {"slack_state": staged.state_json(), "secret_binding__SLACK_BOT_TOKEN": "sec_bot",
            "secret_binding__SLACK_APP_TOKEN": "sec_app"}
    assert staged_draft(form) == staged
    assert "sec_" not in staged.state_json()
    assert staged_draft({}) is None
    assert staged_draft({"slack_state": "{broken"}) is None
    assert staged_draft({"slack_state": '{"channels": [{"id": "nope"}]}'}) is None


# --- the drawer checks ------------------------------------------------------------------------


@pytest.mark.parametrize(("overrides", "expected"), [
    pytest.param({}, {}, id="complete"),
    pytest.param({"channels": ()}, {"channels": [NO_CHANNEL]}, id="no-channel"),
    pytest.param({"users": ()}, {"users": [NO_PEOPLE]}, id="specific-people-none-chosen"),
    pytest.param({"users": (), "channel_access": "everyone"}, {}, id="everyone-needs-no-people"),
    pytest.param({"dm_users": ()}, {"dm_users": [NO_DM_PEOPLE]}, id="allowlist-without-people"),
    pytest.param({"dm_users": (), "dm_policy": "pairing"}, {}, id="pairing-without-people"),
    pytest.param({"dm_users": (), "dm_policy": "disabled"}, {}, id="disabled"),
    pytest.param({"dm_users": (), "dm_policy": SlackDraft().dm_policy}, {}, id="the-default-policy-needs-no-people"),
    pytest.param({"dm_policy": "whatever"}, {"dm_policy": ["Choose a direct-message policy."]}, id="bad-policy"),
    pytest.param({"bot_secret_id": "", "app_secret_id": ""},
                 {"bot_secret_id": [TOKEN_REQUIRED["bot"]], "app_secret_id": [TOKEN_REQUIRED["app"]]},
                 id="both-tokens-required"),
    pytest.param({"app_secret_id": "sec_bot"}, {"app_secret_id": [SAME_SECRET]}, id="one-secret-for-both"),
])
def test_check_draft(overrides, expected):
    assert check_draft(draft(**overrides)) == expected


# --- tokens -----------------------------------------------------------------------------------


def test_tokens_must_carry_their_prefix_and_messages_never_hold_the_value():
    assert check_token("bot", "  xoxb-CANARY-1  ") == "xoxb-CANARY-1"
    assert check_token("app", "xapp-CANARY-2") == "xapp-CANARY-2"
    for role, value in (("bot", "xapp-CANARY-3"), ("app", "xoxb-CANARY-4"), ("bot", "")):
        with pytest.raises(SlackInputError) as caught:
            check_token(role, value)
        assert "CANARY" not in caught.value.message
    with pytest.raises(SlackInputError) as caught:
        check_token("bot", "xapp-CANARY-3")
    assert "starts with xoxb-" in caught.value.message


def test_secret_names_follow_the_agent_and_avoid_taken_ones():
    assert free_secret_name("bot", "Support", []) == "Support Slack bot token"
    assert free_secret_name("app", "", []) == "Slack app token"
    taken = ["Support Slack bot token", "Support Slack bot token (2)"]
    assert free_secret_name("bot", "Support", taken) == "Support Slack bot token (3)"
    long_name = free_secret_name("bot", "x" * 300, [])
    assert len(long_name) <= 200
    assert long_name.endswith(" Slack bot token")
    assert free_secret_name("bot", "Tab\there", []) == "Tabhere Slack bot token"


# --- the Configuration ------------------------------------------------------------------------


def test_parse_configuration_json_accepts_only_objects():
    assert parse_json_object('{"a": 1}') == {"a": 1}
    for text in ("", "[]", "{", '{"a": NaN}', None, "null"):
        assert parse_json_object(text) is None
    assert BAD_CONFIGURATION.startswith("Enter a valid Configuration JSON object")


def test_merge_writes_the_e2e_slack_shape_and_keeps_other_keys():
    values = {"agents": {"defaults": {"model": {"primary": "openai/gpt-5"}}}, "plugins": {"allow": ["memory"]}}
    merged = merge_slack_settings(values, draft())
    assert merged["agents"] == values["agents"]
    assert merged["channels"]["slack"] == {
        "enabled": True, "mode": "socket", "botToken": ENV_BOT, "appToken": ENV_APP, "groupPolicy": "allowlist",
        "channels": {"C0GENERAL": {"enabled": True, "requireMention": True, "users": ["U0ALICE"]}},
        "dmPolicy": "allowlist", "allowFrom": ["U0BOB"],
    }
    assert merged["plugins"] == {"allow": ["memory", "slack"], "entries": {"slack": {"enabled": True}}}
    assert values == {"agents": {"defaults": {"model": {"primary": "openai/gpt-5"}}},
                      "plugins": {"allow": ["memory"]}}, "the input is not changed"
    assert json.loads(dump_configuration(merged)) == merged
    assert dump_configuration(merged).startswith('{\n  "agents"')


def test_merge_for_everyone_omits_users_and_an_open_policy_allows_anyone():
    merged = merge_slack_settings({}, draft(channel_access="everyone", require_mention=False, dm_policy="open"))
    slack = merged["channels"]["slack"]
    assert slack["channels"] == {"C0GENERAL": {"enabled": True, "requireMention": False}}
    assert slack["dmPolicy"] == "open"
    assert slack["allowFrom"] == ["*"]


def test_merge_replaces_the_channel_set_but_keeps_native_keys_of_kept_channels():
    values = {"channels": {"telegram": {"enabled": False}, "slack": {
        "historyLimit": 20, "allowFrom": ["U0OLD"],
        "channels": {"C0GENERAL": {"systemPrompt": "Be brief.", "users": ["U0OLD"]}, "C0DROPPED": {}}}},
        "plugins": {"entries": {"slack": {"config": {"x": 1}}, "memory": {"enabled": True}}}}
    merged = merge_slack_settings(values, draft(dm_policy="pairing", dm_users=()))
    slack = merged["channels"]["slack"]
    assert merged["channels"]["telegram"] == {"enabled": False}
    assert slack["historyLimit"] == 20
    assert slack["channels"] == {"C0GENERAL": {"systemPrompt": "Be brief.", "users": ["U0ALICE"], "enabled": True,
                                               "requireMention": True}}
    assert "allowFrom" not in slack, "pairing with nobody chosen leaves the runtime's pairing store alone"
    assert merged["plugins"]["entries"] == {"slack": {"config": {"x": 1}, "enabled": True},
                                            "memory": {"enabled": True}}


def test_merge_with_a_disabled_policy_leaves_allow_from_untouched():
    merged = merge_slack_settings({"channels": {"slack": {"allowFrom": ["U0KEEP"]}}}, draft(dm_policy="disabled"))
    assert merged["channels"]["slack"]["allowFrom"] == ["U0KEEP"]
    assert merged["channels"]["slack"]["dmPolicy"] == "disabled"


def test_merge_survives_non_object_sections():
    merged = merge_slack_settings({"channels": [], "plugins": "nope"}, draft())
    assert merged["channels"]["slack"]["enabled"] is True
    assert merged["plugins"] == {"entries": {"slack": {"enabled": True}}}


def test_the_merged_document_passes_provisioning_validation():
    """What Apply stages is what admission accepts: values + the two env bindings."""
    from occ.commands.provisioning import ProvisionCommand
    from occ.ids import IdPrefix, new_id
    from occ.services.provisioning import provision_plan

    namespace_id = new_id(IdPrefix.NAMESPACE)
    bot, app, model_key = (new_id(IdPrefix.SECRET) for _ in range(3))

    def source(secret_id: str) -> dict:
        return {"source": {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}}

    for staged in (draft(), draft(channel_access="everyone", dm_policy="open")):
        values = merge_slack_settings({"agents": {"defaults": {"model": {"primary": "openai/gpt-5"}}}}, staged)
        plan = provision_plan(ProvisionCommand.model_validate({
            "requestId": "req_3f1d2c4e-8a9b-4c0d-9e1f-2a3b4c5d6e7f", "name": "slack-agent",
            "configuration": {"kind": "agent", "values": values,
                              "secretBindings": {"SLACK_BOT_TOKEN": source(bot), "SLACK_APP_TOKEN": source(app)}},
            "harnessAuth": {"method": "api_key", **source(model_key)},
        }), namespace_id=namespace_id)
        assert plan.bindings == {"SLACK_BOT_TOKEN": bot, "SLACK_APP_TOKEN": app}
        assert plan.plan.configuration.values["channels"]["slack"] == values["channels"]["slack"]
