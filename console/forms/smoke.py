"""The Agent page's safe-deploy settings (Configuration tab): whether a failed cutover is rolled
back, and up to five smoke conversations, each a prompt and the regular expression its reply must
match. A row left empty is no conversation; the rules are the document's own
(``occ.documents.smoke``), so the form says what the API would."""

from __future__ import annotations

from typing import Any

from django import forms

from occ.documents import SMOKE_MAX, SmokeConversation, pattern_problem, prompt_problem
from occ.documents.smoke import SMOKE_PATTERN_MAX, SMOKE_PROMPT_MAX

ROWS = tuple(range(1, SMOKE_MAX + 1))


def prompt_field(row: int) -> str:
    return f"prompt_{row}"


def expect_field(row: int) -> str:
    return f"expect_{row}"


class SmokeConversationsForm(forms.Form):
    """Five optional rows; ``cleaned_data["conversations"]`` holds the filled ones, in order. And
    whether a new version that does not come up after cutover is rolled back (the opt-out)."""

    rollback_on_failure = forms.BooleanField(required=False, label="Roll back automatically")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for row in ROWS:
            # max_length a little above the rule's, so an over-long value gets the rule's message.
            self.fields[prompt_field(row)] = forms.CharField(
                required=False, strip=False, label=f"Prompt {row}", max_length=SMOKE_PROMPT_MAX * 2,
                widget=forms.Textarea(attrs={"rows": 2}))
            self.fields[expect_field(row)] = forms.CharField(
                required=False, strip=False, label=f"Expected pattern {row}", max_length=SMOKE_PATTERN_MAX * 2)

    @classmethod
    def of(cls, conversations: list[SmokeConversation], *, rollback_on_failure: bool) -> SmokeConversationsForm:
        """The form as the Agent's saved conversations and rollback choice fill it."""
        initial: dict[str, Any] = {"rollback_on_failure": rollback_on_failure}
        for row, conversation in zip(ROWS, conversations, strict=False):
            initial[prompt_field(row)] = conversation.prompt
            initial[expect_field(row)] = conversation.expect
        return cls(initial=initial)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        conversations: list[dict[str, str]] = []
        for row in ROWS:
            prompt, expect = cleaned.get(prompt_field(row)) or "", cleaned.get(expect_field(row)) or ""
            if not prompt.strip() and not expect.strip():
                continue
            problems = {prompt_field(row): prompt_problem(prompt), expect_field(row): pattern_problem(expect)}
            for name, problem in problems.items():
                if problem is not None:
                    self.add_error(name, problem)
            conversations.append({"prompt": prompt, "expect": expect})
        cleaned["conversations"] = conversations
        return cleaned

    def rows(self) -> list[dict[str, Any]]:
        """Each row's number, its two bound fields and their element ids, for the template."""
        ids = self.field_ids()
        return [{"number": row, "prompt": self[prompt_field(row)], "expect": self[expect_field(row)],
                 "prompt_id": ids[prompt_field(row)], "expect_id": ids[expect_field(row)]} for row in ROWS]

    def field_ids(self) -> dict[str, str]:
        """Field name to element id (the error summary's links)."""
        return {name: f"smoke-{name.replace('_', '-')}" for row in ROWS
                for name in (prompt_field(row), expect_field(row))}
