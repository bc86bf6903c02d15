"""The Slack ChannelDriver against the loopback fake Slack (real HTTP): token checks before
provisioning and the directory lookup, with every error mapping, the budget and paging."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from occ.drivers.channels import channel_drivers, check_channel_credentials
from occ.drivers.channels.base import ChannelCredentialError, ChannelDirectoryError
from occ.drivers.channels.slack import SlackChannelDriver
from occ.errors import DetailCode
from tests.fakes.fake_slack import READ_METHODS, FakeSlack, _fake_slack_server, channel, fake_slack, user  # noqa: F401 (fixtures)

BOT = "xoxb-bot-token-CANARY-5d1e"
APP = "xapp-app-token-CANARY-77c2"
WORK_BOT = "xoxb-work-token-CANARY-0b9a"
SLACK = "/configuration/values/channels/slack"
# Room on top of a budget for a loaded 2-core machine (load average about 10); still well
# under the fake's 5 s stall, so "bounded by the budget, not by the server" stays proven.
LOADED_MACHINE_SECONDS = 3.0
ROOMY_BUDGET_SECONDS = 60.0


def env(name: str, **extra: Any) -> dict[str, Any]:
    return {"source": "env", "provider": "default", "id": name, **extra}


def slack_values(**overrides: Any) -> dict[str, Any]:
    slack = {"enabled": True, "mode": "socket", "appToken": env("SLACK_APP_TOKEN"),
             "botToken": env("SLACK_BOT_TOKEN"), **overrides}
    return {"channels": {"slack": {k: v for k, v in slack.items() if v is not None}}}


BINDINGS = {name: {"source": {"kind": "secret", "namespaceId": "ns_x", "id": f"sec_{name.lower()}"}}
            for name in ("SLACK_APP_TOKEN", "SLACK_BOT_TOKEN", "SLACK_WORK_BOT_TOKEN")}


class Secrets:
    """The admission helper's read_secret: values by env name, every read recorded."""

    def __init__(self, **values: str) -> None:
        self.values = {"SLACK_APP_TOKEN": APP, "SLACK_BOT_TOKEN": BOT, "SLACK_WORK_BOT_TOKEN": WORK_BOT, **values}
        self.reads: list[tuple[str, str]] = []

    def __call__(self, env_name: str, path: str) -> str:
        self.reads.append((env_name, path))
        return self.values[env_name]


@pytest.fixture
def slack(fake_slack: FakeSlack) -> FakeSlack:  # noqa: F811
    fake_slack.add_token(BOT, team_name="Acme")
    fake_slack.add_token(WORK_BOT, team_id="T0WORK01", bot_id="B0WORK01")
    return fake_slack


@pytest.fixture
def driver(slack: FakeSlack) -> SlackChannelDriver:
    # Tests of the budget build their own driver; for the rest the 8 s default would only race
    # the outcome on a loaded machine.
    return SlackChannelDriver(budget_seconds=ROOMY_BUDGET_SECONDS)


def check(driver: SlackChannelDriver, values: dict[str, Any], secrets: Secrets | None = None,
          bindings: dict[str, Any] | None = None) -> Secrets:
    secrets = secrets or Secrets()
    driver.check_credentials(values=values, secret_bindings=BINDINGS if bindings is None else bindings,
                             read_secret=secrets)
    return secrets


def refused(driver: SlackChannelDriver, values: dict[str, Any], secrets: Secrets | None = None,
            bindings: dict[str, Any] | None = None) -> ChannelCredentialError:
    with pytest.raises(ChannelCredentialError) as caught:
        check(driver, values, secrets, bindings)
    error = caught.value
    for token in (BOT, APP, WORK_BOT):
        assert token not in error.message
    return error


def assert_no_message_sent(slack: FakeSlack) -> None:
    assert set(slack.methods_called()) <= READ_METHODS
    assert all(r["token"] in ("xoxb-", "unknown", "none") for r in slack.requests), "only bot tokens go out"


# --- registration -----------------------------------------------------------------------------


def test_the_slack_driver_is_registered_at_import():
    driver = channel_drivers()["slack"]
    assert isinstance(driver, SlackChannelDriver)
    assert (driver.driver_id, driver.implementation) == ("slack-channel", "occ/slack-channel")


def test_the_registry_runs_the_slack_check(slack):
    secrets = Secrets()
    check_channel_credentials(values=slack_values(), secret_bindings=BINDINGS, read_secret=secrets)
    assert slack.methods_called() == ["auth.test"]
    with pytest.raises(ChannelCredentialError):
        check_channel_credentials(values=slack_values(botToken=BOT), secret_bindings=BINDINGS, read_secret=secrets)


# --- credential checks ------------------------------------------------------------------------


def test_a_bot_and_app_token_pair_passes_with_one_auth_test_and_no_message(driver, slack):
    secrets = check(driver, slack_values())
    assert sorted(secrets.reads) == [("SLACK_APP_TOKEN", SLACK + "/appToken"), ("SLACK_BOT_TOKEN", SLACK + "/botToken")]
    assert slack.methods_called() == ["auth.test"]
    assert slack.requests[0]["httpMethod"] == "POST"
    assert_no_message_sent(slack)


@pytest.mark.parametrize("values", [
    pytest.param({}, id="no-channels"),
    pytest.param({"channels": {"telegram": {"enabled": True}}}, id="no-slack"),
    pytest.param({"channels": "not-an-object"}, id="channels-not-object"),
    pytest.param(slack_values(enabled=False, botToken="xoxb-literal"), id="disabled"),
])
def test_absent_or_disabled_slack_is_not_checked(driver, slack, values):
    secrets = check(driver, values, bindings={})
    assert secrets.reads == []
    assert slack.requests == []


@pytest.mark.parametrize(("overrides", "path", "detail"), [
    pytest.param({"botToken": "xoxb-literal-CANARY"}, "/botToken", DetailCode.INVALID_VALUE, id="literal-token"),
    pytest.param({"botToken": None}, "/botToken", DetailCode.REQUIRED, id="bot-missing"),
    pytest.param({"appToken": None}, "/appToken", DetailCode.REQUIRED, id="app-missing-in-socket-mode"),
    pytest.param({"botToken": env("SLACK_BOT_TOKEN", provider="vault")}, "/botToken", DetailCode.INVALID_VALUE,
                 id="other-provider"),
    pytest.param({"botToken": {"source": "file", "id": "SLACK_BOT_TOKEN"}}, "/botToken", DetailCode.INVALID_VALUE,
                 id="file-source"),
    pytest.param({"botToken": env("SLACK_BOT_TOKEN", extra="x")}, "/botToken", DetailCode.INVALID_VALUE,
                 id="unknown-key"),
    pytest.param({"botToken": env("1SLACK")}, "/botToken", DetailCode.INVALID_VALUE, id="bad-env-name"),
    pytest.param({"botToken": env("OPENCLAW_GATEWAY_TOKEN")}, "/botToken", DetailCode.INVALID_VALUE,
                 id="reserved-env-name"),
    pytest.param({"botToken": env("SLACK_UNBOUND")}, "/botToken", DetailCode.REQUIRED, id="unbound"),
])
def test_binding_required(driver, slack, overrides, path, detail):
    error = refused(driver, slack_values(**overrides))
    assert (error.status, error.code) == (400, "CHANNEL_CREDENTIAL_BINDING_REQUIRED")
    assert [(d.code, d.path) for d in error.details] == [(detail, SLACK + path)]
    assert "CANARY" not in error.message
    assert slack.requests == [], "no network before every token is bound"


def test_binding_required_names_the_variable_to_bind(driver):
    error = refused(driver, slack_values(botToken=env("SLACK_UNBOUND")))
    assert "SLACK_UNBOUND" in error.message


def test_no_secret_is_read_until_every_token_is_bound(driver, slack):
    secrets = Secrets()
    refused(driver, slack_values(appToken=env("SLACK_UNBOUND")), secrets)
    assert secrets.reads == []


def test_http_mode_needs_no_app_token(driver, slack):
    secrets = check(driver, slack_values(mode="http", appToken=None, signingSecret=env("SLACK_SIGNING")))
    assert [name for name, _ in secrets.reads] == ["SLACK_BOT_TOKEN"]
    assert slack.methods_called() == ["auth.test"]


@pytest.mark.parametrize(("values", "path"), [
    pytest.param({"SLACK_APP_TOKEN": BOT}, "/appToken", id="bot-token-as-app-token"),
    pytest.param({"SLACK_BOT_TOKEN": APP}, "/botToken", id="app-token-as-bot-token"),
    pytest.param({"SLACK_BOT_TOKEN": "xoxp-user-token-CANARY"}, "/botToken", id="user-token-as-bot-token"),
])
def test_role_mismatch(driver, slack, values, path):
    error = refused(driver, slack_values(), Secrets(**values))
    assert (error.status, error.code) == (400, "CHANNEL_CREDENTIAL_ROLE_MISMATCH")
    assert [d.path for d in error.details] == [SLACK + path]
    assert "CANARY" not in error.message
    assert slack.requests == [], "no token is sent anywhere before its role is right"


@pytest.mark.parametrize(("script", "code", "status"), [
    pytest.param({"fail": "invalid_auth"}, "CHANNEL_CREDENTIAL_REJECTED", 400, id="invalid_auth"),
    pytest.param({"fail": "missing_scope"}, "CHANNEL_CREDENTIAL_REJECTED", 400, id="missing_scope"),
    pytest.param({"token": {"bot_id": None}}, "CHANNEL_CREDENTIAL_REJECTED", 400, id="not-a-bot"),
    pytest.param({"token": {"bot_id": "X123"}}, "CHANNEL_CREDENTIAL_REJECTED", 400, id="malformed-bot-id"),
    pytest.param({"unknown": True}, "CHANNEL_CREDENTIAL_REJECTED", 400, id="token-unknown-to-slack"),
    pytest.param({"fail": "no_team"}, "CHANNEL_CREDENTIAL_UNAVAILABLE", 503, id="no-team-id"),
    pytest.param({"fail": "ratelimited"}, "CHANNEL_CREDENTIAL_UNAVAILABLE", 503, id="http-429"),
    pytest.param({"fail": "http_500"}, "CHANNEL_CREDENTIAL_UNAVAILABLE", 503, id="http-500"),
    pytest.param({"fail": "bad_json"}, "CHANNEL_CREDENTIAL_UNAVAILABLE", 503, id="bad-json"),
    pytest.param({"fail": "redirect"}, "CHANNEL_CREDENTIAL_UNAVAILABLE", 503, id="redirect-refused"),
    pytest.param({"fail": "huge"}, "CHANNEL_CREDENTIAL_UNAVAILABLE", 503, id="body-over-2mb"),
    pytest.param({"fail": "unknown_error"}, "CHANNEL_CREDENTIAL_UNAVAILABLE", 503, id="unknown-slack-error"),
])
def test_bot_token_auth_test_outcomes(driver, slack, script, code, status):
    if "fail" in script:
        slack.fail("auth.test", script["fail"])
    if "token" in script:
        slack.add_token(BOT, **script["token"])
    if script.get("unknown"):
        slack.world.tokens.pop(BOT)
    error = refused(driver, slack_values())
    assert (error.status, error.code) == (status, code)
    assert [d.path for d in error.details] == [SLACK + "/botToken"]
    for slack_words in ("invalid_auth", "missing_scope", "fatal_error", "internal error"):
        assert slack_words not in error.message
    assert slack.methods_called() == ["auth.test"], "exactly one request: no redirect followed, no retry"
    assert_no_message_sent(slack)


def test_slack_unreachable_is_unavailable(slack):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    driver = SlackChannelDriver(base_url=f"http://127.0.0.1:{closed_port}/api/")
    error = refused(driver, slack_values())
    assert (error.status, error.code) == (503, "CHANNEL_CREDENTIAL_UNAVAILABLE")


def test_a_stalled_slack_costs_at_most_the_budget(slack):
    slack.world.stall_seconds = 5.0
    slack.fail("auth.test", "stall")
    driver = SlackChannelDriver(budget_seconds=0.5)
    started = time.monotonic()
    error = refused(driver, slack_values())
    assert error.code == "CHANNEL_CREDENTIAL_UNAVAILABLE"
    assert time.monotonic() - started < 0.5 + LOADED_MACHINE_SECONDS


def test_the_default_budget_is_eight_seconds():
    assert SlackChannelDriver().budget_seconds == 8.0


def test_named_accounts_are_merged_over_the_top_level_and_disabled_ones_skipped(driver, slack):
    values = slack_values(botToken=None, accounts={
        "work": {"botToken": env("SLACK_WORK_BOT_TOKEN")},
        "old": {"enabled": False, "botToken": "xoxb-literal-CANARY"},
    })
    secrets = check(driver, values)
    assert sorted(secrets.reads) == [
        ("SLACK_APP_TOKEN", SLACK + "/appToken"),  # inherited from the top level: it sits there
        ("SLACK_WORK_BOT_TOKEN", SLACK + "/accounts/work/botToken"),
    ]
    assert slack.methods_called() == ["auth.test"]


def test_an_account_error_points_into_the_account_with_escaped_keys(driver, slack):
    values = slack_values(accounts={"team/a~b": {"botToken": env("SLACK_UNBOUND")}})
    error = refused(driver, values)
    assert error.code == "CHANNEL_CREDENTIAL_BINDING_REQUIRED"
    assert [d.path for d in error.details] == [SLACK + "/accounts/team~1a~0b/botToken"]


def test_an_account_in_http_mode_skips_its_app_token(driver, slack):
    values = slack_values(appToken=None, accounts={"work": {"mode": "http", "botToken": env("SLACK_WORK_BOT_TOKEN")}})
    secrets = check(driver, values)
    assert [name for name, _ in secrets.reads] == ["SLACK_WORK_BOT_TOKEN"]


def test_an_account_with_a_rejected_bot_token_is_reported_at_its_own_pointer(driver, slack):
    slack.world.tokens.pop(WORK_BOT)
    values = slack_values(accounts={"main": {}, "work": {"botToken": env("SLACK_WORK_BOT_TOKEN")}})
    error = refused(driver, values)
    assert error.code == "CHANNEL_CREDENTIAL_REJECTED"
    assert [d.path for d in error.details] == [SLACK + "/accounts/work/botToken"]


def test_a_bot_token_shared_by_accounts_is_checked_once(driver, slack):
    values = slack_values(accounts={"a": {}, "b": {}})
    check(driver, values)
    assert slack.methods_called() == ["auth.test"]


# --- directory lookup -------------------------------------------------------------------------


def lookup_error(driver: SlackChannelDriver, **kwargs: Any) -> ChannelDirectoryError:
    with pytest.raises(ChannelDirectoryError) as caught:
        driver.lookup_directory(token=BOT, **kwargs)
    assert BOT not in caught.value.message
    return caught.value


def people(count: int, *, start: int = 1) -> list[dict[str, Any]]:
    return [user(f"U{n:07d}", f"person{n}", display_name=f"Person {n}") for n in range(start, start + count)]


def test_users_one_page_with_labels_skipping_deleted_and_malformed(driver, slack):
    slack.world.users = [
        user("U0000001", "alice", display_name="Alice A", real_name="Alice Anders"),
        user("W0000002", "bob", real_name="Bob Berg"),
        user("U0000003", "carol"),
        user("U0000004", "gone", deleted=True),
        {"id": "B0000005", "name": "a-bot"},
    ]
    page = driver.lookup_directory(token=BOT, kind="users")
    assert page.as_wire() == {
        "workspaceId": "T0FAKE01", "workspaceName": "Acme", "complete": True,
        "candidates": [{"id": "U0000001", "name": "alice", "displayName": "Alice A"},
                       {"id": "W0000002", "name": "bob", "displayName": "Bob Berg"},
                       {"id": "U0000003", "name": "carol"}],
    }
    listing = slack.requests[1]
    assert (listing["method"], listing["httpMethod"]) == ("users.list", "GET")
    assert listing["params"] == {"limit": "100", "team_id": "T0FAKE01"}
    assert_no_message_sent(slack)


def test_users_cursor_paging_without_a_query_reads_one_page(driver, slack):
    slack.world.users = people(7)
    slack.world.page_size = 3
    seen: list[str] = []
    cursor = None
    for expected_size, expected_complete in ((3, False), (3, False), (1, True)):
        page = driver.lookup_directory(token=BOT, kind="users", cursor=cursor)
        assert (len(page.candidates), page.complete) == (expected_size, expected_complete)
        assert (page.next_cursor is None) == expected_complete
        seen += [c.id for c in page.candidates]
        cursor = page.next_cursor
    assert seen == [f"U{n:07d}" for n in range(1, 8)]
    assert slack.methods_called().count("users.list") == 3


def test_a_query_scans_up_to_three_pages_and_filters_locally(driver, slack):
    slack.world.page_size = 2
    slack.world.users = [user("U0000001", "match-one"), user("U0000002", "other"),
                         user("U0000003", "other"), user("U0000004", "other"),
                         user("U0000005", "other"), user("U0000006", "MATCH-two"),
                         user("U0000007", "match-three"), user("U0000008", "other")]
    page = driver.lookup_directory(token=BOT, kind="users", query="  @Match ")
    assert [c.id for c in page.candidates] == ["U0000001", "U0000006"]
    assert page.next_cursor is not None
    assert page.complete is False
    listings = [r for r in slack.requests if r["method"] == "users.list"]
    assert [r["params"]["limit"] for r in listings] == ["100", "99", "99"]
    rest = driver.lookup_directory(token=BOT, kind="users", query="match", cursor=page.next_cursor)
    assert [c.id for c in rest.candidates] == ["U0000007"]
    assert rest.complete is True
    assert rest.next_cursor is None


@pytest.mark.parametrize(("query", "expected"), [
    pytest.param("u0000002", ["U0000002"], id="by-id"),
    pytest.param("zed", ["U0000002"], id="by-display-name"),
    pytest.param("ZEBEDEE", ["U0000002"], id="by-real-name-any-case"),
    pytest.param("@ann", ["U0000001"], id="by-name-with-at"),
    pytest.param("@", ["U0000001", "U0000002"], id="only-a-sigil-is-no-query"),
])
def test_query_matching(driver, slack, query, expected):
    slack.world.users = [user("U0000001", "ann"), user("U0000002", "zz", display_name="Zed", real_name="Zebedee")]
    page = driver.lookup_directory(token=BOT, kind="users", query=query)
    assert [c.id for c in page.candidates] == expected


def test_channels_public_and_private_without_archived(driver, slack):
    slack.world.channels = [channel("C0000001", "general"), channel("G0000002", "secret-team", private=True),
                            channel("C0000003", "old", archived=True), {"id": "D0000004", "name": "a-dm"}]
    page = driver.lookup_directory(token=BOT, kind="channels", query="#")
    assert [c.as_wire() for c in page.candidates] == [{"id": "C0000001", "name": "general"},
                                                      {"id": "G0000002", "name": "secret-team"}]
    listing = slack.requests[1]
    assert listing["method"] == "conversations.list"
    assert listing["params"] == {"limit": "100", "team_id": "T0FAKE01",
                                 "types": "public_channel,private_channel", "exclude_archived": "true"}


def test_archived_channels_are_skipped_even_when_slack_returns_them(driver, slack):
    slack.world.channels = [channel("C0000001", "general"), channel("C0000003", "old", archived=True)]
    page = driver.lookup_directory(token=BOT, kind="channels", query="#")
    assert [c.id for c in page.candidates] == ["C0000001"]


def test_ids_are_resolved_in_batches_and_unknown_or_malformed_ones_omitted(driver, slack):
    slack.world.users = people(8)
    wanted = ["U0000003", "U0000001", "U9999999", "not-an-id", "C0000001", "U0000001", "U0000004",
              "U0000005", "U0000006", "U0000007"]
    page = driver.lookup_directory(token=BOT, kind="users", ids=wanted)
    assert [c.id for c in page.candidates] == ["U0000003", "U0000001", "U0000004", "U0000005", "U0000006",
                                               "U0000007"]
    assert page.complete is True
    assert page.next_cursor is None
    infos = [r["params"]["user"] for r in slack.requests if r["method"] == "users.info"]
    assert sorted(infos) == sorted(["U0000003", "U0000001", "U9999999", "U0000004", "U0000005", "U0000006",
                                    "U0000007"])
    assert "users.list" not in slack.methods_called()


def test_ids_go_out_five_at_a_time(driver, slack):
    slack.world.users = people(12)
    slack.world.latency_seconds = 1.0  # each batch overlaps for a second, even when threads start late
    page = driver.lookup_directory(token=BOT, kind="users", ids=[f"U{n:07d}" for n in range(1, 13)])
    assert len(page.candidates) == 12
    assert slack.peak_concurrency("users.info") == 5


def test_channel_ids_use_conversations_info(driver, slack):
    slack.world.channels = [channel("C0000001", "general"), channel("G0000002", "private", private=True)]
    page = driver.lookup_directory(token=BOT, kind="channels", ids=["G0000002", "C0000404", "U0000001"])
    assert [c.as_wire() for c in page.candidates] == [{"id": "G0000002", "name": "private"}]
    assert [r["params"] for r in slack.requests if r["method"] == "conversations.info"] == [
        {"channel": "G0000002"}, {"channel": "C0000404"}]


@pytest.mark.parametrize(("method", "mode", "code", "status"), [
    pytest.param("auth.test", "invalid_auth", "CHANNEL_DIRECTORY_CREDENTIALS_REJECTED", 400, id="auth-invalid_auth"),
    pytest.param("users.list", "invalid_auth", "CHANNEL_DIRECTORY_CREDENTIALS_REJECTED", 400, id="list-invalid_auth"),
    pytest.param("users.list", "missing_scope", "CHANNEL_DIRECTORY_MISSING_SCOPE", 400, id="missing_scope"),
    pytest.param("users.list", "ratelimited", "CHANNEL_DIRECTORY_RATE_LIMITED", 429, id="http-429"),
    pytest.param("users.list", "ratelimited_body", "CHANNEL_DIRECTORY_RATE_LIMITED", 429, id="ratelimited-error"),
    pytest.param("users.list", "bad_json", "CHANNEL_DIRECTORY_INVALID_RESPONSE", 503, id="bad-json"),
    pytest.param("users.list", "not_object", "CHANNEL_DIRECTORY_INVALID_RESPONSE", 503, id="json-not-object"),
    pytest.param("users.list", "bad_shape", "CHANNEL_DIRECTORY_INVALID_RESPONSE", 503, id="members-not-list"),
    pytest.param("users.list", "huge", "CHANNEL_DIRECTORY_INVALID_RESPONSE", 503, id="body-over-2mb"),
    pytest.param("auth.test", "no_team", "CHANNEL_DIRECTORY_INVALID_RESPONSE", 503, id="no-team-id"),
    pytest.param("users.list", "http_500", "CHANNEL_DIRECTORY_UNAVAILABLE", 503, id="http-500"),
    pytest.param("users.list", "redirect", "CHANNEL_DIRECTORY_UNAVAILABLE", 503, id="redirect-refused"),
    pytest.param("users.list", "unknown_error", "CHANNEL_DIRECTORY_UNAVAILABLE", 503, id="unknown-slack-error"),
])
def test_directory_error_mapping(driver, slack, method, mode, code, status):
    slack.world.users = people(3)
    slack.fail(method, mode)
    error = lookup_error(driver, kind="users")
    assert (error.code, error.status) == (code, status)
    assert mode not in error.message
    assert slack.methods_called()[-1] == method, "nothing after the failure: no retry, no redirect"
    assert_no_message_sent(slack)


@pytest.mark.parametrize(("scopes", "kind", "code"), [
    pytest.param({"channels:read", "groups:read"}, "users", "CHANNEL_DIRECTORY_MISSING_SCOPE", id="no-users-read"),
    pytest.param({"users:read", "channels:read"}, "channels", "CHANNEL_DIRECTORY_MISSING_SCOPE", id="no-groups-read"),
])
def test_missing_scopes_of_the_token(driver, slack, scopes, kind, code):
    slack.add_token(BOT, scopes=frozenset(scopes))
    assert lookup_error(driver, kind=kind).code == code


def test_a_non_bot_token_is_rejected_before_any_listing(driver, slack):
    slack.add_token(BOT, bot_id=None)
    assert lookup_error(driver, kind="users").code == "CHANNEL_DIRECTORY_CREDENTIALS_REJECTED"
    assert slack.methods_called() == ["auth.test"]


def test_an_info_failure_other_than_not_found_fails_the_lookup(driver, slack):
    slack.world.users = people(3)
    slack.fail("users.info", "ratelimited")
    assert lookup_error(driver, kind="users", ids=["U0000001"]).code == "CHANNEL_DIRECTORY_RATE_LIMITED"


def test_a_stalled_listing_costs_at_most_the_budget(slack):
    slack.world.stall_seconds = 5.0
    slack.fail("users.list", "stall")
    started = time.monotonic()
    error = lookup_error(SlackChannelDriver(budget_seconds=0.5), kind="users")
    assert error.code == "CHANNEL_DIRECTORY_UNAVAILABLE"
    assert time.monotonic() - started < 0.5 + LOADED_MACHINE_SECONDS


def test_the_budget_covers_the_whole_lookup_not_each_call(slack):
    """auth.test takes 0.3 s and users.list 1.5 s: each fits a 1.6 s budget alone (a budget per
    call would complete the lookup), both do not. The fake holds users.list for its full 1.5 s,
    longer than the at most 1.3 s left, so the outcome does not depend on the machine's speed;
    auth.test has 1.3 s of room to answer on a loaded one."""
    slack.world.users = people(2)
    slack.world.method_latency_seconds = {"auth.test": 0.3, "users.list": 1.5}
    assert SlackChannelDriver(budget_seconds=30).lookup_directory(token=BOT, kind="users").complete
    started = time.monotonic()
    error = lookup_error(SlackChannelDriver(budget_seconds=1.6), kind="users")
    assert error.code == "CHANNEL_DIRECTORY_UNAVAILABLE"
    assert time.monotonic() - started < 1.6 + LOADED_MACHINE_SECONDS, "it stops at the budget"
    assert slack.methods_called()[-2:] == ["auth.test", "users.list"]


def test_channel_error_codes_are_in_the_closed_set():
    from occ.drivers.channels import base
    from occ.errors import ERROR_CODES, OccError

    codes = {value.code for value in vars(base).values()
             if isinstance(value, type) and issubclass(value, OccError) and value.code.startswith("CHANNEL_")}
    assert len(codes) == 9
    assert codes <= set(ERROR_CODES)
