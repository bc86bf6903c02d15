"""Repository access (the Agent page's Configuration tab): the GitHub repositories the Agent may
reach and the access profile of each. Rows of a repository and a profile; an empty row is none.
The choices are the RepositoryDriver's options; the API's rules (16 at most, each once) apply."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from occ.commands.repositories import REPOSITORY_BINDINGS_MAX
from occ.documents.repositories import PROFILE_LABELS, PROFILES, RepositoryBinding

SPARE_ROWS = 3


def repository_field(row: int) -> str:
    return f"repository_{row}"


def profile_field(row: int) -> str:
    return f"profile_{row}"


class RepositoryAccessForm(forms.Form):
    """``cleaned_data["bindings"]``: the filled rows as ``{repository_ref, profile}``, in order."""

    def __init__(self, *args: Any, choices: Sequence[str], rows: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.row_count = max(1, min(rows, REPOSITORY_BINDINGS_MAX))
        repository_choices = [("", "No repository"), *((ref, ref) for ref in choices)]
        profile_choices = [(profile, f"{PROFILE_LABELS[profile]} ({profile})") for profile in PROFILES]
        for row in range(1, self.row_count + 1):
            self.fields[repository_field(row)] = forms.ChoiceField(
                required=False, label=f"Repository {row}", choices=repository_choices)
            self.fields[profile_field(row)] = forms.ChoiceField(
                required=False, label=f"Access {row}", choices=profile_choices, initial="git-read")

    @classmethod
    def of(cls, bindings: Sequence[RepositoryBinding], choices: Sequence[str]) -> RepositoryAccessForm:
        """The form as the Agent's saved bindings fill it, with spare empty rows."""
        known = [*choices, *(b.repository_ref for b in bindings if b.repository_ref not in choices)]
        initial: dict[str, str] = {}
        for row, binding in enumerate(bindings, start=1):
            initial[repository_field(row)] = binding.repository_ref
            initial[profile_field(row)] = binding.profile
        return cls(initial=initial, choices=known, rows=len(bindings) + SPARE_ROWS)

    @classmethod
    def posted(cls, data: Any, choices: Sequence[str]) -> RepositoryAccessForm:
        rows = sum(1 for name in data if name.startswith("repository_"))
        return cls(data, choices=choices, rows=rows)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        bindings: list[dict[str, str]] = []
        seen: set[str] = set()
        for row in range(1, self.row_count + 1):
            ref = cleaned.get(repository_field(row)) or ""
            if not ref:
                continue
            if ref in seen:
                self.add_error(repository_field(row), "Each repository can be bound once; remove this row.")
            seen.add(ref)
            bindings.append({"repository_ref": ref, "profile": cleaned.get(profile_field(row)) or "git-read"})
        cleaned["bindings"] = bindings
        return cleaned

    def rows(self) -> list[dict[str, Any]]:
        ids = self.field_ids()
        return [{"number": row, "repository": self[repository_field(row)], "profile": self[profile_field(row)],
                 "repository_id": ids[repository_field(row)], "profile_id": ids[profile_field(row)]}
                for row in range(1, self.row_count + 1)]

    def field_ids(self) -> dict[str, str]:
        return {name: f"repositories-{name.replace('_', '-')}" for row in range(1, self.row_count + 1)
                for name in (repository_field(row), profile_field(row))}
