"""Create Agent: one page whose sections the server re-renders (HTMX). Its forms
(``console.forms.agent_create``) read and judge what is posted and build the commands, its page
model (``console.pages.agent_create``) holds the coupling rules and the context; the views here
call the services and render.

URLs (all under ``namespaces/<namespace_id>/agents/new``):

- ``console:agent-new``        GET   the page (``#create-agent-form``; the form fragment with HX-Request)
- ``console:agent-new-form``   POST  coupling: ``changed`` names the control; answers the changed
                                     sections as out-of-band fragments (``hx-swap="none"``)
- ``console:agent-new-models`` POST  model discovery; answers ``#model-field``
- ``console:agent-new-secret`` GET   the "Create new Secret" ``<dialog data-modal>``;
                               POST  ``secret_create``, then ``#credential-section`` with the new
                                     Secret selected (``HX-Retarget``) and ``occ:close-modal``
- ``console:agent-new-submit`` POST  ``action`` = provision (Create Agent) | draft (Save as draft);
                                     answers the whole form (refused: each problem on its field)

The provisioning progress that follows Create Agent, its retry and "Check status" are
``console.views.agent_provisioning``'s.

Template context of the form (``templates/console/agents/create/``; the Channels card
``console/components/slack_card.html`` is included inside ``#create-agent-form`` with the same context):

- ``namespace``        the Namespace (``namespace.id`` for URLs)
- ``form``             ``console.forms.agent_choices.AgentChoices`` (what ``AgentForm`` parsed): ``form.name``,
                       ``form.provider``,
                       ``form.configuration_json`` (the current JSON text), ``form.secret_bindings``
                       (``{ENV: secret id}`` from the posted ``secret_binding__<ENV>`` fields)
- ``secret_bindings``  = ``form.secret_bindings``; ``slack_bindings``: its ``SLACK_*`` part, which
                       the card renders itself as hidden ``secret_binding__SLACK_*`` inputs (this
                       form renders only the other bindings, in ``#create-agent-state``)
- ``slack``            the card's staged Slack settings (``console.pages.agent_create.staged_slack``),
                       None unless the Configuration JSON enables Slack (the JSON is the one source
                       of the page's Slack state; ``slack_in_json``: enabled there by hand)
- ``errors``           ``AgentSubmitForm.errors`` (``{field: [messages]}``); ``errors.channels``
                       (the bindings field) is shown under the card, ``errors.plugins`` under the picker
- ``configuration_json``, ``configuration_errors``, ``configuration_edited``,
  ``oob``: what the ``#configuration-json-field`` partial reads (see ``configuration_field_context``)
- ``progress``, ``outcome_unknown``, ``feedback``: submit outcomes
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db import DatabaseError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget

from console.common import (
    CLOSE_MODAL_EVENT,
    ConsoleRequest,
    console_view,
    current,
    is_known_failure,
    redirect_or_hx,
    render_page,
    trigger,
)
from console.forms.agent_choices import (
    AUTH_EXISTING,
    AUTH_NEW_KEY,
    AUTH_TOKEN,
    COMPATIBLE,
    DEFAULT_PROVIDER,
    DISCOVERED_MAX,
    MODE_LIST,
    MODE_MANUAL,
    PROVIDERS,
    AgentChoices,
    credential_secret_name,
)
from console.forms.agent_create import AgentForm, AgentSubmitForm, ModelSecretForm
from console.pages.agent_create import (
    AUTH,
    CHANGES,
    CREDENTIAL,
    PAGE,
    SECTION_TEMPLATES,
    Feedback,
    apply_change,
    form_context,
    progress_of,
    request_secret,
    saved_secret,
)
from console.pages.refusals import CREATE_AGENT_REFUSED
from occ.commands.agents import AgentDraftCreate
from occ.commands.base import Command, build
from occ.commands.common import SecretRef
from occ.commands.model_discovery import ModelDiscovery
from occ.commands.provisioning import ProvisionCommand, ProvisionWithModelKey
from occ.commands.secrets import SecretCreate
from occ.errors import Conflict, InvalidRequest, OccError
from occ.models import AgentProvisioningWork, Secret
from occ.selectors.permissions import may_provision
from occ.selectors.provisioning import agent_named, provisioning_for_request
from occ.services.agent_drafts import agent_draft_create
from occ.services.model_discovery import models_discover
from occ.services.model_key_provisioning import model_key_secret_ensure, provision_admit_with_model_key
from occ.services.provisioning import (
    provision_admit,
    provisioning_state,
)
from occ.services.secrets import DUPLICATE_NAME, secret_create

T = "console/agents/create/"
STALE_SUMMARY = '<div id="error-summary" hx-swap-oob="delete"></div>'

DISCOVERY_MESSAGES = {
    "MODEL_DISCOVERY_CREDENTIALS_REJECTED": ("The provider did not accept this key. Check the key or the Secret, "
                                             "or enter the model ID manually."),
    "MODEL_DISCOVERY_RATE_LIMITED": ("The provider is limiting requests for this key. Try again in a minute, "
                                     "or enter the model ID manually."),
    "MODEL_DISCOVERY_UNAVAILABLE": ("The provider's model list could not be reached. Try again shortly, "
                                    "or enter the model ID manually."),
    "MODEL_DISCOVERY_INVALID_RESPONSE": ("The provider answered with a model list we cannot use. Try again later, "
                                         "or enter the model ID manually."),
    "MODEL_DISCOVERY_UNSUPPORTED_PROVIDER": ("Model discovery is not available for this provider here. "
                                             "Enter the model ID manually."),
}
DISCOVERY_FALLBACK = "Models could not be listed. Try again, or enter the model ID manually."
DISCOVERY_NEEDS_KEY = "Enter an API key or choose a Secret, then discover models."
DISCOVERY_COMPATIBLE = "Discovery is not available for OpenAI-compatible endpoints. Enter the model ID."

def render_form(request: ConsoleRequest, form: AgentChoices, **kwargs: Any) -> HttpResponse:
    """The whole form (HTMX) or the whole page; always 200: errors are part of the form."""
    form.api_key = ""  # a typed key is never rendered back
    return render_page(request, PAGE, form_context(request, form, **kwargs), partial="create-agent-form")


def render_sections(request: ConsoleRequest, form: AgentChoices, sections: set[str], **kwargs: Any) -> HttpResponse:
    """The changed sections, each as an out-of-band fragment, in page order."""
    form.api_key = ""
    context = form_context(request, form, **kwargs)
    context["oob"] = True
    html = "".join(render_to_string(template, context, request=request)
                   for key, template in SECTION_TEMPLATES.items() if key in sections)
    # A changed control makes the last submit's summary stale: it goes (each field keeps its error).
    html += STALE_SUMMARY
    return HttpResponse(html)


# --- the page and its coupling --------------------------------------------------------------------


@require_GET
@console_view
def agent_new(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    console = current(request)
    if not may_provision(console.actor, console.namespace_id):
        # No form the server would refuse: why, instead (the submit refuses all the same).
        return render(request, PAGE, {"nav": "agents", "namespace": console.namespace,
                                      "create_refused": CREATE_AGENT_REFUSED})
    return render_form(request, AgentChoices.initial())


@require_POST
@console_view
def agent_new_form(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """Apply the coupling rule of the control that changed; answer what it changed."""
    form = AgentForm.choices_of(request.POST)
    changed = request.POST.get("changed", "")
    if changed not in CHANGES:
        return render_form(request, form)
    saved = saved_secret(request, form)
    sections = apply_change(form, changed)
    if changed == "new_request" and saved is not None:
        # The key the last request saved stays chosen, as an existing Secret: a new request
        # never saves it twice.
        form.auth_choice, form.model_secret_id = AUTH_EXISTING, saved.id
        sections |= {AUTH, CREDENTIAL}
    if not request.htmx:
        return render_form(request, form)
    focus = "agent-model-manual" if changed == "manual_model" else ("agent-model" if changed == "list_model" else "")
    return render_sections(request, form, sections, focus=focus)


@require_POST
@console_view
def agent_new_models(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """List the models the key (typed, or a Secret's) can use; the key is never echoed."""
    console = current(request)
    form = AgentForm.choices_of(request.POST)
    saved_secret(request, form)  # a key this request saved already is discovered with
    api_key, form.api_key = form.api_key, ""
    credential: dict[str, Any] = {}
    if form.credential_secret_id:
        credential["secret_ref"] = SecretRef.to(console.namespace_id, form.credential_secret_id)
    elif form.auth_choice in (AUTH_NEW_KEY, AUTH_TOKEN) and api_key:
        credential["api_key"] = api_key
    if form.auth_choice == AUTH_TOKEN:
        credential["auth_method"] = "codex_pat"
    error = ""
    if not form.can_discover:
        error = DISCOVERY_COMPATIBLE
    elif not credential:
        error = DISCOVERY_NEEDS_KEY
    else:
        try:
            found = models_discover(actor=console.actor, namespace_id=console.namespace_id,
                                    command=build(ModelDiscovery, provider=form.provider, **credential))
        except OccError as exc:
            # A token's refusals are ours and speak of the token; a key's speak of the key.
            told = isinstance(exc, InvalidRequest) or is_known_failure(exc)
            if form.auth_choice == AUTH_TOKEN and told:
                error = exc.message
            else:
                error = DISCOVERY_MESSAGES.get(exc.code, exc.message if told else DISCOVERY_FALLBACK)
        else:
            form.discovered = [(m.id, m.display_name or m.id) for m in found.models][:DISCOVERED_MAX]
            form.model_mode = MODE_LIST
    extra: dict[str, Any] = {"discovery_error": error, "discovery_count": None if error else len(form.discovered)}
    if not request.htmx:
        return render_form(request, form, **extra)
    return render(request, f"{PAGE}#model-field", form_context(request, form, **extra))


# --- the Create new Secret modal ----------------------------------------------------------------


def _secret_modal_context(request: ConsoleRequest, form: ModelSecretForm, *, unknown: bool = False) -> dict[str, Any]:
    """The dialog's context: the name as typed, the provider (a valid one), never the value."""
    provider = form.cleaned_data.get("provider") if form.is_bound else form.initial.get("provider")
    return {"namespace": current(request).namespace, "nav": "agents", "errors": form.errors,
            "form_errors": form.non_field_errors(), "unknown": unknown,
            "secret_name": form["secret_name"].value() or "", "provider": provider or DEFAULT_PROVIDER}


@require_http_methods(["GET", "POST"])
@console_view
def agent_new_secret(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    if request.method == "GET":
        provider = request.GET.get("provider", DEFAULT_PROVIDER)
        form = ModelSecretForm(initial={
            "secret_name": credential_secret_name(request.GET.get("name", "").strip()[:200]),
            "provider": provider if provider in PROVIDERS else DEFAULT_PROVIDER})
        return render(request, f"{PAGE}#secret-modal" if request.htmx else T + "secret_page.html",
                      _secret_modal_context(request, form))
    return _create_secret(request)


def _create_secret(request: ConsoleRequest) -> HttpResponse:
    console = current(request)
    form = ModelSecretForm(request.POST)
    unknown = False
    if form.is_valid():
        try:
            secret = secret_create(actor=console.actor, namespace_id=console.namespace_id, command=form.command())
        except (OccError, DatabaseError) as exc:
            if not (isinstance(exc, OccError) and is_known_failure(exc)):
                unknown = True
            elif isinstance(exc, Conflict) and exc.message == DUPLICATE_NAME:
                form.add_error("secret_name", "A Secret with this name already exists. Choose another name, or pick "
                                              "that Secret from the list.")
            else:
                form.refuse(exc, SecretCreate)
        else:
            return _secret_created(request, secret, form.cleaned_data["provider"])
    context = _secret_modal_context(request, form, unknown=unknown)
    return render(request, f"{PAGE}#secret-modal-form" if request.htmx else T + "secret_page.html", context)


def _secret_created(request: ConsoleRequest, secret: Secret, provider: str) -> HttpResponse:
    messages.success(request, f"Secret “{secret.name}” created and selected.")
    if not request.htmx:
        return redirect("console:agent-new", current(request).namespace_id)
    form = AgentChoices(provider=provider, auth_choice=AUTH_EXISTING, model_secret_id=secret.id,
                     model_mode=MODE_MANUAL if provider == COMPATIBLE else MODE_LIST)
    response = render(request, f"{PAGE}#credential-section", form_context(request, form))
    return trigger(reswap(retarget(response, "#credential-section"), "outerHTML"), CLOSE_MODAL_EVENT)


# --- submit ------------------------------------------------------------------------------------


@require_POST
@console_view
def agent_new_submit(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    saved = request_secret(request, request.POST.get("request_id", ""))
    form = AgentSubmitForm(request.POST, saved_secret_id=saved.id if saved else "")
    action = request.POST.get("action", "provision")
    if form.is_valid():
        _check_name_free(request, form)
    if form.errors:
        return render_form(request, form.choices, errors=form.errors)
    if action == "draft":
        return _save_draft(request, form)
    return _provision(request, form)


def _check_name_free(request: ConsoleRequest, form: AgentSubmitForm) -> None:
    """Refuse a taken name before a typed key is saved as a Secret (the services check again)."""
    console = current(request)
    try:
        taken = agent_named(actor=console.actor, namespace_id=console.namespace_id, name=form.choices.name)
    except (OccError, DatabaseError):
        return
    if taken is not None:
        form.add_error("name", "An Agent with this name already exists in the Namespace. Choose another name.")


def _unknown(request: ConsoleRequest, form: AgentSubmitForm) -> HttpResponse:
    """Never resubmit by itself: say so, show the client's requestId, offer Check status."""
    return render_form(request, form.choices, outcome_unknown=True)


def _refused(request: ConsoleRequest, form: AgentSubmitForm, exc: OccError, command: type[Command]) -> HttpResponse:
    """A service's refusal of ``command``, each detail on the field that filled its place (our message)."""
    form.refuse(exc, command)
    return render_form(request, form.choices, errors=form.errors)


def _model_secret_id(request: ConsoleRequest, form: AgentSubmitForm) -> str:
    """For a draft: the chosen Secret's id, or the Secret of this request's typed key (saved
    now, or found where an earlier attempt saved it)."""
    choices = form.choices
    if choices.auth_choice == AUTH_EXISTING:
        return choices.model_secret_id
    console = current(request)
    return model_key_secret_ensure(actor=console.actor, namespace_id=console.namespace_id,
                                   request_id=choices.request_id, agent_name=choices.name,
                                   value=form.cleaned_data["api_key"] or None).id


def _admit(request: ConsoleRequest, command: ProvisionCommand | ProvisionWithModelKey) -> AgentProvisioningWork:
    console = current(request)
    if isinstance(command, ProvisionCommand):
        work, _created = provision_admit(actor=console.actor, namespace_id=console.namespace_id, command=command)
        return work
    work, _created, _secret = provision_admit_with_model_key(
        actor=console.actor, namespace_id=console.namespace_id, command=command)
    return work


def _provision(request: ConsoleRequest, form: AgentSubmitForm) -> HttpResponse:
    """Create the model Secret (a typed key), then admit: one service; a retry of the same
    request finds the Secret by its request id."""
    console = current(request)
    choices = form.choices
    command = form.provision_command(namespace_id=console.namespace_id)
    try:
        state = provisioning_state(_admit(request, command))
    except (OccError, DatabaseError) as exc:
        if not (isinstance(exc, OccError) and is_known_failure(exc)):
            return _unknown(request, form)
        if isinstance(exc, Conflict) and exc.code == Conflict.code and _request_was_used(request, choices):
            return render_form(request, choices, feedback=Feedback(different_plan=True))
        return _refused(request, form, exc, type(command))
    return render_form(request, choices, progress=progress_of(state, console.namespace_id))


def _request_was_used(request: ConsoleRequest, form: AgentChoices) -> bool:
    console = current(request)
    try:
        return provisioning_for_request(actor=console.actor, namespace_id=console.namespace_id,
                                        request_id=form.request_id) is not None
    except (OccError, DatabaseError):
        return False


def _save_draft(request: ConsoleRequest, form: AgentSubmitForm) -> HttpResponse:
    """Configuration, stopped Agent and its secret access: one service, all or nothing (after
    the typed key's Secret, found again by request id on a retry)."""
    console = current(request)
    try:
        command = form.draft_command(namespace_id=console.namespace_id, model_secret_id=_model_secret_id(request, form))
        agent = agent_draft_create(actor=console.actor, namespace_id=console.namespace_id, command=command)
    except (OccError, DatabaseError) as exc:
        if isinstance(exc, OccError) and is_known_failure(exc):
            return _refused(request, form, exc, AgentDraftCreate)
        return _unknown(request, form)
    messages.success(request, f"Agent “{form.choices.name}” saved as a draft. Deploy it from its page.")
    return redirect_or_hx(request, reverse("console:agent", args=[console.namespace_id, agent.id]))


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/new", agent_new, name="agent-new"),
    path("namespaces/<str:namespace_id>/agents/new/form", agent_new_form, name="agent-new-form"),
    path("namespaces/<str:namespace_id>/agents/new/models", agent_new_models, name="agent-new-models"),
    path("namespaces/<str:namespace_id>/agents/new/secret", agent_new_secret, name="agent-new-secret"),
    path("namespaces/<str:namespace_id>/agents/new/submit", agent_new_submit, name="agent-new-submit"),
]
