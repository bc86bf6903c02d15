"""The Agent page's smoke conversations (Configuration tab, #agent-smoke): saved through
``agent_update`` and audited; a pattern that does not compile is a field error that saves nothing."""

from __future__ import annotations

import pytest

from occ.models import Agent, AuditEvent, WorkState
from tests.console.conftest import fragment_root
from tests.console.test_agent_detail import deploy, finish, html, make_world, toasts, url


@pytest.fixture
def world(ready_namespace, console_actor, fake_compute):
    return make_world(ready_namespace, console_actor)


def rows(*pairs: tuple[str, str]) -> dict[str, str]:
    data = {f"{kind}_{row}": "" for row in range(1, 6) for kind in ("prompt", "expect")}
    data["rollback_on_failure"] = "on"
    for row, (prompt, expect) in enumerate(pairs, start=1):
        data[f"prompt_{row}"], data[f"expect_{row}"] = prompt, expect
    return data


def test_the_configuration_tab_shows_the_five_rows(console, world):
    text = html(console.get(url(world.agent) + "?tab=configuration"))
    assert '<section id="agent-smoke"' in text
    assert "None saved." in text
    assert all(f'id="smoke-prompt-{row}"' in text and f'id="smoke-expect-{row}"' in text for row in range(1, 6))


def test_save_stores_them_in_order_and_audits(console, world):
    response = console.hx_post(url(world.agent, "agent-smoke"),
                               rows(("What is 2+2?", r"\b4\b"), ("", ""), ("Say hi", "(?i)hi")))
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "section#agent-smoke"
    assert "2 saved." in text
    assert 'value="\\b4\\b"' in text
    agent = Agent.objects.get(id=world.agent.id)
    assert agent.smoke_conversations == [{"prompt": "What is 2+2?", "expect": r"\b4\b"},
                                         {"prompt": "Say hi", "expect": "(?i)hi"}]
    assert toasts(response) == ["2 smoke conversations saved. The next deploy checks them before it replaces "
                                "the serving version. Automatic rollback on."]
    event = AuditEvent.objects.filter(action="openclaw.agents.update").latest("occurred_at")
    assert event.details["smokeConversationCount"] == 2
    assert "smokeConversations" in event.details["fields"]

    cleared = console.hx_post(url(world.agent, "agent-smoke"), rows())
    assert "None saved." in html(cleared)
    assert Agent.objects.get(id=world.agent.id).smoke_conversations == []
    assert toasts(cleared) == ["No smoke conversations saved. Automatic rollback on."]


def test_rollback_can_be_turned_off(console, world):
    assert 'id="smoke-rollback" name="rollback_on_failure" checked' in html(
        console.get(url(world.agent) + "?tab=configuration"))
    data = rows()
    del data["rollback_on_failure"]  # an unticked box is not sent
    response = console.hx_post(url(world.agent, "agent-smoke"), data)
    assert 'id="smoke-rollback" name="rollback_on_failure" aria-describedby' in html(response)
    assert Agent.objects.get(id=world.agent.id).rollback_on_failure is False
    assert toasts(response) == ["No smoke conversations saved. Automatic rollback off."]
    event = AuditEvent.objects.filter(action="openclaw.agents.update").latest("occurred_at")
    assert event.details["rollbackOnFailure"] is False


@pytest.mark.parametrize(("pair", "field", "message"), [
    pytest.param(("hi", "(("), "smoke-expect-1", "The pattern is not a valid regular expression", id="bad-regex"),
    pytest.param(("", "hi"), "smoke-prompt-1", "Enter the prompt sent to the new version.", id="no-prompt"),
    pytest.param(("hi", ""), "smoke-expect-1", "Enter the pattern the reply must match.", id="no-pattern"),
    pytest.param(("hi", "x" * 301), "smoke-expect-1", "at most 300 characters", id="too-long"),
])
def test_a_refused_row_is_a_field_error_and_saves_nothing(console, world, pair, field, message):
    response = console.hx_post(url(world.agent, "agent-smoke"), rows(pair))
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "section#agent-smoke"
    assert f'id="{field}-error"' in text
    assert message in text
    assert f'<a href="#{field}">' in text, "the summary links to the field"
    assert Agent.objects.get(id=world.agent.id).smoke_conversations == []


def test_without_htmx_a_save_redirects_to_the_tab(console, world):
    response = console.post(url(world.agent, "agent-smoke"), rows(("hi", "hi")))
    assert response.status_code == 302
    assert response["Location"].endswith("?tab=configuration")


# --- a failed deployment's evidence (the deployment panel) ------------------------------------------

@pytest.mark.parametrize(("code", "result_data", "shown"), [
    pytest.param("SMOKE_TEST_FAILED", {"verification": {"check": "smoke", "checks": ["config", "start", "model",
                                                                                        "smoke"],
                                                        "evidence": ["conversation 1: the reply did not match",
                                                                     "reply: <b>hello</b>"]}},
                 ["Failed check", "<code>smoke</code>", "conversation 1: the reply did not match",
                  "reply: &lt;b&gt;hello&lt;/b&gt;", "Open Configuration"], id="smoke"),
    pytest.param("RUNTIME_CRASH_LOOP", {"crashLoop": {"exitStatus": 78, "restarts": 1,
                                                      "evidence": ["Gateway failed to start"]}},
                 ["Last exit status", "<code>78</code>", "Gateway failed to start", "Open Logs"], id="crash-loop"),
    pytest.param("ROLLED_BACK", {"rollback": {"reason": "RUNTIME_CRASH_LOOP", "restoredRevisionId": "rev_x",
                                              "restoredRevision": 1},
                                 "crashLoop": {"exitStatus": None, "restarts": 2, "evidence": []}},
                 ["Rolled back because", "<code>RUNTIME_CRASH_LOOP</code>", "Serving again", "<code>v1</code>",
                  "<code>unknown</code>", "gave the Agent back to the previous version"], id="rolled-back"),
])
def test_the_deployment_panel_shows_the_evidence(console, console_actor, world, code, result_data, shown):
    revision = deploy(world, console_actor)
    finish(revision, WorkState.FAILED_PERMANENT, code, result_data)
    response = console.hx_get(url(world.agent, "agent-deployment"), {"since": "running"})
    text = html(response)
    assert fragment_root(text) == "section#deployment-activity"
    assert f"<code>{code}</code>: " in text
    for words in shown:
        assert words in text, words
