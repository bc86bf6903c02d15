"""The Agent page's writes: deploy, redeploy a revision, stop, start, delete, save the
Configuration, save the smoke conversations, retry credential access. Each view calls one
``occ.services`` function with the signed-in Actor through ``attempt``
(``console.pages.agent_outcome``: a failure is known or its outcome unknown) and answers with
the part of ``console/agent/page.html`` that shows the new state. Stop, Delete and Redeploy
first answer a GET with their confirmation.

A write's toast ends with the status the header shows after it, read from the same place
(``Screen.status``): "Stop requested for Agent X. Status: Stopped." A worded guess such as "is
stopping" would contradict the pill as soon as the recorded state has moved on.

Known failures (a documented code) show their message where the button was, with their real
status (htmx swaps it: base.html's ``responseHandling``); a 403 is audited.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from console.common import CLOSE_MODAL_EVENT, ConsoleRequest, console_view, known_failure_message, trigger
from console.forms.configurations import ConfigurationForm
from console.forms.smoke import SmokeConversationsForm
from console.pages.agent_outcome import Failure, attempt
from console.pages.agent_screen import (
    DELETING_NAMES_KEY,
    DEPLOYMENT_CHANGED,
    Screen,
    confirmation,
    credentials_context,
    readable_configuration,
    respond,
)
from console.presentation import pill_for
from occ.commands.agents import AgentSecretAccess, AgentUpdate
from occ.commands.base import build
from occ.commands.configurations import ConfigurationUpdate
from occ.errors import Conflict, InvalidRequest
from occ.selectors.revisions import revision_get
from occ.services.agent_lifecycle import agent_delete, agent_start, agent_stop
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_update
from occ.services.configurations import configuration_update
from occ.services.deploy import agent_deploy, agent_redeploy

STALE_CONFIGURATION = "Someone saved this Configuration after you opened it. Reload to see their changes."


def status_toast(screen: Screen, done: str) -> str:
    """``done`` followed by the header's status pill, word for word (``screen`` read after the write)."""
    return f"{done} Status: {pill_for('runtime', screen.status).label}."


def _after_write(screen: Screen, *, success: str | None, failure: Failure | None,
                 events: tuple[str, ...] = ()) -> HttpResponse:
    """The header for htmx (with the events and the toast), the page or a redirect otherwise."""
    request = screen.request
    if failure is None and success:
        messages.success(request, success)
    if not request.htmx and failure is None:
        return redirect(screen.urls["page"])
    response = respond(screen, "agent-header", status=failure.status if failure else 200, header_failure=failure)
    for event in events:
        trigger(response, event)
    return response


@require_POST
@console_view
def deploy_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    screen = Screen.load(request, namespace_id, agent_id)
    key = request.POST.get("idempotency_key") or None
    revision, failure = attempt(request, screen.agent.id, lambda: agent_deploy(
        actor=screen.actor, idempotency_key=key, **screen.ids))
    screen = screen.reloaded()  # the header shows the state after the write
    success = status_toast(screen, f"Version v{revision.number} admitted.") if revision is not None else None
    return _after_write(screen, success=success, failure=failure,
                        events=(DEPLOYMENT_CHANGED,) if failure is None else ())


@require_http_methods(["GET", "POST"])
@console_view
def redeploy_view(request: ConsoleRequest, namespace_id: str, agent_id: str, revision_id: str) -> HttpResponse:
    """GET: the confirmation (a dialog for htmx) naming the revision. POST: redeploy it (a
    rollback): the API's ``agent_redeploy``, which admits the next revision from this one's
    snapshot and audits it; the deployment panel then follows it."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "GET":
        return confirmation(screen, "redeploy", revision_get(actor=screen.actor, revision_id=revision_id, **screen.ids))
    key = request.POST.get("idempotency_key") or None
    revision, failure = attempt(request, screen.agent.id, lambda: agent_redeploy(
        actor=screen.actor, revision_id=revision_id, idempotency_key=key, **screen.ids))
    screen = screen.reloaded()
    success = None
    if revision is not None:
        source = revision.spec.source_revision_id
        source_revision = screen.revisions_by_id([source]).get(source or "")
        number = source_revision.number if source_revision else None
        success = status_toast(screen, f"Version v{revision.number} admitted from v{number}." if number
                               else f"Version v{revision.number} admitted.")
    return _after_write(screen, success=success, failure=failure,
                        events=(CLOSE_MODAL_EVENT, DEPLOYMENT_CHANGED) if failure is None else (CLOSE_MODAL_EVENT,))


@require_http_methods(["GET", "POST"])
@console_view
def stop_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """GET: the confirmation (a dialog for htmx). POST: record desired state stopped."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "GET":
        return confirmation(screen, "stop")
    agent, failure = attempt(request, screen.agent.id, lambda: agent_stop(actor=screen.actor, **screen.ids))
    screen = screen.reloaded()
    success = status_toast(screen, f"Stop requested for Agent {screen.agent.name}.") if agent is not None else None
    return _after_write(screen, success=success, failure=failure, events=(CLOSE_MODAL_EVENT, DEPLOYMENT_CHANGED))


@require_POST
@console_view
def start_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """Record desired state running: the worker starts the Agent on its last revision; the header
    shows it starting and the Runtime panel re-reads the gateway."""
    screen = Screen.load(request, namespace_id, agent_id)
    agent, failure = attempt(request, screen.agent.id, lambda: agent_start(actor=screen.actor, **screen.ids))
    screen = screen.reloaded()
    success = status_toast(screen, f"Start requested for Agent {screen.agent.name}.") if agent is not None else None
    return _after_write(screen, success=success, failure=failure, events=(DEPLOYMENT_CHANGED,))


@require_http_methods(["GET", "POST"])
@console_view
def delete_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """GET: the confirmation. POST: the Agent becomes ``deleting``; the header then polls
    ``#agent-deletion`` until it is gone."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "GET":
        return confirmation(screen, "delete")
    agent, failure = attempt(request, screen.agent.id, lambda: agent_delete(actor=screen.actor, **screen.ids))
    screen = screen.reloaded()
    success = None
    if agent is not None:
        names = dict(request.session.get(DELETING_NAMES_KEY, {}))
        names[agent.id] = agent.name
        request.session[DELETING_NAMES_KEY] = names
        success = status_toast(screen, f"Delete requested for Agent {agent.name}.")
    return _after_write(screen, success=success, failure=failure, events=(CLOSE_MODAL_EVENT, DEPLOYMENT_CHANGED))


# --- the Configuration ----------------------------------------------------------------------------

def _stale(screen: Screen, expected: int) -> bool:
    configuration, _ = readable_configuration(screen)
    return configuration is not None and configuration.generation != expected


def _save(screen: Screen, form: ConfigurationForm) -> tuple[int, str | None, bool]:
    """Validate and save; a problem lands on the form's field. (status, success, stale)."""
    if not form.is_valid():
        return 200, None, False
    values, generation = form.cleaned_data["configuration_json"], form.cleaned_data["generation"]
    saved, failure = attempt(screen.request, screen.agent.id, lambda: configuration_update(
        actor=screen.actor, namespace_id=screen.agent.namespace_id, configuration_id=screen.agent.configuration_id,
        command=build(ConfigurationUpdate, values=values), expected_generation=generation))
    if saved is not None:
        return 200, f"Configuration saved (generation {saved.generation}). Deploy a new version to use it.", False
    assert failure is not None
    if isinstance(failure.error, InvalidRequest):
        # One field holds the whole document: every problem belongs next to it.
        form.add_error("configuration_json", known_failure_message(failure.error))
        return 200, None, False
    if isinstance(failure.error, Conflict) and _stale(screen, generation):
        form.add_error("configuration_json", STALE_CONFIGURATION)
        return failure.status, None, True
    form.add_error("configuration_json", failure.message)
    return failure.status, None, False


@require_http_methods(["GET", "POST"])
@console_view
def configuration_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """GET: the Configuration tab. POST: save the JSON guarded by the generation it was read at;
    errors stay next to it."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "GET":
        return respond(screen, "agent-configuration", tab="configuration")
    form = ConfigurationForm(request.POST)
    status, success, stale = _save(screen, form)
    if success:
        messages.success(request, success)
        if not request.htmx:
            return redirect(screen.tab_url("configuration"))
        return respond(screen.reloaded(), "agent-configuration", tab="configuration")  # at its new generation
    return respond(screen, "agent-configuration", status=status, tab="configuration", form=form, stale=stale)


# --- smoke conversations (on the Configuration tab) -------------------------------------------------

@require_POST
@console_view
def smoke_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """Save the smoke conversations and the rollback choice (``agent_update``: only them, on the
    Agent's own Configuration)."""
    screen = Screen.load(request, namespace_id, agent_id)
    form = SmokeConversationsForm(request.POST)
    if not form.is_valid():
        return respond(screen, "agent-smoke", tab="configuration", smoke_form=form)
    conversations, rollback = form.cleaned_data["conversations"], form.cleaned_data["rollback_on_failure"]
    agent, failure = attempt(request, screen.agent.id, lambda: agent_update(
        actor=screen.actor, **screen.ids, command=build(
            AgentUpdate, configuration_id=screen.agent.configuration_id, smoke_conversations=conversations,
            rollback_on_failure=rollback)))
    if agent is None:
        assert failure is not None
        form.add_error(None, known_failure_message(failure.error) if isinstance(failure.error, InvalidRequest)
                       else failure.message)
        return respond(screen, "agent-smoke", status=failure.status, tab="configuration", smoke_form=form)
    count = len(conversations)
    saved = (f"{count} smoke conversation{'s' if count != 1 else ''} saved. The next deploy checks them before "
             "it replaces the serving version." if count else "No smoke conversations saved.")
    messages.success(request, f"{saved} Automatic rollback {'on' if rollback else 'off'}.")
    if not request.htmx:
        return redirect(screen.tab_url("configuration"))
    return respond(screen.reloaded(), "agent-smoke", tab="configuration")


# --- credentials ----------------------------------------------------------------------------------

@require_POST
@console_view
def credentials_grant_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """Retry credential access: only the grant, for the Secrets the Agent's principal lacks."""
    screen = Screen.load(request, namespace_id, agent_id)
    before = credentials_context(screen)
    used = ([before["harness"]] if before["harness"] else []) + before["bindings"]
    wanted = before["missing"] or sorted({item["id"] for item in used})
    failure = None
    if wanted:
        _, failure = attempt(request, screen.agent.id, lambda: agent_secret_access_grant(
            actor=screen.actor, namespace_id=screen.agent.namespace_id, agent_id=screen.agent.id,
            command=build(AgentSecretAccess, secret_ids=wanted)))
        if failure is None:
            messages.success(request, "The Agent can now use its Secrets.")
    else:
        messages.info(request, "This Agent uses no Secrets.")
    if not request.htmx and failure is None:
        return redirect(screen.tab_url("credentials"))
    return respond(screen.reloaded(), "agent-credentials", status=failure.status if failure else 200,
                   tab="credentials", failure=failure)


_AGENT = "namespaces/<str:namespace_id>/agents/<str:agent_id>"

urlpatterns = [
    path(f"{_AGENT}/deploy", deploy_view, name="agent-deploy"),
    path(f"{_AGENT}/revisions/<str:revision_id>/redeploy", redeploy_view, name="agent-revision-redeploy"),
    path(f"{_AGENT}/stop", stop_view, name="agent-stop"),
    path(f"{_AGENT}/start", start_view, name="agent-start"),
    path(f"{_AGENT}/delete", delete_view, name="agent-delete"),
    path(f"{_AGENT}/configuration", configuration_view, name="agent-configuration"),
    path(f"{_AGENT}/smoke", smoke_view, name="agent-smoke"),
    path(f"{_AGENT}/credentials/grant", credentials_grant_view, name="agent-credentials-grant"),
]
