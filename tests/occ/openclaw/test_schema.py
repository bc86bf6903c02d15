"""The pinned runtime's config schema, checked in process (no runtime needed here; the
comparison with the real runtime is in test_schema_runtime.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from occ.errors import InvalidRequest
from occ.openclaw import document, render, slack
from occ.openclaw.schema import (
    check_schema,
    input_view,
    pinned_version,
    read_committed_schema,
    schema_path,
    schema_problems,
)
from occ.openclaw.validation import check_configuration_values
from occ.runtime import OPENCLAW_PACKAGE, Runtime

BOGUS = {"agents": {"defaults": {"bogusKey": 1}}}
SECRET_LOOKING = "sk-live-canary-8c1f"


def problems(values: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(InvalidRequest) as exc:
        check_configuration_values(values)
    return [(d.path, d.code, exc.value.message) for d in exc.value.details]


def test_one_committed_schema_for_the_pinned_version():
    assert pinned_version() == Runtime.pinned(Runtime.default().openclaw_project, OPENCLAW_PACKAGE)
    assert [p.name for p in schema_path().parent.glob("*.json")] == [f"openclaw-{pinned_version()}.schema.json"]
    schema = read_committed_schema()
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert schema["additionalProperties"] is False


def test_the_committed_schema_is_valid_draft_07_with_ecmascript_patterns():
    check_schema(read_committed_schema())


def test_the_issue_document_is_refused_at_the_key_with_the_runtimes_message():
    assert problems(BOGUS) == [("/values/agents/defaults/bogusKey", "UNKNOWN_FIELD",
                                'OpenClaw refuses agents.defaults.bogusKey: Unrecognized key: "bogusKey"')]


@pytest.mark.parametrize(("values", "path", "code", "message"), [
    pytest.param({"agents": {"defaults": {"skipBootstrap": "yes"}}}, "/values/agents/defaults/skipBootstrap",
                 "INVALID_TYPE", "Invalid input: expected boolean, received string", id="type"),
    pytest.param({"agents": {"defaults": {"modelSelectionScope": "x"}}},
                 "/values/agents/defaults/modelSelectionScope", "INVALID_VALUE",
                 'Invalid option: expected one of "session"|"agent"|"global"', id="enum"),
    pytest.param({"agents": {"defaults": {"model": {"primary": 5}}}}, "/values/agents/defaults/model/primary",
                 "INVALID_TYPE", "Invalid input: expected string, received number", id="into-the-matching-branch"),
    pytest.param({"agents": {"defaults": {"model": 5}}}, "/values/agents/defaults/model", "INVALID_VALUE",
                 "Invalid input", id="no-branch-matches"),
    pytest.param({"models": {"providers": {"x": {"baseUrl": "http://a", "models": [{"name": "m"}]}}}},
                 "/values/models/providers/x/models/0/id", "REQUIRED",
                 "Invalid input: expected string, received undefined", id="required"),
    pytest.param({"meta": {"migrations": {"modelPolicyAllowlist": False}}},
                 "/values/meta/migrations/modelPolicyAllowlist", "INVALID_VALUE", "Invalid input: expected true",
                 id="const"),
    pytest.param({"channels": {"slack": {"dmPolicy": "nope"}}}, "/values/channels/slack/dmPolicy", "INVALID_VALUE",
                 'Invalid option: expected one of "pairing"|"allowlist"|"open"|"disabled"', id="channel"),
])
def test_refusals_carry_the_pointer_and_the_runtimes_wording(values, path, code, message):
    assert problems(values) == [(path, code, f"OpenClaw refuses {path.removeprefix('/values/').replace('/', '.')}: "
                                             f"{message}")]


def test_every_offending_key_gets_its_pointer():
    found = problems({"agents": {"defaults": {"bogusKey": 1, "other": 2}}, "nope": True})
    assert {(path, code) for path, code, _ in found} == {
        ("/values/agents/defaults/bogusKey", "UNKNOWN_FIELD"), ("/values/agents/defaults/other", "UNKNOWN_FIELD"),
        ("/values/nope", "UNKNOWN_FIELD")}
    assert found[0][2].startswith("The configuration has 3 problems")


def test_occs_own_rule_is_not_repeated_by_the_schema():
    # gateway.port is the driver's (OCC's rule); the schema would also refuse the string.
    assert [p[:2] for p in problems({"gateway": {"port": "x"}})] == [("/values/gateway/port", "INVALID_VALUE")]


def test_messages_never_quote_a_value():
    values = {"agents": {"defaults": {"skipBootstrap": SECRET_LOOKING, "modelSelectionScope": SECRET_LOOKING,
                                      "model": {"primary": 5, "fallbacks": SECRET_LOOKING}}},
              "gateway": {"controlUi": {"basePath": [SECRET_LOOKING]}}}
    with pytest.raises(InvalidRequest) as exc:
        check_configuration_values(values)
    assert SECRET_LOOKING not in json.dumps([exc.value.message, [d.as_wire() for d in exc.value.details]])
    assert SECRET_LOOKING not in json.dumps([p.message for p in schema_problems(values)])


def test_a_defaulted_key_may_be_left_out():
    """The export lists defaulted keys as required (it describes the parsed config); the runtime
    accepts a Slack channel without ``dmPolicy``, ``groupPolicy``, ``mode`` …"""
    exported = read_committed_schema()["properties"]["channels"]["properties"]["slack"]
    assert "dmPolicy" in exported["required"]
    view = input_view(exported)
    assert isinstance(view, dict)
    assert "dmPolicy" not in view["required"]
    check_configuration_values({"channels": {"slack": {"enabled": True}}})


@pytest.mark.parametrize(("name", "refused"), [
    pytest.param("ok", False, id="plain"), pytest.param(" ok", True, id="leading-space"),
    # JavaScript's ``$`` does not match before a final newline (Python's ``re`` would).
    pytest.param("ok\n", True, id="final-newline"), pytest.param("x" * 65, True, id="too-long"),
])
def test_patterns_are_ecmascript_also_inside_a_channel_plugins_schema(name, refused):
    """``\\p{Cs}`` is a JavaScript Unicode property that Python's ``re`` cannot compile; the
    Feishu plugin's schema (which declares draft 07 again) uses it."""
    values = {"channels": {"feishu": {"stickerSets": {"set": {"sticker": [name]}}}}}
    found = schema_problems(values)
    assert [p.location for p in found] == ([("channels", "feishu", "stickerSets", "set", "sticker", 0)]
                                           if refused else [])


# --- what OCC writes is what the runtime accepts ------------------------------------------------


@pytest.mark.parametrize("values", [
    pytest.param(document.agent_template(provider="openai", model="gpt-5"), id="template-openai"),
    pytest.param(document.agent_template(provider="anthropic", model=""), id="template-anthropic-no-model"),
    pytest.param(document.agent_template(provider=document.COMPATIBLE_PROVIDER_ID, model="llama",
                                         base_url="http://127.0.0.1:11434/v1"), id="template-compatible"),
    pytest.param(slack.merge_slack_settings(document.agent_template(provider="openai", model="gpt-5"),
                                            slack.SlackSettings(channel_ids=("C0123ABCD",), require_mention=True,
                                                                channel_user_ids=("U0123ABCD",),
                                                                dm_policy="allowlist", dm_user_ids=("U0123ABCD",))),
                 id="slack-merged"),
    pytest.param(slack.merge_slack_settings({}, slack.SlackSettings(channel_ids=(), require_mention=False,
                                                                     channel_user_ids=None, dm_policy="open")),
                 id="slack-open"),
])
def test_documents_occ_writes_are_accepted_as_written_and_as_rendered(values):
    check_configuration_values(values)
    rendered = render.render_runtime_config(values, port=19000, password_env="OPENCLAW_GATEWAY_PASSWORD",
                                            workspace="/srv/agent/workspace", log_file="/srv/agent/openclaw.log",
                                            deliver_model_key=True)
    # The rendered config holds the driver-owned keys (OCC's rule refuses them from users);
    # the runtime's schema accepts the whole of it.
    assert schema_problems(rendered) == []
