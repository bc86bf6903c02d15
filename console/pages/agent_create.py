"""The Create Agent page model: the coupling rules (a control that changed changes the choices
and names the sections to render again), the provisioning progress as the page shows it, and
the context the page's templates read (``form_context``; the view's docstring lists it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError
from django.forms.utils import ErrorDict
from django.urls import reverse

from console.common import ConsoleRequest, current, error_summary
from console.forms.agent_choices import (
    AUTH_EXISTING,
    AUTH_NEW_KEY,
    AUTH_TOKEN,
    MODE_LIST,
    MODE_MANUAL,
    PROVIDERS,
    WORKSPACE_FILES,
    AgentChoices,
    configuration_edited,
    new_request_id,
    regenerate_configuration,
)
from console.forms.slack import APP_BINDING_FIELD, BOT_BINDING_FIELD, STATE_FIELD, SlackDraft, staged_draft
from console.pages.plugin_picker import picker_context
from occ.errors import OccError
from occ.models import ProvisioningStatus, Secret
from occ.openclaw.slack import APP_ENV, BOT_ENV
from occ.selectors.secrets import model_key_secret_find, model_key_secret_name, secret_list
from occ.services.plugin_discovery import installation_plugin_capabilities
from occ.services.provisioning import ProvisioningState

PAGE = "console/agents/create/page.html"


# --- coupling rules -----------------------------------------------------------------------------

# The sections a change re-renders (SECTION_TEMPLATES names the fragment of each).
# A control's own section is never among them: it may already hold a newer choice.
BASE_URL, AUTH, CREDENTIAL, MODEL, CHANNELS, CONFIGURATION, STATE, FEEDBACK, ACTIONS, PROGRESS, OUTCOME = (
    "base_url", "auth", "credential", "model", "channels", "configuration", "state", "feedback", "actions",
    "progress", "outcome")
CHANGES = frozenset({"provider", "base_url", "auth_choice", "model", "manual_model", "list_model", "reset",
                     "new_request", "remove_slack", "configuration_json"})


def _clear_credential(form: AgentChoices) -> set[str]:
    """Never carry a key to another provider or method: typed key, picked and saved Secret go.
    A saved Secret is the request's (found by its requestId), so it goes with a new request."""
    form.api_key = ""
    form.model_secret_id = ""
    if not form.saved_secret_id:
        return set()
    form.saved_secret_id = ""
    form.request_id = new_request_id()
    return {STATE, FEEDBACK, OUTCOME}


def _sync_configuration(form: AgentChoices, *, force: bool = False) -> set[str]:
    if force or not configuration_edited(form):
        regenerate_configuration(form)
        return {CONFIGURATION, STATE}
    return {CONFIGURATION}


def apply_change(form: AgentChoices, changed: str) -> set[str]:
    """Apply the rule for one changed control; return the sections to render again."""
    if form.credential_lock and changed in {"provider", "auth_choice"}:
        return set()  # the Preset's credential stays (the controls are not offered)
    if changed == "provider":
        renewed = _clear_credential(form)
        if form.auth_choice == AUTH_TOKEN and not form.offers_token:
            form.auth_choice = AUTH_NEW_KEY
        form.discovered = []
        form.model = form.model_manual = ""
        form.model_mode = MODE_MANUAL if form.is_compatible else MODE_LIST
        if not form.is_compatible:
            form.base_url = ""
        return {BASE_URL, AUTH, CREDENTIAL, MODEL} | renewed | _sync_configuration(form)
    if changed == "auth_choice":
        renewed = _clear_credential(form)
        form.discovered = []
        return {CREDENTIAL, MODEL} | renewed
    if changed == "manual_model":
        form.model_mode = MODE_MANUAL
        form.model_manual = form.model_manual or form.model
        return {MODEL} | _sync_configuration(form)
    if changed == "list_model":
        if not form.is_compatible:
            form.model_mode = MODE_LIST
        return {MODEL} | _sync_configuration(form)
    if changed in {"base_url", "model"}:
        return _sync_configuration(form)
    if changed == "reset":
        return _sync_configuration(form, force=True)
    if changed == "new_request":
        form.request_id = new_request_id()
        return {STATE, FEEDBACK, OUTCOME, PROGRESS, ACTIONS}
    if changed == "remove_slack":
        form.remove_slack()
        return {CHANNELS, CONFIGURATION}
    if changed == "configuration_json":  # the card follows the JSON (Slack deleted or written by hand)
        return {CHANNELS}
    return set()


SECTION_TEMPLATES = {  # render order of out-of-band sections
    FEEDBACK: f"{PAGE}#submit-feedback",
    BASE_URL: f"{PAGE}#base-url-field",
    AUTH: f"{PAGE}#auth-choice",
    CREDENTIAL: f"{PAGE}#credential-section",
    MODEL: f"{PAGE}#model-field",
    CHANNELS: "console/components/slack_card.html",
    CONFIGURATION: f"{PAGE}#configuration-json-field",
    STATE: f"{PAGE}#create-agent-state",
    OUTCOME: f"{PAGE}#outcome-unknown",
    ACTIONS: f"{PAGE}#form-actions",
    PROGRESS: f"{PAGE}#provisioning-progress",
}


# --- the page's context -----------------------------------------------------------------------

PHASE_STEPS = {
    "admitted": "Creating the Configuration and the Agent",
    "configuration": "Preparing runtime credentials",
    "transport": "Deploying the first revision",
    "handoff": "Handing off the first revision",
}
DIFFERENT_PLAN = ("This request ID was already used for a request with different settings, so it was not "
                  "sent again. Start a new request to create the Agent with the current settings.")


def configuration_field_context(configuration_json: str, *, errors: list[str] | None = None,
                                edited: bool = False, oob: bool = False) -> dict[str, Any]:
    """The context of the ``#configuration-json-field`` partial (for the Slack modal's Apply too)."""
    return {"configuration_json": configuration_json, "configuration_errors": errors or [],
            "configuration_edited": edited, "oob": oob}


@dataclass
class Feedback:
    """The form-level message block (``#submit-feedback``)."""

    different_plan: bool = False


@dataclass(frozen=True)
class Progress:
    """The progress region's content for one provisioning state."""

    work_id: str
    request_id: str
    text: str
    detail: str = ""
    error: dict[str, str] | None = None
    polling: bool = False
    retryable: bool = False
    new_request: bool = False
    agent_url: str = ""
    notice: str = ""


def progress_of(state: ProvisioningState, namespace_id: str, *, notice: str = "") -> Progress:
    row = state.row
    step = PHASE_STEPS.get(row.completed_phase, "")

    def shown(text: str, **fields: Any) -> Progress:
        return Progress(work_id=row.work_id, request_id=row.request_id, notice=notice, text=text, **fields)

    if state.status == ProvisioningStatus.SUCCEEDED and state.agent_id:
        return shown("Provisioning finished. Opening Agent details…",
                     agent_url=reverse("console:agent", args=[namespace_id, state.agent_id]))
    if state.status == ProvisioningStatus.FAILED:
        cancelled = state.error is not None and state.error.get("code") == "PROVISIONING_CANCELLED"
        return shown("Provisioning was cancelled." if cancelled else "Provisioning failed.",
                     error=state.error, retryable=state.retryable, new_request=not state.retryable)
    if state.status == ProvisioningStatus.RUNNING or row.completed_phase != "admitted":
        return shown("Provisioning Agent…", detail=f"Step: {step}." if step else "", polling=True)
    return shown("Provisioning queued…", detail="Waiting for a worker to start.", polling=True)


def request_secret(request: ConsoleRequest, request_id: str) -> Secret | None:
    """The Secret an attempt of ``request_id`` saved the typed key as (None: none, or unreadable)."""
    console = current(request)
    try:
        return model_key_secret_find(actor=console.actor, namespace_id=console.namespace_id, request_id=request_id)
    except (OccError, DatabaseError):
        return None


def saved_secret(request: ConsoleRequest, form: AgentChoices) -> Secret | None:
    if form.auth_choice != AUTH_NEW_KEY:
        return None
    secret = request_secret(request, form.request_id)
    form.saved_secret_id = secret.id if secret else ""
    return secret


def _secret_choices(request: ConsoleRequest, form: AgentChoices) -> tuple[list[Secret], str]:
    if form.auth_choice != AUTH_EXISTING:
        return [], ""
    console = current(request)
    try:
        return secret_list(actor=console.actor, namespace_id=console.namespace_id), ""
    except (OccError, DatabaseError):
        return [], "Secrets unavailable. Reload the page before choosing one."


def _field_ids(form: AgentChoices) -> dict[str, str]:
    """The form's fields in page order, each with the element its summary entry jumps to."""
    return {
        "name": "agent-name", "base_url": "provider-base-url", "api_key": "model-api-key",
        "model_secret_id": "model-secret",
        "model": "agent-model-manual" if form.model_mode == MODE_MANUAL else "agent-model",
        "channels": "channels-error", "plugins": "plugin-selections", "configuration_json": "configuration-json",
        **{fld: element_id for _, fld, element_id in WORKSPACE_FILES},
    }


def staged_slack(form: AgentChoices) -> SlackDraft | None:
    """The Channels card's Slack settings, while the Configuration JSON enables Slack."""
    if not form.slack_in_configuration:
        return None
    return staged_draft({STATE_FIELD: form.slack_state, BOT_BINDING_FIELD: form.secret_bindings.get(BOT_ENV, ""),
                         APP_BINDING_FIELD: form.secret_bindings.get(APP_ENV, "")})


def slack_card_context(form: AgentChoices) -> dict[str, Any]:
    """What ``console/components/slack_card.html`` reads: ``slack`` (the staged settings) and
    ``slack_in_json`` (the JSON enables Slack without settings staged by the card)."""
    slack = staged_slack(form)
    return {"slack": slack, "slack_in_json": slack is None and form.slack_in_configuration}


def form_context(request: ConsoleRequest, form: AgentChoices, *, errors: ErrorDict | None = None,
                 **extra: Any) -> dict[str, Any]:
    errors = errors if errors is not None else ErrorDict()
    messages_of = {name: [str(message) for message in found] for name, found in errors.items()}
    secrets, secrets_error = _secret_choices(request, form)
    context: dict[str, Any] = {
        "nav": "agents",
        "namespace": current(request).namespace,
        "form": form,
        "errors": errors,
        "form_errors": errors.get("__all__", []),
        "error_summary": error_summary(messages_of, _field_ids(form), fallback_id="submit-feedback"),
        "providers": list(PROVIDERS.items()),
        "secrets": secrets,
        "secrets_error": secrets_error,
        "saved_secret": saved_secret(request, form),
        "model_key_secret_name": model_key_secret_name(form.name),
        "secret_bindings": form.secret_bindings,
        "slack_bindings": form.slack_bindings,
        **slack_card_context(form),
        "workspace_fields": [
            {"name": name, "field": fld, "id": element_id, "value": form.files.get(name, ""),
             "errors": errors.get(fld, [])}
            for name, fld, element_id in WORKSPACE_FILES
        ],
        "advanced_open": any(k in errors for k in ("configuration_json", *[f for _, f, _ in WORKSPACE_FILES])),
        "progress": None,
        "outcome_unknown": False,
        "feedback": Feedback(),
        "different_plan_message": DIFFERENT_PLAN,
        "discovery_error": "",
        "discovery_count": None,
        "focus": "",
        **picker_context(current(request).namespace_id, form.plugins_json,
                         capabilities=installation_plugin_capabilities(), secrets=secrets,
                         plugin_approvers=form.plugin_approvers),
        **configuration_field_context(form.configuration_json, errors=messages_of.get("configuration_json"),
                                      edited=configuration_edited(form)),
    }
    context.update(extra)
    return context
