"""The model of the Agent page's Sharing tab (``console.views.agent_sharing`` serves its writes;
``console.pages.agent_screen`` puts it in the page's context): who has access to the Agent and
why, and the Share form. Both need ``administer:agent``; the reason stands in for them otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from django.urls import reverse

from console.forms.sharing import LEVEL_CHOICES, ShareForm
from console.pages.refusals import agent_share_refusal
from occ.models import Agent, PrincipalKind
from occ.selectors.agent_sharing import access_entries, share_subjects


class Screen(Protocol):
    """The part of ``console.pages.agent_screen.Screen`` this model reads."""

    agent: Agent

    @property
    def may(self) -> Mapping[str, bool]: ...


def sharing_context(screen: Screen, *, form: ShareForm | None = None) -> dict[str, Any]:
    why_not = agent_share_refusal(screen.may)
    if why_not:
        return {"why_not": why_not}
    form = form or ShareForm()
    subjects = share_subjects(screen.agent)
    return {"entries": access_entries(screen.agent), "levels": LEVEL_CHOICES,
            "people": [p for p in subjects if p.kind == PrincipalKind.HUMAN],
            "services": [p for p in subjects if p.kind == PrincipalKind.SERVICE],
            "chosen": {"subject": form.data.get("subject", ""), "level": form.data.get("level", "chat")},
            "errors": form.errors if form.is_bound else {},
            "share_url": reverse("console:agent-share", args=[screen.agent.namespace_id, screen.agent.id])}
