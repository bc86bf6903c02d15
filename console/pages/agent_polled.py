"""The Agent page's parts that poll or re-read themselves (header, deployment activity, deletion
progress, Runtime panel, log follower): their Screen, or the way back to the Agents list once the
Agent is gone, shared by the views that serve them."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.urls import reverse

from console.common import ConsoleRequest, redirect_or_hx
from console.pages.agent_outcome import clear_outcome_unknown
from console.pages.agent_screen import DELETING_NAMES_KEY, Screen
from occ.errors import NotFound


def load_polled(request: ConsoleRequest, namespace_id: str, agent_id: str) -> Screen | HttpResponse:
    """The Screen for a part of the page that polls or re-reads itself (header, deployment activity,
    deletion progress, Runtime panel, log follower) or, once the Agent no longer exists (deleted,
    maybe by someone else), back to the Agents list: never a fragment that fails every few seconds."""
    try:
        return Screen.load(request, namespace_id, agent_id)
    except NotFound:
        return _gone(request, namespace_id, agent_id)


def _gone(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    names = dict(request.session.get(DELETING_NAMES_KEY, {}))
    name = names.pop(agent_id, None)
    request.session[DELETING_NAMES_KEY] = names
    clear_outcome_unknown(request, agent_id)
    messages.success(request, f"Agent {name} deleted." if name else "The Agent no longer exists.")
    return redirect_or_hx(request, reverse("console:agents", args=[namespace_id]))
