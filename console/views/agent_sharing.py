"""Share this Agent on the Agent page (its Sharing tab): share with a person or a service
principal at a level, revoke a direct share. Each is one call of ``occ.services.agent_sharing``
(audited there); a refusal of the form lands on its field, anything else is the console's error."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_POST

from console.common import ConsoleRequest, console_view
from console.forms.sharing import LEVEL_CHOICES, ShareForm
from console.pages.agent_screen import Screen, respond
from occ.commands.iam import AgentShare
from occ.errors import InvalidRequest
from occ.services.agent_sharing import agent_share, agent_unshare

LEVEL_WORDS = dict(LEVEL_CHOICES)


def _answer(screen: Screen, form: ShareForm | None = None) -> HttpResponse:
    if form is None and not screen.request.htmx:
        return redirect(screen.tab_url("sharing"))
    return respond(screen.reloaded() if form is None else screen, "agent-sharing", tab="sharing", form=form)


@require_POST
@console_view
def share_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    screen = Screen.load(request, namespace_id, agent_id)
    form = ShareForm(request.POST)
    form.is_valid()
    try:
        binding = agent_share(actor=screen.actor, namespace_id=namespace_id, agent_id=agent_id,
                              command=form.command())
    except InvalidRequest as exc:
        form.refuse(exc, AgentShare)
        return _answer(screen, form)
    level = LEVEL_WORDS.get(form.cleaned_data.get("level") or "", "")
    messages.success(request, f"{binding.principal.name}: {level.lower()} with {screen.agent.name}.")
    return _answer(screen)


@require_POST
@console_view
def revoke_view(request: ConsoleRequest, namespace_id: str, agent_id: str, binding_id: str) -> HttpResponse:
    screen = Screen.load(request, namespace_id, agent_id)
    principal = agent_unshare(actor=screen.actor, namespace_id=namespace_id, agent_id=agent_id,
                              binding_id=binding_id)
    messages.success(request, f"{principal.name} no longer has this Agent shared with them.")
    return _answer(screen)


_AGENT = "namespaces/<str:namespace_id>/agents/<str:agent_id>"

urlpatterns = [
    path(f"{_AGENT}/shares", share_view, name="agent-share"),
    path(f"{_AGENT}/shares/<str:binding_id>/revoke", revoke_view, name="agent-share-revoke"),
]
