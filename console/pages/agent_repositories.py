"""The Agent page's Repository access section: the saved bindings, the choices the repository
driver offers for editing this Agent, and why they cannot be changed (no permission, no driver,
GitHub unavailable: the saved bindings stay shown)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from console.common import error_summary
from console.forms.repositories import RepositoryAccessForm
from console.pages.refusals import agent_refusal
from occ.documents.repositories import PROFILE_LABELS, bindings_from_stored
from occ.errors import OccError
from occ.services.repositories import repository_options

if TYPE_CHECKING:
    from console.pages.agent_screen import Screen


def repository_choices(screen: Screen) -> tuple[list[str], str | None]:
    """The references this Agent may bind, or why none can be offered now."""
    try:
        options = repository_options(actor=screen.actor, **screen.ids)
    except OccError as exc:
        return [], exc.message
    return [option.repository_ref for option in options], None


def repositories_context(screen: Screen, form: RepositoryAccessForm | None = None,
                         unavailable: str | None = None) -> dict[str, Any]:
    bindings = bindings_from_stored(screen.agent.repository_bindings)
    why_not = agent_refusal(screen.may, ("update",))
    choices: list[str] = []
    if not why_not and form is None:
        choices, unavailable = repository_choices(screen)
    form = form or RepositoryAccessForm.of(bindings, choices)
    return {
        "saved": [{"ref": b.repository_ref, "profile": b.profile, "label": PROFILE_LABELS[b.profile]}
                  for b in bindings],
        "form": form, "unavailable": unavailable, "why_not": why_not,
        "summary": error_summary(form.errors, form.field_ids(), fallback_id="repositories-repository-1"),
    }
