"""Save the Agent's repository access (the Configuration tab's Repository access section): one
``agent_update`` of only its bindings, on its own Configuration. An invalid form re-renders as
the section with its errors (200); a refusal of the API's rules as the section with the message."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_POST

from console.common import ConsoleRequest, console_view, known_failure_message
from console.forms.repositories import RepositoryAccessForm
from console.pages.agent_outcome import attempt
from console.pages.agent_repositories import repository_choices
from console.pages.agent_screen import Screen, respond
from occ.commands.agents import AgentUpdate
from occ.commands.base import build
from occ.documents.repositories import RepositoryBinding
from occ.errors import InvalidRequest
from occ.models import Agent
from occ.services.agents import agent_update

PARTIAL = "agent-repositories"


@require_POST
@console_view
def repositories_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    screen = Screen.load(request, namespace_id, agent_id)
    choices, unavailable = repository_choices(screen)
    form = RepositoryAccessForm.posted(request.POST, choices)
    if unavailable is not None or not form.is_valid():
        return respond(screen, PARTIAL, tab="configuration", repositories_form=form,
                       repositories_unavailable=unavailable)
    bindings = form.cleaned_data["bindings"]
    agent, failure = attempt(request, screen.agent.id, lambda: screen_update(screen, bindings))
    if agent is None:
        assert failure is not None
        form.add_error(None, known_failure_message(failure.error) if isinstance(failure.error, InvalidRequest)
                       else failure.message)
        return respond(screen, PARTIAL, status=failure.status, tab="configuration", repositories_form=form)
    count = len(bindings)
    messages.success(request, f"Repository access saved: {count} repositor{'ies' if count != 1 else 'y'}. "
                              "The next deploy gives the Agent this access.")
    if not request.htmx:
        return redirect(screen.tab_url("configuration"))
    return respond(screen.reloaded(), PARTIAL, tab="configuration")


def screen_update(screen: Screen, bindings: list[dict[str, str]]) -> Agent:
    # The bindings as stored documents: the command reads them as the API sends them.
    documents = [RepositoryBinding.model_validate(binding).document() for binding in bindings]
    return agent_update(actor=screen.actor, **screen.ids, command=build(
        AgentUpdate, configuration_id=screen.agent.configuration_id, repository_bindings=documents))


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/repositories", repositories_view,
         name="agent-repositories"),
]
