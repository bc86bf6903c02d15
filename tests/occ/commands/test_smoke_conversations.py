"""Smoke conversations on the Agent commands: at most five, bounded, and a pattern that compiles."""

from __future__ import annotations

import pytest

from occ.commands.agents import AgentUpdate
from occ.commands.base import parse
from occ.documents import SmokeConversation
from occ.errors import InvalidRequest

CFG = "cfg_00000000-0000-4000-8000-000000000000"


def update(conversations: object) -> AgentUpdate:
    return parse(AgentUpdate, {"configurationId": CFG, "smokeConversations": conversations})


@pytest.mark.parametrize(("conversations", "code", "path"), [
    pytest.param([{"prompt": "hi", "expect": "(("}], "INVALID_VALUE", "/smokeConversations/0/expect",
                 id="pattern-does-not-compile"),
    pytest.param([{"prompt": " ", "expect": "x"}], "INVALID_VALUE", "/smokeConversations/0/prompt", id="blank-prompt"),
    pytest.param([{"prompt": "hi", "expect": ""}], "INVALID_VALUE", "/smokeConversations/0/expect", id="no-pattern"),
    pytest.param([{"prompt": "x" * 2001, "expect": "x"}], "TOO_LONG", "/smokeConversations/0/prompt",
                 id="prompt-too-long"),
    pytest.param([{"prompt": "x", "expect": "x" * 301}], "TOO_LONG", "/smokeConversations/0/expect",
                 id="pattern-too-long"),
    pytest.param([{"prompt": "p", "expect": "e"}] * 6, "TOO_LONG", "/smokeConversations", id="six"),
    pytest.param([{"prompt": "p", "expect": "e", "extra": 1}], "UNKNOWN_FIELD", "/smokeConversations/0/extra",
                 id="unknown-field"),
])
def test_refused(conversations, code, path):
    with pytest.raises(InvalidRequest) as refused:
        update(conversations)
    assert [(d.code, d.path) for d in refused.value.details] == [(code, path)]


def test_five_are_accepted_and_null_clears():
    command = update([{"prompt": f"p{n}", "expect": f"e{n}"} for n in range(5)])
    assert len(command.smoke_conversations or []) == 5
    cleared = update(None)
    assert cleared.sent("smoke_conversations")
    assert cleared.smoke_conversations is None


@pytest.mark.parametrize(("expect", "reply", "matched"), [
    pytest.param(r"\b4\b", "The answer is 4.", True, id="searched"),
    pytest.param("^4$", "The answer is 4.", False, id="anchored"),
    pytest.param("(?i)HELLO", "hello there", True, id="flags"),
    pytest.param(r"(a+)+$", "a" * 40 + "b", False, id="backtracking-times-out"),
])
def test_a_reply_matches_by_search_within_a_time_limit(expect, reply, matched):
    assert SmokeConversation(prompt="p", expect=expect).matches(reply) is matched
