"""An Agent's smoke conversations: prompts a candidate gateway must answer as expected before
it replaces the serving one (issue 28, "verify before cutover").

Saved on the Agent, frozen into each revision's spec, and sent by the worker to the compute
driver's ``verify_candidate``. The rules that need no database live here once, for the API's
commands, the console's form and the stored document alike: at most ``SMOKE_MAX`` of them, a
prompt and a pattern of bounded size, and a pattern that compiles. Patterns are the ``regex``
module's (Python ``re`` syntax), searched in the reply with a time limit, so a pattern that
backtracks without end fails its conversation instead of holding a worker.
"""

from __future__ import annotations

from typing import Annotated

import regex
from pydantic import AfterValidator, Field

from occ.documents.base import Document

SMOKE_MAX = 5
SMOKE_PROMPT_MAX = 2000
SMOKE_PATTERN_MAX = 300
# How long one search of a reply may take (seconds), and how much of the reply it reads.
SMOKE_SEARCH_SECONDS = 1.0
SMOKE_REPLY_MAX = 20_000


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a smoke conversation's expected pattern, or ``None``."""
    if not pattern.strip():
        return "Enter the pattern the reply must match."
    if len(pattern) > SMOKE_PATTERN_MAX:
        return f"A pattern must be at most {SMOKE_PATTERN_MAX} characters."
    try:
        regex.compile(pattern)
    except regex.error as exc:
        return f"The pattern is not a valid regular expression: {exc}."
    return None


def prompt_problem(prompt: str) -> str | None:
    """Why ``prompt`` cannot be a smoke conversation's prompt, or ``None``."""
    if not prompt.strip():
        return "Enter the prompt sent to the new version."
    if len(prompt) > SMOKE_PROMPT_MAX:
        return f"A prompt must be at most {SMOKE_PROMPT_MAX} characters."
    return None


def _refuse(problem: str | None, value: str) -> str:
    if problem is not None:
        raise ValueError(problem)
    return value


class SmokeConversation(Document):
    """One prompt and the pattern its reply must match (searched, not anchored)."""

    prompt: Annotated[str, AfterValidator(lambda value: _refuse(prompt_problem(value), value))]
    expect: Annotated[str, AfterValidator(lambda value: _refuse(pattern_problem(value), value))]

    def matches(self, reply: str) -> bool:
        """Whether ``reply`` matches; a search that runs out of time does not."""
        try:
            return regex.search(self.expect, reply[:SMOKE_REPLY_MAX], timeout=SMOKE_SEARCH_SECONDS) is not None
        except (TimeoutError, regex.error):
            return False


SmokeConversations = Annotated[list[SmokeConversation], Field(max_length=SMOKE_MAX)]
