"""POST /namespaces/{ns}/channel-directory/lookup, end to end: the API, IAM, the SecretDriver
and the real Slack driver speaking HTTP to the loopback fake Slack."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest

from occ.commands.secrets import SecretCreate
from occ.drivers.channels import channel_drivers
from occ.models import AccessBinding, AuditEvent, AuditKind, Secret
from occ.services.secrets import runtime_credential_ensure, secret_create
from tests.conftest import ApiClient
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, grant, key_for, service_principal
from tests.fakes.fake_slack import READ_METHODS, FakeSlack, _fake_slack_server, channel, fake_slack, user  # noqa: F401 (fixtures)

TOKEN = "xoxb-directory-CANARY-3f9a17"
MISSING_SEC = "sec_00000000-0000-4000-8000-000000000000"


def lookup_path(namespace_id: str) -> str:
    return f"/namespaces/{namespace_id}/channel-directory/lookup"


@pytest.fixture(autouse=True)
def _roomy_budget(monkeypatch):
    """The 8 s budget only races the outcome of a test on a loaded machine; the test of the
    budget sets a short one."""
    monkeypatch.setattr(channel_drivers()["slack"], "budget_seconds", 60.0)


@pytest.fixture
def slack(fake_slack: FakeSlack) -> FakeSlack:  # noqa: F811
    fake_slack.add_token(TOKEN, team_id="T0ACME01", team_name="Acme")
    fake_slack.world.users = [user(f"U{n:07d}", f"person{n}", display_name=f"Person {n}") for n in range(1, 8)]
    fake_slack.world.users.append(user("U0000099", "gone", deleted=True))
    fake_slack.world.channels = [channel("C0000001", "general"), channel("G0000002", "core-team", private=True),
                                 channel("C0000003", "attic", archived=True)]
    return fake_slack


@pytest.fixture
def token_secret(admin_actor, ready_namespace) -> Secret:
    return secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                         command=SecretCreate(name="slack-bot", value=TOKEN))


@pytest.fixture
def lookup(api, ready_namespace, token_secret):
    def _lookup(client: ApiClient | None = None, namespace_id: str | None = None, **body: Any):
        body.setdefault("secretId", token_secret.id)
        return (client or api).post(lookup_path(namespace_id or ready_namespace.id), body)
    return _lookup


def everything_recorded() -> str:
    """Audit rows as text, to prove the token is in none of them."""
    return json.dumps(list(AuditEvent.objects.values("action", "details", "resource_id")), default=str)


def assert_no_message_sent(slack: FakeSlack) -> None:
    assert set(slack.methods_called()) <= READ_METHODS


# --- answers ----------------------------------------------------------------------------------


def test_users_first_page_and_the_secret_use_is_audited(lookup, slack, token_secret, caplog):
    with caplog.at_level(logging.DEBUG):
        response = lookup(kind="users")
    assert response.status == 200, response.body
    assert response.data == {
        "workspaceId": "T0ACME01", "workspaceName": "Acme", "complete": True,
        "candidates": [{"id": f"U{n:07d}", "name": f"person{n}", "displayName": f"Person {n}"} for n in range(1, 8)],
    }
    event = AuditEvent.objects.get(action="openclaw.channels.directory.lookup")
    assert (event.kind, event.resource_kind, event.resource_id) == (AuditKind.ACCESS, "secret", token_secret.id)
    assert {k: v for k, v in event.details.items() if not k.startswith("__")} == {
        "channel": "slack", "kind": "users", "byIds": False}
    assert TOKEN not in json.dumps(response.body)
    assert TOKEN not in everything_recorded()
    assert TOKEN not in caplog.text
    assert_no_message_sent(slack)


def test_channels_with_cursor_paging(lookup, slack):
    slack.world.channels = [channel(f"C{n:07d}", f"room-{n}") for n in range(1, 6)]
    slack.world.page_size = 2
    first = lookup(kind="channels")
    assert first.status == 200, first.body
    assert [c["id"] for c in first.data["candidates"]] == ["C0000001", "C0000002"]
    assert first.data["complete"] is False
    assert first.data["nextCursor"]
    second = lookup(kind="channels", cursor=first.data["nextCursor"])
    assert [c["id"] for c in second.data["candidates"]] == ["C0000003", "C0000004"]
    third = lookup(kind="channels", cursor=second.data["nextCursor"])
    assert [c["id"] for c in third.data["candidates"]] == ["C0000005"]
    assert third.data["complete"] is True
    assert "nextCursor" not in third.data


def test_private_channels_are_listed_and_archived_ones_not(lookup, slack):
    response = lookup(kind="channels")
    assert [c["name"] for c in response.data["candidates"]] == ["general", "core-team"]


def test_a_query_filters_across_provider_pages(lookup, slack):
    slack.world.page_size = 2  # pages: persons 1-2, 3-4, 5-6, 7 and a deleted one
    first = lookup(kind="users", query="@Person 6")
    assert first.status == 200, first.body
    assert [c["id"] for c in first.data["candidates"]] == ["U0000006"]
    assert first.data["complete"] is False
    assert slack.methods_called().count("users.list") == 3
    rest = lookup(kind="users", query="@Person 6", cursor=first.data["nextCursor"])
    assert rest.data == {"workspaceId": "T0ACME01", "workspaceName": "Acme", "candidates": [], "complete": True}


def test_ids_resolve_labels_and_omit_unknown_ones(lookup, slack, token_secret):
    response = lookup(kind="users", ids=["U0000002", "U0000404", "U0000001", "not-an-id"])
    assert response.status == 200, response.body
    assert [c["id"] for c in response.data["candidates"]] == ["U0000002", "U0000001"]
    assert response.data["complete"] is True
    event = AuditEvent.objects.get(action="openclaw.channels.directory.lookup")
    assert event.details["byIds"] is True


def test_the_installation_lists_slack_among_provisioning_channels(api):
    capabilities = api.get("/installation").data["capabilities"]
    assert capabilities["agentProvisioning"] == {"executionModes": ["embedded"], "channels": ["slack"]}


# --- request validation -----------------------------------------------------------------------


@pytest.mark.parametrize(("body", "path"), [
    pytest.param({"kind": "users", "ids": ["U0000001"], "query": "a"}, "/ids", id="ids-with-query"),
    pytest.param({"kind": "users", "ids": ["U0000001"], "cursor": "abc"}, "/ids", id="ids-with-cursor"),
    pytest.param({"kind": "users", "ids": [f"U{n:07d}" for n in range(21)]}, "/ids", id="too-many-ids"),
    pytest.param({"kind": "groups"}, "/kind", id="unknown-kind"),
    pytest.param({"kind": "users", "token": TOKEN}, "/token", id="unknown-field"),
    pytest.param({"kind": "users", "query": "q" * 201}, "/query", id="query-too-long"),
])
def test_invalid_requests_read_nothing(lookup, slack, body, path):
    before = AuditEvent.objects.count()
    response = lookup(**body)
    assert response.status == 400, response.body
    assert response.error_code == "INVALID_REQUEST"
    assert path in [d["path"] for d in response.body["error"]["details"]]
    assert slack.requests == []
    assert AuditEvent.objects.count() == before
    assert TOKEN not in json.dumps(response.body)


# --- error mapping end to end -----------------------------------------------------------------


@pytest.mark.parametrize(("method", "mode", "status", "code"), [
    pytest.param("auth.test", "invalid_auth", 400, "CHANNEL_DIRECTORY_CREDENTIALS_REJECTED", id="rejected"),
    pytest.param("users.list", "missing_scope", 400, "CHANNEL_DIRECTORY_MISSING_SCOPE", id="missing-scope"),
    pytest.param("users.list", "ratelimited", 429, "CHANNEL_DIRECTORY_RATE_LIMITED", id="rate-limited"),
    pytest.param("users.list", "bad_json", 503, "CHANNEL_DIRECTORY_INVALID_RESPONSE", id="invalid-response"),
    pytest.param("users.list", "http_500", 503, "CHANNEL_DIRECTORY_UNAVAILABLE", id="unavailable"),
])
def test_slack_failures_map_to_directory_errors(lookup, slack, method, mode, status, code, caplog):
    slack.fail(method, mode)
    with caplog.at_level(logging.DEBUG):
        response = lookup(kind="users")
    assert (response.status, response.error_code) == (status, code)
    text = json.dumps(response.body)
    assert TOKEN not in text
    assert mode not in text
    assert TOKEN not in caplog.text
    assert TOKEN not in everything_recorded()


def test_a_user_token_is_not_a_usable_bot_token(lookup, slack):
    slack.add_token(TOKEN, bot_id=None)
    response = lookup(kind="channels")
    assert (response.status, response.error_code) == (400, "CHANNEL_DIRECTORY_CREDENTIALS_REJECTED")
    assert slack.methods_called() == ["auth.test"]


def test_a_stalled_slack_answers_within_the_budget(lookup, slack, monkeypatch):
    monkeypatch.setattr(channel_drivers()["slack"], "budget_seconds", 0.5)
    slack.world.stall_seconds = 5.0
    slack.fail("users.list", "stall")
    started = time.monotonic()
    response = lookup(kind="users")
    assert (response.status, response.error_code) == (503, "CHANNEL_DIRECTORY_UNAVAILABLE")
    # Bounded by the 0.5 s budget, not the 5 s stall, with 3 s of room for a loaded machine.
    assert time.monotonic() - started < 0.5 + 3.0


# --- authorization ----------------------------------------------------------------------------


@pytest.fixture
def caller(ready_namespace):
    """A service principal in the Namespace with exactly the given grants: (permission, kind, id) or permission."""
    def _make(*grants: str | tuple[str, str, str]) -> ApiClient:
        principal = service_principal(f"caller-{AccessBinding.objects.count()}", namespace=ready_namespace)
        for spec in grants:
            if isinstance(spec, tuple):
                grant(principal, spec[0], namespace=ready_namespace, resource_kind=spec[1], resource_id=spec[2])
            else:
                grant(principal, spec, namespace=ready_namespace)
        return ApiClient(key_for(principal, namespace=ready_namespace))
    return _make


def test_agent_create_and_operate_on_the_exact_secret_suffice(lookup, slack, caller, token_secret):
    client = caller("create:agent", ("operate:secret", "secret", token_secret.id))
    response = lookup(client, kind="users")
    assert response.status == 200, response.body


@pytest.mark.parametrize("grants", [
    pytest.param(("operate:secret",), id="no-agent-create"),
    pytest.param(("create:agent", "read:secret"), id="no-secret-operate"),
])
def test_refused_callers_never_reach_slack(lookup, slack, caller, grants):
    before = AuditEvent.objects.count()
    response = lookup(caller(*grants), kind="users")
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert slack.requests == []
    assert AuditEvent.objects.count() == before + 1
    assert AuditEvent.objects.filter(kind=AuditKind.AUTHORIZATION_DENIAL).count() == 1
    assert not AuditEvent.objects.filter(action="openclaw.channels.directory.lookup").exists()


def test_operate_on_another_secret_is_not_enough(lookup, slack, caller, admin_actor, ready_namespace):
    other = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                          command=SecretCreate(name="other", value="xoxb-other"))
    response = lookup(caller("create:agent", ("operate:secret", "secret", other.id)), kind="users")
    assert response.status == 403
    assert slack.requests == []


def test_the_update_right_on_the_edited_agent_replaces_agent_create(lookup, slack, caller, ready_namespace,
                                                                    token_secret):
    agent = AgentFactory(namespace=ready_namespace)
    client = caller(("update:agent", "agent", agent.id), ("operate:secret", "secret", token_secret.id))
    assert lookup(client, kind="users").status == 403
    response = lookup(client, kind="users", agentId=agent.id)
    assert response.status == 200, response.body
    event = AuditEvent.objects.get(action="openclaw.channels.directory.lookup")
    assert event.details["agentId"] == agent.id


def test_the_update_right_on_the_edited_configuration_replaces_agent_create(lookup, slack, caller, ready_namespace,
                                                                            token_secret):
    configuration = ConfigurationFactory(namespace=ready_namespace)
    client = caller(("update:configuration", "configuration", configuration.id),
                    ("operate:secret", "secret", token_secret.id))
    assert lookup(client, kind="users", configurationId=configuration.id).status == 200
    other = ConfigurationFactory(namespace=ready_namespace)
    assert lookup(client, kind="users", configurationId=other.id).status == 403


def test_unknown_agent_or_configuration_is_404(lookup, slack):
    assert lookup(kind="users", agentId="agt_00000000-0000-4000-8000-000000000000").status == 404
    assert lookup(kind="users", configurationId="cfg_00000000-0000-4000-8000-000000000000").status == 404
    assert slack.requests == []


def test_a_secret_of_another_namespace_is_404(api, lookup, slack, admin_actor):
    other_ns = NamespaceFactory(name="elsewhere")
    foreign = secret_create(actor=admin_actor, namespace_id=other_ns.id,
                            command=SecretCreate(name="slack-bot", value=TOKEN))
    response = lookup(secretId=foreign.id, kind="users")
    assert (response.status, response.error_code) == (404, "NOT_FOUND")
    assert lookup(secretId=MISSING_SEC, kind="users").status == 404
    assert slack.requests == []


def test_a_runtime_credential_is_not_a_lookup_secret(lookup, slack, ready_namespace):
    agent = AgentFactory(namespace=ready_namespace)
    credential = runtime_credential_ensure(agent=agent, purpose="gateway-password", value_factory=lambda: TOKEN)
    assert lookup(secretId=credential.id, kind="users").status == 404
    assert slack.requests == []


def test_unauthenticated_is_401(anon_api, ready_namespace, token_secret, slack):
    response = anon_api.post(lookup_path(ready_namespace.id), {"secretId": token_secret.id, "kind": "users"})
    assert response.status == 401
    assert slack.requests == []
